// RUN: aotk-opt %s --split-input-file -p aotk-hoist-scan-matmuls | filecheck %s

// An RNN step: x_t @ W + h @ U. The input projection x_t @ W becomes one matmul of the
// whole sequence before the loop, whose steps the body reads; the sequence of x is no
// longer read and is dropped. h @ U depends on the carry and stays in the loop.
// CHECK-LABEL: func.func @rnn(
// CHECK-NEXT:    %[[P:.*]] = "aotk.matmul"(%xs, %w) : (tensor<5x2x3xf32>, tensor<3x4xf32>) -> tensor<5x2x4xf32>
// CHECK-NEXT:    %h, %hs = aotk.scan seqs(%[[XW:.*]] = %[[P]]) carries(%[[S:.*]] = %h0) : (tensor<5x2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<5x2x4xf32>) {
// CHECK-NEXT:      %[[SU:.*]] = "aotk.matmul"(%[[S]], %u)
// CHECK-NEXT:      %[[Z:.*]] = "aotk.add"(%[[XW]], %[[SU]])
// CHECK-NEXT:      %[[N:.*]] = "aotk.tanh"(%[[Z]])
// CHECK-NEXT:      aotk.yield %[[N]], %[[N]]
// CHECK-NEXT:    }
func.func @rnn(%xs: tensor<5x2x3xf32>, %h0: tensor<2x4xf32>, %w: tensor<3x4xf32>, %u: tensor<4x4xf32>) -> (tensor<2x4xf32>, tensor<5x2x4xf32>) {
  %h, %hs = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x2x3xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<5x2x4xf32>) {
    %xw = "aotk.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %su = "aotk.matmul"(%s, %u) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %z = "aotk.add"(%xw, %su) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %n = "aotk.tanh"(%z) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    aotk.yield %n, %n : tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.return %h, %hs : tensor<2x4xf32>, tensor<5x2x4xf32>
}

// -----

// A step read elsewhere keeps its sequence; a transposed weight is hoisted with its flag;
// a weight computed in the body, or a transposed step, stays.
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %[[P:.*]] = "aotk.matmul"(%xs, %wt) <{transpose_rhs = true}> : (tensor<?x2x3xf32>, tensor<4x3xf32>) -> tensor<?x2x4xf32>
// CHECK-NEXT:    %o, %p = aotk.scan seqs(%[[X:.*]] = %xs, %[[XW:.*]] = %[[P]]) carries()
// CHECK-NEXT:      %[[E:.*]] = "aotk.exp"(%[[X]])
// CHECK-NEXT:      %[[EW:.*]] = "aotk.matmul"(%[[X]], %[[E]]) <{transpose_lhs = true}>
// CHECK:           aotk.yield %[[XW]], %[[EW]]
func.func @kept(%xs: tensor<?x2x3xf32>, %wt: tensor<4x3xf32>) -> (tensor<?x2x4xf32>, tensor<?x3x3xf32>) {
  %o, %p = aotk.scan seqs(%x = %xs) carries() : (tensor<?x2x3xf32>) -> (tensor<?x2x4xf32>, tensor<?x3x3xf32>) {
    %xw = "aotk.matmul"(%x, %wt) <{transpose_rhs = true}> : (tensor<2x3xf32>, tensor<4x3xf32>) -> tensor<2x4xf32>
    %e = "aotk.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %ew = "aotk.matmul"(%x, %e) <{transpose_lhs = true}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
    aotk.yield %xw, %ew : tensor<2x4xf32>, tensor<3x3xf32>
  }
  func.return %o, %p : tensor<?x2x4xf32>, tensor<?x3x3xf32>
}

// -----

// A GRU step slices its recurrent weight inside the loop: the slices (and the negation
// of one, which reads only a slice) read nothing of the loop and move before it, so the
// step multiplies by values from outside. A random draw, not pure, stays.
// CHECK-LABEL: func.func @invariant(
// CHECK-NEXT:    %[[UA:.*]] = "aotk.slice"(%u) <{start = array<i64: 0, 0>
// CHECK-NEXT:    %[[UB:.*]] = "aotk.slice"(%u) <{start = array<i64: 0, 4>
// CHECK-NEXT:    %[[NB:.*]] = "aotk.neg"(%[[UB]])
// CHECK-NEXT:    %{{.*}} = aotk.scan
// CHECK-NEXT:      %{{.*}} = "aotk.matmul"(%{{.*}}, %[[UA]])
// CHECK-NEXT:      %{{.*}} = "aotk.random_uniform"
// CHECK-NEXT:      %{{.*}} = "aotk.matmul"(%{{.*}}, %[[NB]])
func.func @invariant(%xs: tensor<5x2x4xf32>, %h0: tensor<2x4xf32>, %u: tensor<4x8xf32>, %state: tensor<2xi64>) -> tensor<2x4xf32> {
  %h = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    %ua = "aotk.slice"(%u) <{start = array<i64: 0, 0>, stop = array<i64: 9223372036854775807, 4>, step = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %a = "aotk.matmul"(%s, %ua) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %noise = "aotk.random_uniform"(%state) <{shape = array<i64: 2, 4>, like_axes = array<i64: -1, -1>, minval = 0.000000e+00 : f64, maxval = 1.000000e+00 : f64, dtype = f32}> : (tensor<2xi64>) -> tensor<2x4xf32>
    %ub = "aotk.slice"(%u) <{start = array<i64: 0, 4>, stop = array<i64: 9223372036854775807, 9223372036854775807>, step = array<i64: 1, 1>}> : (tensor<4x8xf32>) -> tensor<4x4xf32>
    %nb = "aotk.neg"(%ub) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %b = "aotk.matmul"(%a, %nb) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %n = "aotk.add"(%b, %noise) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %m = "aotk.add"(%n, %x) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    aotk.yield %m : tensor<2x4xf32>
  }
  func.return %h : tensor<2x4xf32>
}
