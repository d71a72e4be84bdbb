// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s
// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s --check-prefix=KERNEL

// A conv given its kernel in F(4x4, 3x3)'s points, `packed %u` (a K.function's weight it
// does not write, made once: `aotk.weight_packs`), as conv_winograd.mlir's @winograd but
// for that: no U = G g G^T at the start of the call, so one parallel loop, not two; the
// products read U from %u, not from the scratch, which is smaller by U's 36 x 32 x 64
// floats (1961984 - 294912 bytes). The code never reads the kernel itself (KERNEL): with
// 20 tiles in every call, no direct conv is built.
// CHECK-LABEL: func.func @packed(
// CHECK-SAME:      %u: memref<73728xf32>
// CHECK:         %[[SCRATCH:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NOT:     aotk.parallel
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-2:     vector.load %u[
// CHECK-COUNT-10:    vector.fma
// CHECK:           vector.store %{{.*}}, %[[SCRATCH]][
// CHECK-COUNT-16:  vector.maskedstore %out0[
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     aotk.parallel
// CHECK:         func.return
// CHECK-LABEL: func.func @packed_workspace_size(
// CHECK:         arith.constant 1667072 : index
// KERNEL-LABEL: func.func @packed(
// KERNEL-NOT:     %w[
// KERNEL:         func.return

// The same with a bias and a 2x2 max pool: a tile's four windows, pooled, stored through
// the pooled output's masks; U from %u.
// CHECK-LABEL: func.func @packed_pooled(
// CHECK-NOT:     aotk.parallel
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-2:     vector.load %u[
// CHECK-COUNT-4:   vector.maskedstore %out0[
// CHECK-NOT:       vector.maskedstore %out0[
// CHECK:         } {aotk.parallel = 2 : i64}
// KERNEL-LABEL: func.func @packed_pooled(
// KERNEL-NOT:     %w[
// KERNEL:         func.return
func.func @packed(%x: tensor<?x15x17x32xf32>, %w: tensor<3x3x32x64xf32>, %u: tensor<36x32x64xf32>) -> tensor<?x15x17x64xf32> {
  %y = aotk.conv_fused %x, %w packed %u strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<?x15x17x32xf32>, tensor<3x3x32x64xf32>, tensor<36x32x64xf32>) -> tensor<?x15x17x64xf32> {
    aotk.yield %acc : tensor<f32>
  }
  func.return %y : tensor<?x15x17x64xf32>
}

func.func @packed_pooled(%x: tensor<?x16x16x32xf32>, %w: tensor<3x3x32x64xf32>, %u: tensor<36x32x64xf32>, %b: tensor<64xf32>) -> tensor<?x8x8x64xf32> {
  %y = aotk.conv_pool %x, %w packed %u pool_window [2, 2] pool_mode max strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc, %c = %b) : (tensor<?x16x16x32xf32>, tensor<3x3x32x64xf32>, tensor<36x32x64xf32>, tensor<64xf32>) -> tensor<?x8x8x64xf32> {
    %s = "aotk.add"(%acc, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %s : tensor<f32>
  }
  func.return %y : tensor<?x8x8x64xf32>
}

// On images of any size, given U, a call of fewer tiles than a register tile's 5 rows
// runs the direct conv (on the kernel itself), not fewer than 12 as without U: made
// once, U no longer weighs on a call of few tiles. Outputs filling less than a third of
// the tiles' run it too.
// CHECK-LABEL: func.func @packed_few_tiles(
// CHECK-DAG:     %[[ROWS:.*]] = arith.constant 5 : index
// CHECK:         %[[FEW:.*]] = arith.cmpi slt, %{{.*}}, %[[ROWS]] : index
// CHECK-NEXT:    %[[OUTPUTS:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[SPARSE:.*]] = arith.cmpi slt, %[[OUTPUTS]], %{{.*}} : index
// CHECK-NEXT:    %[[DIRECT:.*]] = arith.ori %[[FEW]], %[[SPARSE]] : i1
// CHECK-NEXT:    scf.if %[[DIRECT]] {
// CHECK:             vector.load %w[
// CHECK:         } else {
// CHECK-NOT:       %w[
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK:         func.return
func.func @packed_few_tiles(%x: tensor<?x?x?x32xf32>, %w: tensor<3x3x32x64xf32>, %u: tensor<36x32x64xf32>) -> tensor<?x?x?x64xf32> {
  %y = aotk.conv_fused %x, %w packed %u strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<?x?x?x32xf32>, tensor<3x3x32x64xf32>, tensor<36x32x64xf32>) -> tensor<?x?x?x64xf32> {
    aotk.yield %acc : tensor<f32>
  }
  func.return %y : tensor<?x?x?x64xf32>
}

// Given U in the matmuls' slivers (36 points x 25 slivers x 400 x 16), the conv of 400
// channels (products by matmuls, `conv_winograd.mlir`'s @wide) makes no U: per block,
// the input transform, the prepacked matmul on each point's view of %u, the output
// transform; the workspace holds V and M alone (37793792 bytes less U's 23040000).
// CHECK-LABEL: func.func @packed_wide(
// CHECK-SAME:      %u: memref<5760000xf32>
// CHECK-NOT:     aotk.parallel
// CHECK:         scf.for
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK:           ptr_xdsl.to_ptr %u
// CHECK:           func.call @aotk_uk_matmul_float32_prepacked(
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     aotk.parallel
// CHECK:         func.return
// CHECK-LABEL: func.func @packed_wide_workspace_size(
// CHECK:         arith.constant 14753792 : index
// KERNEL-LABEL: func.func @packed_wide(
// KERNEL-NOT:     %w[
// KERNEL:         func.return
func.func @packed_wide(%x: tensor<?x15x17x400xf32>, %w: tensor<3x3x400x400xf32>, %u: tensor<36x25x400x16xf32>) -> tensor<?x15x17x400xf32> {
  %y = aotk.conv_fused %x, %w packed %u strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<?x15x17x400xf32>, tensor<3x3x400x400xf32>, tensor<36x25x400x16xf32>) -> tensor<?x15x17x400xf32> {
    aotk.yield %acc : tensor<f32>
  }
  func.return %y : tensor<?x15x17x400xf32>
}
