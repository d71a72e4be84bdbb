// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A float matmul at the loops stage is one call to the micro-kernel that computes it
// (built once per target, see aotk/kernels), not an unrolled loop nest: pointers to C,
// A, B and the packing scratch in the workspace, then M (from the i64 dim), N and K.
// CHECK-LABEL: func.func @matmul_dynamic(
// CHECK-SAME:      %x: memref<?xf32>, %w: memref<128xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64)
// CHECK-SAME:      attributes {aotk.kernel = array<i64: 2, 1>}
// CHECK-NOT:     "aotk.
// CHECK:         %[[M:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK:         %[[AT:.*]] = ptr_xdsl.ptradd %workspace
// CHECK:         %[[SCRATCH:.*]] = ptr_xdsl.from_ptr %[[AT]]
// CHECK-DAG:     %[[C:.*]] = ptr_xdsl.to_ptr %out0
// CHECK-DAG:     %[[A:.*]] = ptr_xdsl.to_ptr %x
// CHECK-DAG:     %[[B:.*]] = ptr_xdsl.to_ptr %w
// CHECK-DAG:     %[[S:.*]] = ptr_xdsl.to_ptr %[[SCRATCH]]
// CHECK-DAG:     %[[M64:.*]] = arith.index_cast %[[M]] : index to i64
// CHECK-DAG:     %[[N:.*]] = arith.constant 32 : i64
// CHECK-DAG:     %[[K:.*]] = arith.constant 4 : i64
// CHECK:         func.call @aotk_uk_matmul_float32_packed(%[[C]], %[[A]], %[[B]], %[[S]], %[[M64]], %[[N]], %[[K]])
// CHECK-NOT:     scf.for
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func @matmul_dynamic_workspace_size(%{{.*}}: i64) -> i64
func.func @matmul_dynamic(%x: tensor<?x4xf32>, %w: tensor<4x32xf32>) -> tensor<?x32xf32> {
  %y = "aotk.matmul"(%x, %w) : (tensor<?x4xf32>, tensor<4x32xf32>) -> tensor<?x32xf32>
  func.return %y : tensor<?x32xf32>
}

// N narrower than one packed sliver (2 vectors) never packs B: no scratch, and the
// kernel without the packed path.
// CHECK-LABEL: func.func @matmul_narrow(
// CHECK:         func.call @aotk_uk_matmul_float32(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK-LABEL: func.func @matmul_narrow_workspace_size(
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
// CHECK:         %[[SIZE:.*]] = arith.index_cast %[[ZERO]] : index to i64
// CHECK-NEXT:    func.return %[[SIZE]] : i64
func.func @matmul_narrow(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>) -> tensor<?x3xf32> {
  %y = "aotk.matmul"(%x, %w) : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}

// Integer matmuls stay a plain loop nest, which LLVM vectorizes along N.
// CHECK-LABEL: func.func @matmul_int(
// CHECK-NOT:     func.call
// CHECK:         scf.for
// CHECK:           arith.muli
// CHECK:           arith.addi

// Each callee is declared once, after the functions that call it.
// CHECK-DAG:   func.func private @aotk_uk_matmul_float32_packed(!ptr_xdsl.ptr, !ptr_xdsl.ptr, !ptr_xdsl.ptr, !ptr_xdsl.ptr, i64, i64, i64)
// CHECK-DAG:   func.func private @aotk_uk_matmul_float32(!ptr_xdsl.ptr, !ptr_xdsl.ptr, !ptr_xdsl.ptr, i64, i64, i64)
// CHECK-NOT:   func.func private @aotk_uk_
func.func @matmul_int(%x: tensor<2x4xi32>, %w: tensor<4x3xi32>) -> tensor<2x3xi32> {
  %y = "aotk.matmul"(%x, %w) : (tensor<2x4xi32>, tensor<4x3xi32>) -> tensor<2x3xi32>
  func.return %y : tensor<2x3xi32>
}
