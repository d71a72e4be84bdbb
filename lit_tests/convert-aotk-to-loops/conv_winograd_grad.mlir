// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// The kernel gradient of a 'same' 3x3 conv of 32 channels into 64, by Winograd's
// F(4x4, 3x3): where each thread gets 4 blocks of 45 tiles, threads split the blocks in at
// most 4 runs, each with its own 36 x 32 x 64 sums, zeroed first; with fewer, one run
// whose steps are parallel loops (nested in a run's task, they run on its thread; the
// zeroing of 73728 floats is too small to share). Per block: the input transform V (a loop over the
// patch's 6 rows of 6 masked loads of x, then one over the 6 columns), the gradient's
// transform Q = A e A^T (a loop over the 4 rows of 4 masked loads of g, then one over
// the 6 columns), then per point the sums += V^T Q in register tiles of 5 input channels x
// 2 vectors (10 FMAs a tile), and for the 2 channels left over, tiles of 2 x 2 (4 FMAs):
// the tiles add, so none overlaps another. Last, per channel pair, the runs' 36 sums are
// added and G^T S G stores the 9 taps.
// CHECK-LABEL: func.func @winograd_grad(
// CHECK-DAG:     %[[RUNS:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[BLOCK:.*]] = arith.constant 45 : index
// CHECK-DAG:     %[[SUMS:.*]] = arith.constant 73728 : index
// CHECK:         %[[SCRATCH:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK:         %[[WIDTH:.*]] = func.call @aotk_parallel_width()
// CHECK:         %[[ENOUGH:.*]] = arith.cmpi sge, %[[BLOCKS:.*]], %{{.*}} : index
// CHECK:         %[[MOST:.*]] = arith.minsi %[[BLOCKS]], %[[RUNS]] : index
// CHECK:         %[[SLOTS:.*]] = arith.select %[[ENOUGH]], %[[MOST]], %{{.*}} : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[SLOTS]] step
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[SUMS]] step
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        vector.store %{{.*}}, %[[SCRATCH]][
// CHECK-NEXT:      }{{$}}
// CHECK:           arith.muli %{{.*}}, %[[BLOCK]] : index
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK-NOT:       vector.maskedload %x[
// CHECK:           scf.for
// CHECK-COUNT-6:     vector.load %[[SCRATCH]][
// CHECK:           } {aotk.parallel =
// CHECK:           scf.for
// CHECK-COUNT-4:     vector.maskedload %g[
// CHECK-NOT:         vector.maskedload %g[
// CHECK:           scf.for
// CHECK-COUNT-4:     vector.load %[[SCRATCH]][
// CHECK:           } {aotk.parallel =
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-10:    vector.fma
// CHECK-NOT:         vector.fma
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){3}vector<8xf32>}}) {
// CHECK-COUNT-4:     vector.fma
// CHECK-NOT:         vector.fma
// CHECK:           } {aotk.parallel = 4 : i64}
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){35}vector<8xf32>}}) {
// CHECK-COUNT-9:   vector.store %{{.*}}, %out0[
// CHECK:         } {aotk.parallel = {{[0-9]+}} : i64}
// CHECK:         func.return
// 4 runs x (V and Q of 45 tiles: 36 x 45 x (32 + 64), and sums of 36 x 32 x 64), 4 bytes
// CHECK-LABEL: func.func @winograd_grad_workspace_size(
// CHECK:         arith.constant 3667968 : index

// 160 channels into 192: F(4x4, 3x3)'s sums (36 x 160 x 192 floats a run) would pass 4
// L2s, so matmuls add to one set of them (`conv_winograd_grad_gemm`): the sums zeroed
// (threads splitting the points); per block of up to 128 tiles, the input transform (6
// masked loads of x a row of a patch) and the output gradient's (4 masked loads of g a
// row of its tile), threads splitting the tiles; then a loop over the 36 points, each a
// call of the packed matmul micro-kernel with A transposed, adding to the sums; at the
// end, G^T S G for each channel pair, from the 36 sums of one run.
// CHECK-LABEL: func.func @wide(
// CHECK:         } {aotk.parallel =
// CHECK:         scf.for
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK-NOT:       vector.maskedload %x[
// CHECK-COUNT-4:   vector.maskedload %g[
// CHECK-NOT:       vector.maskedload %g[
// CHECK:           } {aotk.parallel =
// CHECK-NEXT:      scf.for
// CHECK-NOT:         scf.for
// CHECK:             func.call @aotk_uk_matmul_float32_packed_ta_update(
// CHECK:         scf.for {{.*}} -> ({{(vector<8xf32>, ){35}vector<8xf32>}}) {
// CHECK:         } {aotk.parallel =
// CHECK:         func.return
func.func @winograd_grad(%g: tensor<?x16x16x64xf32>, %x: tensor<?x16x16x32xf32>, %w: tensor<3x3x32x64xf32>) -> tensor<3x3x32x64xf32> {
  %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x16x16x64xf32>, tensor<?x16x16x32xf32>, tensor<3x3x32x64xf32>) -> tensor<3x3x32x64xf32>
  func.return %dw : tensor<3x3x32x64xf32>
}

func.func @wide(%g: tensor<?x16x16x192xf32>, %x: tensor<?x16x16x160xf32>, %w: tensor<3x3x160x192xf32>) -> tensor<3x3x160x192xf32> {
  %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x16x16x192xf32>, tensor<?x16x16x160xf32>, tensor<3x3x160x192xf32>) -> tensor<3x3x160x192xf32>
  func.return %dw : tensor<3x3x160x192xf32>
}
