// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A 'same' 3x3 conv on 8x10 images, relu, then 2x2 max pooling: threads split (image,
// pooled row) items in at most 32 runs, each with a band of scratch in the workspace
// (2 conv rows x 10 columns x 16 channels). The conv's tiles (5 positions x 2 vectors,
// 3 channels x 10 FMAs per tap) apply relu to their accumulators and store them in the
// band; the pool starts each window at -inf, takes the max of its 2x2 vectors from the
// band, and stores one vector per 8 channels of the output. Nothing else writes the
// output, and one loop is parallel: the runs.
// CHECK-LABEL: func.func @conv_pool_relu(
// CHECK-DAG:     %[[RUNS:.*]] = arith.constant 32 : index
// CHECK-DAG:     %[[ROWS:.*]] = arith.constant 4 : index
// CHECK:         %[[BAND:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK:         %[[ITEMS:.*]] = arith.muli %{{.*}}, %[[ROWS]] : index
// CHECK:         %[[SLOTS:.*]] = arith.minsi %[[ITEMS]], %[[RUNS]] : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[SLOTS]] step
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-30:      vector.fma
// CHECK-COUNT-10:    arith.maximumf {{.*}} : vector<8xf32>
// CHECK-COUNT-10:    vector.store %{{.*}}, %[[BAND]][
// CHECK-NOT:         vector.store {{.*}} %out0
// CHECK:             arith.constant 0xff800000 : f32
// CHECK:             vector.load %[[BAND]]
// CHECK-NEXT:        arith.addi
// CHECK-NEXT:        vector.load %[[BAND]]
// CHECK-NEXT:        arith.maximumf {{.*}} : vector<8xf32>
// CHECK-NEXT:        arith.maximumf {{.*}} : vector<8xf32>
// CHECK:             vector.store %{{.*}}, %out0[
// CHECK:             vector.store %{{.*}}, %out0[
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     aotk.parallel
// CHECK:         func.return
// 32 runs x 2 rows x 10 columns x 16 channels x 4 bytes
// CHECK-LABEL: func.func @conv_pool_relu_workspace_size(
// CHECK:         arith.constant 40960 : index
func.func @conv_pool_relu(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>) -> tensor<?x4x5x16xf32> {
  %y = aotk.conv_pool %x, %w pool_window [2, 2] pool_mode max strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x4x5x16xf32> {
    %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
    %r = "aotk.maximum"(%acc, %zero) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %r : tensor<f32>
  }
  func.return %y : tensor<?x4x5x16xf32>
}
