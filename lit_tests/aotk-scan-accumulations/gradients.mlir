// RUN: aotk-opt %s --split-input-file -p aotk-scan-accumulations,dce | filecheck %s

// A backward step: the carried weight gradient g += x_t^T @ dz_t becomes one matmul of
// the whole sequences after the loop (steps and batch folded into rows), dz_t a stacked
// output; x is no longer read in the loop and leaves it. The input gradient dx, which
// nothing reads, goes with the matmul computing it.
// CHECK-LABEL: func.func @grads(
// CHECK-NEXT:    %dh, %[[DZS:.*]] = aotk.scan seqs(%h = %hs) carries(%d = %dh0) : (tensor<5x2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<5x2x4xf32>) {
// CHECK-NEXT:      %dz = "aotk.mul"(%d, %h)
// CHECK-NEXT:      %dprev = "aotk.matmul"(%dz, %u) <{transpose_rhs = true}>
// CHECK-NEXT:      aotk.yield %dprev, %dz : tensor<2x4xf32>, tensor<2x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[X:.*]] = "aotk.reshape"(%xs) <{shape = array<i64: -1, 3>}> : (tensor<5x2x3xf32>) -> tensor<10x3xf32>
// CHECK-NEXT:    %[[DZ:.*]] = "aotk.reshape"(%[[DZS]]) <{shape = array<i64: -1, 4>}> : (tensor<5x2x4xf32>) -> tensor<10x4xf32>
// CHECK-NEXT:    %[[G:.*]] = "aotk.matmul"(%[[X]], %[[DZ]]) <{transpose_lhs = true}> : (tensor<10x3xf32>, tensor<10x4xf32>) -> tensor<3x4xf32>
// CHECK-NEXT:    %gw = "aotk.add"(%gw0, %[[G]])
// CHECK-NEXT:    func.return %dh, %gw
func.func @grads(%xs: tensor<5x2x3xf32>, %hs: tensor<5x2x4xf32>, %dh0: tensor<2x4xf32>, %gw0: tensor<3x4xf32>, %u: tensor<4x4xf32>, %w: tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<3x4xf32>) {
  %dh, %gw, %dx = aotk.scan seqs(%x = %xs, %h = %hs) carries(%d = %dh0, %g = %gw0) : (tensor<5x2x3xf32>, tensor<5x2x4xf32>, tensor<2x4xf32>, tensor<3x4xf32>) -> (tensor<2x4xf32>, tensor<3x4xf32>, tensor<5x2x3xf32>) {
    %dz = "aotk.mul"(%d, %h) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %dprev = "aotk.matmul"(%dz, %u) <{transpose_rhs = true}> : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %gstep = "aotk.matmul"(%x, %dz) <{transpose_lhs = true}> : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %gnew = "aotk.add"(%g, %gstep) : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %dxs = "aotk.matmul"(%dz, %w) <{transpose_rhs = true}> : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    aotk.yield %dprev, %gnew, %dxs : tensor<2x4xf32>, tensor<3x4xf32>, tensor<2x3xf32>
  }
  func.return %dh, %gw : tensor<2x4xf32>, tensor<3x4xf32>
}

// -----

// Dynamic steps and batch fold into a dynamic row count. Kept in the loop: a sum whose
// carry the step also reads (q), and a sum of a product that is not lhs^T @ rhs (r).
// CHECK-LABEL: func.func @kept(
// CHECK-NEXT:    %a, %b, %[[E:.*]] = aotk.scan seqs(%x = %xs) carries(%q = %q0, %r = %r0) : (tensor<?x?x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<?x?x3xf32>) {
// CHECK-NEXT:      %e = "aotk.exp"(%x)
// CHECK-NEXT:      %qx = "aotk.matmul"(%x, %q)
// CHECK-NEXT:      %qq = "aotk.matmul"(%qx, %e) <{transpose_lhs = true}>
// CHECK-NEXT:      %qn = "aotk.add"(%q, %qq)
// CHECK-NEXT:      %rx = "aotk.matmul"(%r, %q)
// CHECK-NEXT:      %rn = "aotk.add"(%r, %rx)
// CHECK-NEXT:      aotk.yield %qn, %rn, %e
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[X:.*]] = "aotk.reshape"(%xs) <{shape = array<i64: -1, 3>}> : (tensor<?x?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %[[F:.*]] = "aotk.reshape"(%[[E]]) <{shape = array<i64: -1, 3>}> : (tensor<?x?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %[[G:.*]] = "aotk.matmul"(%[[X]], %[[F]]) <{transpose_lhs = true}> : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<3x3xf32>
// CHECK-NEXT:    %c = "aotk.add"(%s0, %[[G]])
func.func @kept(%xs: tensor<?x?x3xf32>, %q0: tensor<3x3xf32>, %r0: tensor<3x3xf32>, %s0: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
  %a, %b, %c = aotk.scan seqs(%x = %xs) carries(%q = %q0, %r = %r0, %s = %s0) : (tensor<?x?x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>) {
    %e = "aotk.exp"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
    %qx = "aotk.matmul"(%x, %q) : (tensor<?x3xf32>, tensor<3x3xf32>) -> tensor<?x3xf32>
    %qq = "aotk.matmul"(%qx, %e) <{transpose_lhs = true}> : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<3x3xf32>
    %qn = "aotk.add"(%q, %qq) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %rx = "aotk.matmul"(%r, %q) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %rn = "aotk.add"(%r, %rx) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %xe = "aotk.matmul"(%x, %e) <{transpose_lhs = true}> : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<3x3xf32>
    %sn = "aotk.add"(%xe, %s) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    aotk.yield %qn, %rn, %sn : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
  }
  func.return %a, %b, %c : tensor<3x3xf32>, tensor<3x3xf32>, tensor<3x3xf32>
}

// -----

// A bias gradient, b += the sum of dz_t over its rows, becomes one sum of the stacked
// dz over steps and rows after the loop. Kept: a sum over the columns (r, whose carry
// has the batch's rows), and one that keeps its axis (k).
// CHECK-LABEL: func.func @bias(
// CHECK:         %{{.*}}, %{{.*}}, %{{.*}}, %[[DZS:.*]] = aotk.scan seqs(%h = %hs) carries(%d = %dh0, %r = %gr0, %k = %gk0)
// CHECK-NOT:       axes = array<i64: 0>, keepdims = 0
// CHECK:           aotk.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[SUM:.*]] = "aotk.reduce_sum"(%[[DZS]]) <{axes = array<i64: 0, 1>, keepdims = false}> : (tensor<5x2x4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %gb = "aotk.add"(%gb0, %[[SUM]])
func.func @bias(%hs: tensor<5x2x4xf32>, %dh0: tensor<2x4xf32>, %u: tensor<4x4xf32>, %gb0: tensor<4xf32>, %gr0: tensor<2xf32>, %gk0: tensor<1x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1x4xf32>) {
  %dh, %gb, %gr, %gk = aotk.scan seqs(%h = %hs) carries(%d = %dh0, %b = %gb0, %r = %gr0, %k = %gk0) : (tensor<5x2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1x4xf32>) {
    %dz = "aotk.mul"(%d, %h) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %dprev = "aotk.matmul"(%dz, %u) <{transpose_rhs = true}> : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bstep = "aotk.reduce_sum"(%dz) <{axes = array<i64: 0>, keepdims = 0 : i64}> : (tensor<2x4xf32>) -> tensor<4xf32>
    %bnew = "aotk.add"(%b, %bstep) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %rstep = "aotk.reduce_sum"(%dz) <{axes = array<i64: 1>, keepdims = 0 : i64}> : (tensor<2x4xf32>) -> tensor<2xf32>
    %rnew = "aotk.add"(%r, %rstep) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %kstep = "aotk.reduce_sum"(%dz) <{axes = array<i64: 0>, keepdims = 1 : i64}> : (tensor<2x4xf32>) -> tensor<1x4xf32>
    %knew = "aotk.add"(%k, %kstep) : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    aotk.yield %dprev, %bnew, %rnew, %knew : tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1x4xf32>
  }
  func.return %dh, %gb, %gr, %gk : tensor<2x4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<1x4xf32>
}

// -----

// A GRU's recurrent weight gradient: g += the concatenation of two products of step
// values (the gradients of the weight's two slices). It leaves the loop as the
// concatenation of the two products summed over all steps.
// CHECK-LABEL: func.func @joined(
// CHECK:         %{{.*}}, %[[DZS:.*]], %[[ES:.*]] = aotk.scan seqs(%h = %hs) carries(%d = %dh0)
// CHECK-NOT:       "aotk.concat"
// CHECK:           aotk.yield
// CHECK-NEXT:    }
// CHECK:         %[[A:.*]] = "aotk.matmul"(%{{.*}}, %{{.*}}) <{transpose_lhs = true}> : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<4x4xf32>
// CHECK:         %[[B:.*]] = "aotk.matmul"(%{{.*}}, %{{.*}}) <{transpose_lhs = true}> : (tensor<10x4xf32>, tensor<10x2xf32>) -> tensor<4x2xf32>
// CHECK-NEXT:    %[[G:.*]] = "aotk.concat"(%[[A]], %[[B]]) <{axis = 1 : i64}> : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    %gw = "aotk.add"(%gw0, %[[G]])
func.func @joined(%hs: tensor<5x2x4xf32>, %dh0: tensor<2x4xf32>, %gw0: tensor<4x6xf32>, %v: tensor<4x2xf32>) -> (tensor<2x4xf32>, tensor<4x6xf32>) {
  %dh, %gw = aotk.scan seqs(%h = %hs) carries(%d = %dh0, %g = %gw0) : (tensor<5x2x4xf32>, tensor<2x4xf32>, tensor<4x6xf32>) -> (tensor<2x4xf32>, tensor<4x6xf32>) {
    %dz = "aotk.mul"(%d, %h) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %e = "aotk.matmul"(%dz, %v) : (tensor<2x4xf32>, tensor<4x2xf32>) -> tensor<2x2xf32>
    %ga = "aotk.matmul"(%h, %dz) <{transpose_lhs = true}> : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %gb = "aotk.matmul"(%h, %e) <{transpose_lhs = true}> : (tensor<2x4xf32>, tensor<2x2xf32>) -> tensor<4x2xf32>
    %gj = "aotk.concat"(%ga, %gb) <{axis = 1 : i64}> : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x6xf32>
    %gnew = "aotk.add"(%g, %gj) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    aotk.yield %dz, %gnew : tensor<2x4xf32>, tensor<4x6xf32>
  }
  func.return %dh, %gw : tensor<2x4xf32>, tensor<4x6xf32>
}

// -----

// Carries nobody needs go (a cotangent backpropagation accumulates for a value outside
// the steps whose gradient nobody asked for): %mc's final value is unread and no read
// value is computed from it, so it leaves with the matmul and add computing it. %d's
// final value is unread too, but the stacked %dz is computed from it; %pc's, but the
// step prints it: both stay.
// CHECK-LABEL: func.func @dead(
// CHECK-NEXT:    %dh, %p, %dzs = aotk.scan seqs(%h = %hs) carries(%d = %dh0, %pc = %p0) : (tensor<5x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<5x2x4xf32>) {
// CHECK-NEXT:      %dz = "aotk.mul"(%d, %h)
// CHECK-NEXT:      %dprev = "aotk.matmul"(%dz, %u) <{transpose_rhs = true}>
// CHECK-NEXT:      %shown = "aotk.print_tensor"(%pc)
// CHECK-NEXT:      %pnew = "aotk.add"(%shown, %h)
// CHECK-NEXT:      aotk.yield %dprev, %pnew, %dz
func.func @dead(%hs: tensor<5x2x4xf32>, %dh0: tensor<2x4xf32>, %m0: tensor<2x4xf32>, %p0: tensor<2x4xf32>, %u: tensor<4x4xf32>) -> tensor<5x2x4xf32> {
  %dh, %m, %p, %dzs = aotk.scan seqs(%h = %hs) carries(%d = %dh0, %mc = %m0, %pc = %p0) : (tensor<5x2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<5x2x4xf32>) {
    %dz = "aotk.mul"(%d, %h) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %dprev = "aotk.matmul"(%dz, %u) <{transpose_rhs = true}> : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %mstep = "aotk.matmul"(%dz, %u) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %mnew = "aotk.add"(%mc, %mstep) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %shown = "aotk.print_tensor"(%pc) <{message = "p"}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %pnew = "aotk.add"(%shown, %h) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    aotk.yield %dprev, %mnew, %pnew, %dz : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.return %dzs : tensor<5x2x4xf32>
}
