// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A 'same' 3x3 conv of 32 channels into 64, relu, 2x2 max pooling: Winograd's
// F(2x2, 3x3). First, before any thread starts, the kernel's transform U = G g G^T of
// every input channel, 16 vectors per vector of output channels, into the workspace.
// Then threads split the blocks of up to 15 windows (in order, across rows and images) in at
// most 8 runs. Per block, the 4x4 patch under each window is read with masks (no lane in
// the padding) and transformed into 16 vectors of V; 16 products V[xi] U[xi] in
// register tiles of 5 tiles x 2 vectors (10 FMAs per input channel) write M; the output
// transform gives a window's 4 conv outputs, relu applies to each, their max is stored.
// CHECK-LABEL: func.func @winograd_relu(
// CHECK-DAG:     %[[RUNS:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[CIN:.*]] = arith.constant 32 : index
// CHECK:         %[[SCRATCH:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[CIN]] step
// CHECK-COUNT-9:   vector.load %w[
// CHECK-COUNT-16:  vector.store %{{.*}}, %[[SCRATCH]][
// CHECK-NOT:     aotk.parallel
// CHECK:         %[[SLOTS:.*]] = arith.minsi %{{.*}}, %[[RUNS]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[SLOTS]] step
// CHECK-COUNT-16:  vector.create_mask
// CHECK-COUNT-16:  vector.maskedload %x[
// CHECK-COUNT-16:  vector.store %{{.*}}, %[[SCRATCH]][
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-10:    vector.fma
// CHECK-COUNT-10:  vector.store %{{.*}}, %[[SCRATCH]][
// CHECK-COUNT-16:  vector.load %[[SCRATCH]][
// CHECK-COUNT-7:   arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:      arith.addi
// CHECK-NEXT:      vector.store %{{.*}}, %out0[
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     aotk.parallel
// CHECK:         func.return
// U (16 x 32 x 64), then 8 runs x (V and M of 15 tiles: 16 x 15 x (32 + 64), and 4
// vectors for a scalar epilogue), 4 bytes each
// CHECK-LABEL: func.func @winograd_relu_workspace_size(
// CHECK:         arith.constant 870400 : index
func.func @winograd_relu(%x: tensor<?x16x16x32xf32>, %w: tensor<3x3x32x64xf32>) -> tensor<?x8x8x64xf32> {
  %y = aotk.conv_pool %x, %w pool_window [2, 2] pool_mode max strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<?x16x16x32xf32>, tensor<3x3x32x64xf32>) -> tensor<?x8x8x64xf32> {
    %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
    %r = "aotk.maximum"(%acc, %zero) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %r : tensor<f32>
  }
  func.return %y : tensor<?x8x8x64xf32>
}
