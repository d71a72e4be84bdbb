// RUN: aotk-opt %s --aotk-tile-for=avx2 --split-input-file -p convert-aotk-to-loops | filecheck %s

// The kernel gradient of a 3x3 'same' conv, 7 -> 16 channels (too few inputs for
// Winograd's): 18 items (9 taps x 2 tiles of 5 input channels, the second shifted back
// to end at channel 7, x 1 block of 2 vectors of outputs). The gradient is zeroed (in
// parallel where that pays), then images are taken in chunks that fit L2, and per chunk
// one parallel loop runs the items: each loads its 5 x 2 sums, keeps them in registers
// over the chunk's images and the tap's rows and columns inside the input (bounds
// computed per tap, no per-position checks), per position 2 vector loads of g, 5
// broadcasts of x and 10 FMAs, and stores them back. The shifted tile stores only the
// rows no other tile owns (a check per row but the last).
// CHECK-LABEL: func.func @filter_grad(
// CHECK-DAG:     %[[ITEMS:.*]] = arith.constant 18 : index
// CHECK-DAG:     %[[SIZE:.*]] = arith.constant 1008 : index
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[SIZE]] step %{{.*}} {
// CHECK-NEXT:      vector.store %{{.*}}, %out0[%[[I]]] : memref<1008xf32>, vector<8xf32>
// CHECK-NEXT:    }{{( {aotk.parallel = 2 : i64})?}}
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[ITEMS]] step %{{.*}} {
// CHECK-COUNT-10:    vector.load %out0[
// CHECK:             scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-NEXT:          scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-NEXT:            scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-2:           vector.load %g[
// CHECK-COUNT-10:          vector.fma
// CHECK-NOT:               vector.fma
// CHECK-COUNT-4:     scf.if
// CHECK-NOT:         scf.if
// CHECK:             }
// CHECK-NEXT:        vector.store %{{.*}}, %out0[
// CHECK-NEXT:        vector.store %{{.*}}, %out0[
// CHECK-NEXT:      } {aotk.parallel = 2 : i64}
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @filter_grad(%g: tensor<?x8x8x16xf32>, %x: tensor<?x8x8x7xf32>, %w: tensor<3x3x7x16xf32>) -> tensor<3x3x7x16xf32> {
  %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x8x16xf32>, tensor<?x8x8x7xf32>, tensor<3x3x7x16xf32>) -> tensor<3x3x7x16xf32>
  func.return %dw : tensor<3x3x7x16xf32>
}

// -----

// Groups (or float16, or input dilation) keep the scalar nest that adds each product to
// its kernel element after zeroing the gradient.
// An output count that is not whole blocks (20 = 2 x 8 + 4) takes one parallel loop
// over all images: its last block is shifted back, and items store their sums once.
// CHECK-LABEL: func.func @partial_block_filter_grad(
// CHECK-NOT:     vector.load %out0
// CHECK:         scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-COUNT-10: vector.store %{{.*}}, %out0[
// CHECK-NEXT:    } {aotk.parallel = 2 : i64}
// CHECK-NEXT:    func.return
func.func @partial_block_filter_grad(%g: tensor<?x8x8x20xf32>, %x: tensor<?x8x8x8xf32>, %w: tensor<3x3x8x20xf32>) -> tensor<3x3x8x20xf32> {
  %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x8x20xf32>, tensor<?x8x8x8xf32>, tensor<3x3x8x20xf32>) -> tensor<3x3x8x20xf32>
  func.return %dw : tensor<3x3x8x20xf32>
}

// -----

// CHECK-LABEL: func.func @grouped_filter_grad(
// CHECK:         memref.store %{{.*}}, %out0[
// CHECK:         scf.if
// CHECK:           arith.mulf {{.*}} : f32
// CHECK-NOT:     vector.fma
func.func @grouped_filter_grad(%g: tensor<?x8x8x16xf32>, %x: tensor<?x8x8x8xf32>, %w: tensor<3x3x4x16xf32>) -> tensor<3x3x4x16xf32> {
  %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 2 : (tensor<?x8x8x16xf32>, tensor<?x8x8x8xf32>, tensor<3x3x4x16xf32>) -> tensor<3x3x4x16xf32>
  func.return %dw : tensor<3x3x4x16xf32>
}
