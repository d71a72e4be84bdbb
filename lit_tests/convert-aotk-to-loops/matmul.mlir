// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// Only the contract is checked here (the loop schedule is matmul_kernel's business):
// M comes from the i64 dim argument, %x and %w are read, %out0 is written, no aotk op stays.
// CHECK-LABEL: func.func @matmul_dynamic(
// CHECK-SAME:      %x: memref<?xf32>, %w: memref<12xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64)
// CHECK-SAME:      attributes {aotk.kernel = "2,1"}
// CHECK-NOT:     "aotk.
// CHECK:         arith.index_cast %dim0 : i64 to index
// CHECK:         scf.for
// CHECK-DAG:     memref.load %x[
// CHECK-DAG:     memref.load %w[
// CHECK-DAG:     {{memref|vector}}.store %{{.*}}, %out0[
// CHECK-NOT:     "aotk.
// CHECK-LABEL: func.func @matmul_dynamic_workspace_size(%{{.*}}: i64) -> i64
func.func @matmul_dynamic(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>) -> tensor<?x3xf32> {
  %y = "aotk.matmul"(%x, %w) : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}
