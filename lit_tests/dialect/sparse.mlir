// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the sparse ops: printed, parsed back and printed again, each op
// keeps its types.

// aotk.sparse_to_dense sums values at (nnz, rank) int64 indices into zeros shaped like
// dense_like without its last dim (0); aotk.sparse_gather reads a dense tensor there.

// CHECK-LABEL: func.func @sparse_to_dense(%idx: tensor<?x2xi64>, %v: tensor<?xf32>, %like: tensor<?x4x0xi1>, %idx3: tensor<5x3xi64>, %v3: tensor<5xi8>, %like3: tensor<2x?x3x0xi1>) -> (tensor<?x4xf32>, tensor<2x?x3xi8>) {
// CHECK-NEXT:    %y = "aotk.sparse_to_dense"(%idx, %v, %like) : (tensor<?x2xi64>, tensor<?xf32>, tensor<?x4x0xi1>) -> tensor<?x4xf32>
// CHECK-NEXT:    %z = "aotk.sparse_to_dense"(%idx3, %v3, %like3) : (tensor<5x3xi64>, tensor<5xi8>, tensor<2x?x3x0xi1>) -> tensor<2x?x3xi8>
// CHECK-NEXT:    func.return %y, %z : tensor<?x4xf32>, tensor<2x?x3xi8>
// CHECK-NEXT:  }
func.func @sparse_to_dense(%idx: tensor<?x2xi64>, %v: tensor<?xf32>, %like: tensor<?x4x0xi1>, %idx3: tensor<5x3xi64>, %v3: tensor<5xi8>, %like3: tensor<2x?x3x0xi1>) -> (tensor<?x4xf32>, tensor<2x?x3xi8>) {
  %y = "aotk.sparse_to_dense"(%idx, %v, %like) : (tensor<?x2xi64>, tensor<?xf32>, tensor<?x4x0xi1>) -> tensor<?x4xf32>
  %z = "aotk.sparse_to_dense"(%idx3, %v3, %like3) : (tensor<5x3xi64>, tensor<5xi8>, tensor<2x?x3x0xi1>) -> tensor<2x?x3xi8>
  func.return %y, %z : tensor<?x4xf32>, tensor<2x?x3xi8>
}

// CHECK-LABEL: func.func @sparse_gather(%idx: tensor<?x2xi64>, %dense: tensor<?x3xf32>, %idx1: tensor<5x1xi64>, %d1: tensor<4xi1>) -> (tensor<?xf32>, tensor<5xi1>) {
// CHECK-NEXT:    %y = "aotk.sparse_gather"(%idx, %dense) : (tensor<?x2xi64>, tensor<?x3xf32>) -> tensor<?xf32>
// CHECK-NEXT:    %z = "aotk.sparse_gather"(%idx1, %d1) : (tensor<5x1xi64>, tensor<4xi1>) -> tensor<5xi1>
// CHECK-NEXT:    func.return %y, %z : tensor<?xf32>, tensor<5xi1>
// CHECK-NEXT:  }
func.func @sparse_gather(%idx: tensor<?x2xi64>, %dense: tensor<?x3xf32>, %idx1: tensor<5x1xi64>, %d1: tensor<4xi1>) -> (tensor<?xf32>, tensor<5xi1>) {
  %y = "aotk.sparse_gather"(%idx, %dense) : (tensor<?x2xi64>, tensor<?x3xf32>) -> tensor<?xf32>
  %z = "aotk.sparse_gather"(%idx1, %d1) : (tensor<5x1xi64>, tensor<4xi1>) -> tensor<5xi1>
  func.return %y, %z : tensor<?xf32>, tensor<5xi1>
}
