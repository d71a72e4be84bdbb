// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A 'same' 3x3 conv of 32 channels into 64, relu, 2x2 max pooling: Winograd's
// F(4x4, 3x3), whose 4x4 tile of conv outputs holds 2x2 windows. First the kernel's
// transform U = G g G^T of every input channel, 36 vectors per vector of output
// channels, into the workspace, the input channels split across threads: a loop over
// the kernel's 3 rows (3 loads of w each), then one over the 6 columns of g G^T. Then
// threads split the blocks of up to 15 tiles (in order, across rows and images) in at
// most 8 runs. Per block, the 6x6 patch under each tile is read a row at a time with
// masks (no lane in the padding) and transformed into 36 vectors of V; 36 products
// V[xi] U[xi] in register tiles of 5 tiles x 2 vectors (10 FMAs per input channel)
// write M; the output transform gives a tile's 16 conv outputs, relu applies to each,
// and each window's max is stored through the mask of its place in the pooled output.
// CHECK-LABEL: func.func @winograd_relu(
// CHECK-DAG:     %[[RUNS:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[CIN:.*]] = arith.constant 32 : index
// CHECK:         %[[SCRATCH:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[CIN]] step
// CHECK-COUNT-3:   vector.load %w[
// CHECK-NOT:       vector.load %w[
// CHECK-COUNT-6:   vector.store %{{.*}}, %[[SCRATCH]][
// CHECK:         } {aotk.parallel =
// CHECK:         %[[SLOTS:.*]] = arith.minsi %{{.*}}, %[[RUNS]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[SLOTS]] step
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK-NOT:       vector.maskedload %x[
// CHECK-COUNT-6:   vector.store %{{.*}}, %[[SCRATCH]][
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-10:    vector.fma
// CHECK-COUNT-10:  vector.store %{{.*}}, %[[SCRATCH]][
// CHECK-COUNT-4:   vector.create_mask
// CHECK-COUNT-36:  vector.load %[[SCRATCH]][
// CHECK-COUNT-28:  arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-COUNT-4:   vector.maskedstore %out0[
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     aotk.parallel
// CHECK:         func.return
// U (36 x 32 x 64), then 8 runs x (V and M of 15 tiles: 36 x 15 x (32 + 64), and 16
// vectors for a scalar epilogue), 4 bytes each
// CHECK-LABEL: func.func @winograd_relu_workspace_size(
// CHECK:         arith.constant 1961984 : index

// 400 channels into 400 take matmuls (`conv_winograd.mlir`'s @wide); the output transform
// pools as in @winograd_relu: four windows a tile (12 maxima), four masked stores.
// CHECK-LABEL: func.func @wide(
// CHECK:         } {aotk.parallel =
// CHECK-COUNT-6:   vector.maskedload %x[
// CHECK:         } {aotk.parallel =
// CHECK-NEXT:    scf.for
// CHECK:           func.call @aotk_uk_matmul_float32_prepacked(
// CHECK-NEXT:    }
// CHECK-COUNT-36:  vector.load
// CHECK-COUNT-12:  arith.maximumf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-COUNT-4:   vector.maskedstore %out0[
// CHECK-NOT:       vector.maskedstore %out0[
// CHECK:         } {aotk.parallel =
// CHECK:         func.return
func.func @winograd_relu(%x: tensor<?x16x16x32xf32>, %w: tensor<3x3x32x64xf32>) -> tensor<?x8x8x64xf32> {
  %y = aotk.conv_pool %x, %w pool_window [2, 2] pool_mode max strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<?x16x16x32xf32>, tensor<3x3x32x64xf32>) -> tensor<?x8x8x64xf32> {
    %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
    %r = "aotk.maximum"(%acc, %zero) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %r : tensor<f32>
  }
  func.return %y : tensor<?x8x8x64xf32>
}

func.func @wide(%x: tensor<?x16x16x400xf32>, %w: tensor<3x3x400x400xf32>) -> tensor<?x8x8x400xf32> {
  %y = aotk.conv_pool %x, %w pool_window [2, 2] pool_mode max strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<?x16x16x400xf32>, tensor<3x3x400x400xf32>) -> tensor<?x8x8x400xf32> {
    aotk.yield %acc : tensor<f32>
  }
  func.return %y : tensor<?x8x8x400xf32>
}
