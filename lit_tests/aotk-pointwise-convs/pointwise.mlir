// RUN: aotk-opt %s --split-input-file -p aotk-pointwise-convs | filecheck %s

// A 1x1 conv, stride 1, and its two gradients: each a matmul on the kernel as [C, O];
// the input gradient with the kernel transposed, the kernel gradient on rows of the
// input (transposed) and of the cotangent, reshaped back to the kernel's shape.
// CHECK-LABEL: func.func @pointwise(
// CHECK:         %[[W:.*]] = "aotk.reshape"(%w) <{shape = array<i64: 2, 4>}> : (tensor<1x1x2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %[[Y:.*]] = "aotk.matmul"(%x, %[[W]]) : (tensor<?x7x7x2xf32>, tensor<2x4xf32>) -> tensor<?x7x7x4xf32>
// CHECK-NEXT:    %[[W2:.*]] = "aotk.reshape"(%w)
// CHECK-NEXT:    "aotk.matmul"(%g, %[[W2]]) <{transpose_rhs = true}> : (tensor<?x7x7x4xf32>, tensor<2x4xf32>) -> tensor<?x7x7x2xf32>
// CHECK:         %[[RX:.*]] = "aotk.reshape"(%x) <{shape = array<i64: -1, 2>}>
// CHECK-NEXT:    %[[RG:.*]] = "aotk.reshape"(%g) <{shape = array<i64: -1, 4>}>
// CHECK-NEXT:    %[[DW:.*]] = "aotk.matmul"(%[[RX]], %[[RG]]) <{transpose_lhs = true}> : (tensor<?x2xf32>, tensor<?x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    "aotk.reshape"(%[[DW]]) <{shape = array<i64: 1, 1, 2, 4>}> : (tensor<2x4xf32>) -> tensor<1x1x2x4xf32>
// CHECK-NOT:     aotk.conv
func.func @pointwise(%x: tensor<?x7x7x2xf32>, %w: tensor<1x1x2x4xf32>, %g: tensor<?x7x7x4xf32>) -> (tensor<?x7x7x4xf32>, tensor<?x7x7x2xf32>, tensor<1x1x2x4xf32>) {
  %y = "aotk.conv"(%x, %w) <{strides = array<i64: 1, 1>, dilation = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, pad_before = array<i64: 0, 0>, pad_after = array<i64: 0, 0>, padding = #aotk<conv_padding same>, groups = 1 : i64}> : (tensor<?x7x7x2xf32>, tensor<1x1x2x4xf32>) -> tensor<?x7x7x4xf32>
  %dx = "aotk.conv_backprop"(%g, %x, %w) <{wrt = #aotk<wrt input>, strides = array<i64: 1, 1>, dilation = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, pad_before = array<i64: 0, 0>, pad_after = array<i64: 0, 0>, padding = #aotk<conv_padding same>, groups = 1 : i64}> : (tensor<?x7x7x4xf32>, tensor<?x7x7x2xf32>, tensor<1x1x2x4xf32>) -> tensor<?x7x7x2xf32>
  %dw = "aotk.conv_backprop"(%g, %x, %w) <{wrt = #aotk<wrt kernel>, strides = array<i64: 1, 1>, dilation = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, pad_before = array<i64: 0, 0>, pad_after = array<i64: 0, 0>, padding = #aotk<conv_padding same>, groups = 1 : i64}> : (tensor<?x7x7x4xf32>, tensor<?x7x7x2xf32>, tensor<1x1x2x4xf32>) -> tensor<1x1x2x4xf32>
  func.return %y, %dx, %dw : tensor<?x7x7x4xf32>, tensor<?x7x7x2xf32>, tensor<1x1x2x4xf32>
}

// -----

// Explicit padding makes a border of zeros-only outputs: not a matmul; it stays a conv.
// CHECK-LABEL: func.func @padded(
// CHECK:         aotk.conv %x, %w
// CHECK-NOT:     aotk.matmul
func.func @padded(%x: tensor<?x7x7x2xf32>, %w: tensor<1x1x2x4xf32>) -> tensor<?x9x9x4xf32> {
  %y = "aotk.conv"(%x, %w) <{strides = array<i64: 1, 1>, dilation = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, pad_before = array<i64: 1, 1>, pad_after = array<i64: 1, 1>, padding = #aotk<conv_padding explicit>, groups = 1 : i64}> : (tensor<?x7x7x2xf32>, tensor<1x1x2x4xf32>) -> tensor<?x9x9x4xf32>
  func.return %y : tensor<?x9x9x4xf32>
}

// -----

// Autodiff's input gradient: a conv with the kernel's channel axes transposed. The matmul
// reads the kernel itself as [O, C] (transposed: the gradient back to C channels); the
// transpose is left dead, so no copy of the weights is made per call.
// CHECK-LABEL: func.func @transposed_kernel(
// CHECK:         %[[T:.*]] = "aotk.transpose"(%w)
// CHECK-NEXT:    %[[W:.*]] = "aotk.reshape"(%w) <{shape = array<i64: 2, 4>}> : (tensor<1x1x2x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    "aotk.matmul"(%g, %[[W]]) <{transpose_rhs = true}> : (tensor<?x7x7x4xf32>, tensor<2x4xf32>) -> tensor<?x7x7x2xf32>
// CHECK-NOT:     aotk.conv
func.func @transposed_kernel(%g: tensor<?x7x7x4xf32>, %w: tensor<1x1x2x4xf32>) -> tensor<?x7x7x2xf32> {
  %t = "aotk.transpose"(%w) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<1x1x2x4xf32>) -> tensor<1x1x4x2xf32>
  %dx = "aotk.conv"(%g, %t) <{strides = array<i64: 1, 1>, dilation = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, pad_before = array<i64: 0, 0>, pad_after = array<i64: 0, 0>, padding = #aotk<conv_padding same>, groups = 1 : i64}> : (tensor<?x7x7x4xf32>, tensor<1x1x4x2xf32>) -> tensor<?x7x7x2xf32>
  func.return %dx : tensor<?x7x7x2xf32>
}
