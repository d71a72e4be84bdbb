// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A 'same' 3x3 conv on 8x10 images is cut into 14 lines per image: 8 rows over the
// interior columns, 2 border columns down the interior rows, and 4 corners. Threads
// split (image, line) pairs in one parallel loop. Every line's taps inside the input
// are a box of tap ranges, so one body of 5 positions x 2 vectors (10 accumulators)
// and one of a single position serve interior and borders alike, with no per-tap
// checks; the 3 input channels are unrolled (3 x 10 and 3 x 2 FMAs).
// CHECK-LABEL: func.func @conv_same(
// CHECK-NOT:     scf.if
// CHECK-DAG:     %[[LINES:.*]] = arith.constant 14 : index
// CHECK:         %[[TASKS:.*]] = arith.muli %{{.*}}, %[[LINES]] : index
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[TASKS]]
// CHECK:           arith.divui %[[I]], %[[LINES]] : index
// CHECK:           arith.remui %[[I]], %[[LINES]] : index
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-NEXT:        scf.for {{.*}} iter_args(
// CHECK-COUNT-30:      vector.fma
// CHECK-NOT:           vector.fma
// CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK-NEXT:        scf.for {{.*}} iter_args(
// CHECK-COUNT-6:       vector.fma
// CHECK-NOT:         vector.fma
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     vector.fma
// CHECK:         func.return
func.func @conv_same(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32>
  func.return %y : tensor<?x8x10x16xf32>
}

// The epilogue (a bias and relu) applies to each tile's accumulators before they are
// stored: the bias as one vector per 8 channels, then add and relu on vectors. No pass
// over the output is left.
// CHECK-LABEL: func.func @conv_bias_relu(
// CHECK-SAME:      %x: memref<?xf32>, %w: memref<432xf32>, %b: memref<16xf32>, %out0: memref<?xf32>
// CHECK:           %[[A0:[0-9]+]], {{.*}} = scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK:           %[[B0:.*]] = vector.load %b[%{{.*}}] : memref<16xf32>, vector<8xf32>
// CHECK:           %[[B1:.*]] = vector.load %b[%{{.*}}] : memref<16xf32>, vector<8xf32>
// CHECK:           %[[S:.*]] = arith.addf %[[A0]], %[[B0]] : vector<8xf32>
// CHECK-NEXT:      %[[R:.*]] = arith.maximumf %[[S]], %{{.*}} : vector<8xf32>
// CHECK-COUNT-9:   arith.maximumf {{.*}} : vector<8xf32>
// CHECK:           vector.store %[[R]], %out0
// CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK-COUNT-2:   arith.maximumf {{.*}} : vector<8xf32>
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     arith.maximumf
// CHECK:         func.return
func.func @conv_bias_relu(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>, %b: tensor<16xf32>) -> tensor<?x8x10x16xf32> {
  %r = aotk.conv_fused %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc, %bias = %b) : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>, tensor<16xf32>) -> tensor<?x8x10x16xf32> {
    %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
    %s = "aotk.add"(%acc, %bias) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %v = "aotk.maximum"(%s, %zero) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %v : tensor<f32>
  }
  func.return %r : tensor<?x8x10x16xf32>
}

// On a 2 x 2 map every position is a border of its own, and lines along it would be
// one position long: lines run across the images instead, one per position (4, which
// threads split), in tiles of 4 images x 2 vectors (8 FMAs per input channel), then
// one-image tiles for the batch's remainder.
// CHECK-LABEL: func.func @conv_small_map(
// CHECK:         %[[POSITIONS:.*]] = arith.constant 4 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[POSITIONS]] step
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){7}vector<8xf32>}}) {
// CHECK-NEXT:        scf.for {{.*}} iter_args(
// CHECK:               scf.for {{.*}} iter_args(
// CHECK-COUNT-8:         vector.fma
// CHECK-NOT:             vector.fma
// CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK:         } {aotk.parallel = 2 : i64}
func.func @conv_small_map(%x: tensor<?x2x2x16xf32>, %w: tensor<3x3x16x16xf32>) -> tensor<?x2x2x16xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x2x2x16xf32>, tensor<3x3x16x16xf32>) -> tensor<?x2x2x16xf32>
  func.return %y : tensor<?x2x2x16xf32>
}
