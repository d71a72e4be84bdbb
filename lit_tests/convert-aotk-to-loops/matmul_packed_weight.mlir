// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A matmul on a weight packed once (by the caller, `aotk.weight_packs`) calls the
// prepacked kernel on the packed copy, whatever the rows and the pool: no scratch,
// nothing packed per call, and the weight itself is not read.
// The copy of a 4 x 32 weight is two slivers of 16 columns by 4 rows: 128 floats.
// CHECK-LABEL: func.func @dense(
// CHECK-SAME:      %x: memref<?xf32>, %w: memref<128xf32>, %w_packed: memref<128xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64)
// CHECK-NOT:     "aotk.
// CHECK-NOT:     scf.if
// CHECK-NOT:     ptr_xdsl.to_ptr %w :
// CHECK:         %[[P:.*]] = ptr_xdsl.to_ptr %w_packed
// CHECK-NOT:     ptr_xdsl.to_ptr %w :
// CHECK:         func.call @aotk_uk_matmul_float32_prepacked(%{{.*}}, %{{.*}}, %[[P]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NOT:     func.call
// CHECK:         func.return
// CHECK-LABEL: func.func @dense_workspace_size(
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:         %[[SIZE:.*]] = arith.index_cast %[[ZERO]] : index to i64
// CHECK-NEXT:    func.return %[[SIZE]] : i64
func.func @dense(%x: tensor<?x4xf32>, %w: tensor<4x32xf32>, %w_packed: tensor<128xf32>) -> tensor<?x32xf32> {
  %y = "aotk.matmul_packed_weight"(%x, %w, %w_packed) : (tensor<?x4xf32>, tensor<4x32xf32>, tensor<128xf32>) -> tensor<?x32xf32>
  func.return %y : tensor<?x32xf32>
}
