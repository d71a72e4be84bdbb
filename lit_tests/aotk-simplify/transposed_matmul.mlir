// RUN: aotk-opt %s --split-input-file -p aotk-simplify,dce | filecheck %s

// The gradients of a dense layer, as autodiff writes them: g @ W^T and x^T @ g. The 2-D
// transposes fold into the matmuls, which read the operand transposed; no copy is left.
// CHECK-LABEL: func.func @dense_gradients
// CHECK-NOT:     aotk.transpose
// CHECK:         %gx = "aotk.matmul"(%g, %w) <{transpose_rhs = true}> : (tensor<?x3xf32>, tensor<4x3xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    %gw = "aotk.matmul"(%x, %g) <{transpose_lhs = true}> : (tensor<?x4xf32>, tensor<?x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %gx, %gw
func.func @dense_gradients(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>, %g: tensor<?x3xf32>) -> (tensor<?x4xf32>, tensor<4x3xf32>) {
  %wt = "aotk.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %gx = "aotk.matmul"(%g, %wt) : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
  %xt = "aotk.transpose"(%x) <{perm = array<i64: 1, 0>}> : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %gw = "aotk.matmul"(%xt, %g) : (tensor<4x?xf32>, tensor<?x3xf32>) -> tensor<4x3xf32>
  func.return %gx, %gw : tensor<?x4xf32>, tensor<4x3xf32>
}

// -----

// A transposed operand that is transposed again toggles the flag back; a transpose
// used elsewhere stays for that use.
// CHECK-LABEL: func.func @toggle_and_shared
// CHECK:         %wt = "aotk.transpose"(%w)
// CHECK:         %y = "aotk.matmul"(%x, %w) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
// CHECK:         %z = "aotk.matmul"(%v, %w) <{transpose_rhs = true}>
// CHECK:         func.return %y, %z, %wt
func.func @toggle_and_shared(%x: tensor<2x4xf32>, %w: tensor<4x3xf32>, %v: tensor<5x3xf32>) -> (tensor<2x3xf32>, tensor<5x4xf32>, tensor<3x4xf32>) {
  %wt = "aotk.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %y = "aotk.matmul"(%x, %wt) <{transpose_rhs = true}> : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  %z = "aotk.matmul"(%v, %wt) : (tensor<5x3xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  func.return %y, %z, %wt : tensor<2x3xf32>, tensor<5x4xf32>, tensor<3x4xf32>
}

// -----

// Two transposes compose into one; a transposed lhs must be a matrix, so a rank-3 lhs
// keeps its transpose.
// CHECK-LABEL: func.func @chain_and_rank3
// CHECK:         %b = "aotk.transpose"(%x) <{perm = array<i64: 2, 0, 1>}>
// CHECK-NOT:     aotk.transpose
// CHECK:         "aotk.matmul"(%b, %w) : (tensor<4x2x3xf32>, tensor<3x5xf32>)
func.func @chain_and_rank3(%x: tensor<2x3x4xf32>, %w: tensor<3x5xf32>) -> tensor<4x2x5xf32> {
  %a = "aotk.transpose"(%x) <{perm = array<i64: 1, 0, 2>}> : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = "aotk.transpose"(%a) <{perm = array<i64: 2, 1, 0>}> : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  %y = "aotk.matmul"(%b, %w) : (tensor<4x2x3xf32>, tensor<3x5xf32>) -> tensor<4x2x5xf32>
  func.return %y : tensor<4x2x5xf32>
}

// -----

// batch_dot over axes (1, 2) and its gradients: a transpose of each entry (perm 0, 2, 1)
// folds into batch_matmul's flags; another permutation stays a transpose.
// CHECK-LABEL: func.func @batched
// CHECK-NOT:     aotk.transpose
// CHECK:         %y = "aotk.batch_matmul"(%x, %w) <{transpose_lhs = true, transpose_rhs = true}> : (tensor<?x4x3xf32>, tensor<?x5x4xf32>) -> tensor<?x3x5xf32>
// CHECK-NEXT:    %gx = "aotk.batch_matmul"(%w, %g) <{transpose_lhs = true, transpose_rhs = true}> : (tensor<?x5x4xf32>, tensor<?x3x5xf32>) -> tensor<?x4x3xf32>
// CHECK-NEXT:    %p = "aotk.transpose"(%x) <{perm = array<i64: 2, 1, 0>}>
// CHECK-NEXT:    %z = "aotk.batch_matmul"(%p, %v)
// CHECK-NEXT:    func.return %y, %gx, %z
func.func @batched(%x: tensor<?x4x3xf32>, %w: tensor<?x5x4xf32>, %g: tensor<?x3x5xf32>, %v: tensor<3x2x6xf32>) -> (tensor<?x3x5xf32>, tensor<?x4x3xf32>, tensor<3x4x6xf32>) {
  %xt = "aotk.transpose"(%x) <{perm = array<i64: 0, 2, 1>}> : (tensor<?x4x3xf32>) -> tensor<?x3x4xf32>
  %wt = "aotk.transpose"(%w) <{perm = array<i64: 0, 2, 1>}> : (tensor<?x5x4xf32>) -> tensor<?x4x5xf32>
  %y = "aotk.batch_matmul"(%xt, %wt) : (tensor<?x3x4xf32>, tensor<?x4x5xf32>) -> tensor<?x3x5xf32>
  %gt = "aotk.transpose"(%g) <{perm = array<i64: 0, 2, 1>}> : (tensor<?x3x5xf32>) -> tensor<?x5x3xf32>
  %gx = "aotk.batch_matmul"(%wt, %gt) : (tensor<?x4x5xf32>, tensor<?x5x3xf32>) -> tensor<?x4x3xf32>
  %p = "aotk.transpose"(%x) <{perm = array<i64: 2, 1, 0>}> : (tensor<?x4x3xf32>) -> tensor<3x4x?xf32>
  %z = "aotk.batch_matmul"(%p, %v) : (tensor<3x4x?xf32>, tensor<3x2x6xf32>) -> tensor<3x4x6xf32>
  func.return %y, %gx, %z : tensor<?x3x5xf32>, tensor<?x4x3xf32>, tensor<3x4x6xf32>
}
