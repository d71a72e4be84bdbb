// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A matmul on a weight packed once (by the caller, `aotk.weight_packs`): fewer rows than
// a register tile (6 with AVX2 tiles) on one thread call the plain kernel on the weight;
// anything else calls the prepacked kernel on the packed copy: no scratch, nothing
// packed per call.
// The copy of a 4 x 32 weight is two slivers of 16 columns by 4 rows: 128 floats.
// CHECK-LABEL: func.func @dense(
// CHECK-SAME:      %x: memref<?xf32>, %w: memref<128xf32>, %w_packed: memref<128xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64)
// CHECK-NOT:     "aotk.
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[TILE:.*]] = arith.constant 6 : index
// CHECK-DAG:     %[[M:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK:         %[[ROWS:.*]] = arith.cmpi slt, %[[M]], %[[TILE]] : index
// CHECK-NEXT:    %[[WIDTH:.*]] = func.call @aotk_parallel_width()
// CHECK-NEXT:    %[[THREADS:.*]] = arith.index_cast %[[WIDTH]] : i64 to index
// CHECK-NEXT:    %[[ALONE:.*]] = arith.cmpi sle, %[[THREADS]], %[[ONE]] : index
// CHECK-NEXT:    %[[FEW:.*]] = arith.andi %[[ROWS]], %[[ALONE]] : i1
// CHECK:         scf.if %[[FEW]] {
// CHECK-DAG:       %[[W:.*]] = ptr_xdsl.to_ptr %w
// CHECK:           func.call @aotk_uk_matmul_float32(%{{.*}}, %{{.*}}, %[[W]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:         } else {
// CHECK-DAG:       %[[P:.*]] = ptr_xdsl.to_ptr %w_packed
// CHECK:           func.call @aotk_uk_matmul_float32_prepacked(%{{.*}}, %{{.*}}, %[[P]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK:         }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @dense_workspace_size(
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:         %[[SIZE:.*]] = arith.index_cast %[[ZERO]] : index to i64
// CHECK-NEXT:    func.return %[[SIZE]] : i64
func.func @dense(%x: tensor<?x4xf32>, %w: tensor<4x32xf32>, %w_packed: tensor<128xf32>) -> tensor<?x32xf32> {
  %y = "aotk.matmul_packed_weight"(%x, %w, %w_packed) : (tensor<?x4xf32>, tensor<4x32xf32>, tensor<128xf32>) -> tensor<?x32xf32>
  func.return %y : tensor<?x32xf32>
}
