// RUN: aotk-opt %s --aotk-tile-for=avx2 --split-input-file -p convert-aotk-to-loops | filecheck %s

// The kernel gradient of a 3x3 'same' conv, 8 -> 16 channels: one parallel loop over
// 18 items (9 taps x 2 tiles of 5 input channels, the second shifted back to end at
// channel 8, x 1 block of 2 vectors of outputs). An item's 5 x 2 accumulators stay in
// registers over images, then the tap's rows and columns inside the input (bounds
// computed per tap, no per-position checks); per position, 2 vector loads of g, 5
// broadcasts of x and 10 FMAs. No zeroing pass: each item stores its sums once.
// CHECK-LABEL: func.func @filter_grad(
// CHECK-NOT:     scf.if
// CHECK-DAG:     %[[ITEMS:.*]] = arith.constant 18 : index
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[ITEMS]] step %{{.*}} {
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-NEXT:        scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-NEXT:          scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-2:         vector.load %g[
// CHECK-COUNT-10:        vector.fma
// CHECK-NOT:             vector.fma
// CHECK:           }
// CHECK-COUNT-10:  vector.store %{{.*}}, %out0[
// CHECK-NEXT:    } {aotk.parallel = 2 : i64}
// CHECK-NEXT:    func.return
func.func @filter_grad(%g: tensor<?x8x8x16xf32>, %x: tensor<?x8x8x8xf32>, %w: tensor<3x3x8x16xf32>) -> tensor<3x3x8x16xf32> {
  %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x8x16xf32>, tensor<?x8x8x8xf32>, tensor<3x3x8x16xf32>) -> tensor<3x3x8x16xf32>
  func.return %dw : tensor<3x3x8x16xf32>
}

// -----

// Groups (or float16, or input dilation) keep the scalar nest that adds each product to
// its kernel element after zeroing the gradient.
// CHECK-LABEL: func.func @grouped_filter_grad(
// CHECK:         memref.store %{{.*}}, %out0[
// CHECK:         scf.if
// CHECK:           arith.mulf {{.*}} : f32
// CHECK-NOT:     vector.fma
func.func @grouped_filter_grad(%g: tensor<?x8x8x16xf32>, %x: tensor<?x8x8x8xf32>, %w: tensor<3x3x4x16xf32>) -> tensor<3x3x4x16xf32> {
  %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 2 : (tensor<?x8x8x16xf32>, tensor<?x8x8x8xf32>, tensor<3x3x4x16xf32>) -> tensor<3x3x4x16xf32>
  func.return %dw : tensor<3x3x4x16xf32>
}
