// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The window ops (conv, conv_backprop, pool, pool_grad) print their properties by name
// after the operands; the padding, pool mode and wrt are enum attributes. Both the custom
// and the generic form parse; printed, parsed back and printed again, each op keeps its
// window and types.

// CHECK-LABEL: func.func @conv(%x: tensor<?x7x7x2xf32>, %w: tensor<3x3x2x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x8x5x4xf32>) {
// CHECK-NEXT:    %y = aotk.conv %x, %w strides [2, 2] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x4x4x4xf32>
// CHECK-NEXT:    %z = aotk.conv %x, %w strides [1, 1] dilation [1, 2] lhs_dilation [1, 1] pad_before [1, 0] pad_after [2, 2] padding explicit groups 1 : (tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x8x5x4xf32>
// CHECK-NEXT:    func.return %y, %z : tensor<?x4x4x4xf32>, tensor<?x8x5x4xf32>
// CHECK-NEXT:  }
func.func @conv(%x: tensor<?x7x7x2xf32>, %w: tensor<3x3x2x4xf32>) -> (tensor<?x4x4x4xf32>, tensor<?x8x5x4xf32>) {
  %y = aotk.conv %x, %w strides [2, 2] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x4x4x4xf32>
  %z = "aotk.conv"(%x, %w) <{strides = array<i64: 1, 1>, dilation = array<i64: 1, 2>, lhs_dilation = array<i64: 1, 1>, pad_before = array<i64: 1, 0>, pad_after = array<i64: 2, 2>, padding = #aotk<conv_padding explicit>, groups = 1 : i64}> : (tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x8x5x4xf32>
  func.return %y, %z : tensor<?x4x4x4xf32>, tensor<?x8x5x4xf32>
}

// A depthwise, input-dilated 1-d convolution (a transposed one), with an op attribute.

// CHECK-LABEL: func.func @conv_grouped(%x: tensor<2x4x6xf64>, %w: tensor<3x1x6xf64>) -> tensor<2x9x6xf64> {
// CHECK-NEXT:    %y = aotk.conv %x, %w strides [1] dilation [1] lhs_dilation [2] pad_before [2] pad_after [2] padding explicit groups 6 {note = "t"} : (tensor<2x4x6xf64>, tensor<3x1x6xf64>) -> tensor<2x9x6xf64>
// CHECK-NEXT:    func.return %y : tensor<2x9x6xf64>
func.func @conv_grouped(%x: tensor<2x4x6xf64>, %w: tensor<3x1x6xf64>) -> tensor<2x9x6xf64> {
  %y = aotk.conv %x, %w strides [1] dilation [1] lhs_dilation [2] pad_before [2] pad_after [2] padding explicit groups 6 {note = "t"} : (tensor<2x4x6xf64>, tensor<3x1x6xf64>) -> tensor<2x9x6xf64>
  func.return %y : tensor<2x9x6xf64>
}

// CHECK-LABEL: func.func @conv_backprop(%g: tensor<?x4x4x4xf32>, %x: tensor<?x7x7x2xf32>, %w: tensor<3x3x2x4xf32>) -> (tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) {
// CHECK-NEXT:    %dx = aotk.conv_backprop %g, %x, %w wrt input strides [2, 2] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x4x4x4xf32>, tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x7x7x2xf32>
// CHECK-NEXT:    %dw = aotk.conv_backprop %g, %x, %w wrt kernel strides [2, 2] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x4x4x4xf32>, tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<3x3x2x4xf32>
// CHECK-NEXT:    func.return %dx, %dw : tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>
func.func @conv_backprop(%g: tensor<?x4x4x4xf32>, %x: tensor<?x7x7x2xf32>, %w: tensor<3x3x2x4xf32>) -> (tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) {
  %dx = aotk.conv_backprop %g, %x, %w wrt input strides [2, 2] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x4x4x4xf32>, tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x7x7x2xf32>
  %dw = "aotk.conv_backprop"(%g, %x, %w) <{wrt = #aotk<wrt kernel>, strides = array<i64: 2, 2>, dilation = array<i64: 1, 1>, lhs_dilation = array<i64: 1, 1>, pad_before = array<i64: 0, 0>, pad_after = array<i64: 0, 0>, padding = #aotk<conv_padding same>, groups = 1 : i64}> : (tensor<?x4x4x4xf32>, tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>) -> tensor<3x3x2x4xf32>
  func.return %dx, %dw : tensor<?x7x7x2xf32>, tensor<3x3x2x4xf32>
}

// CHECK-LABEL: func.func @pool(%x: tensor<?x?x7x3xf32>, %v: tensor<1x5x4x3x2xi32>) -> (tensor<?x?x4x3xf32>, tensor<1x4x3x1x2xi32>) {
// CHECK-NEXT:    %y = aotk.pool %x window [3, 3] strides [2, 2] padding same mode avg : (tensor<?x?x7x3xf32>) -> tensor<?x?x4x3xf32>
// CHECK-NEXT:    %z = aotk.pool %v window [2, 2, 3] strides [1, 1, 2] padding valid mode max : (tensor<1x5x4x3x2xi32>) -> tensor<1x4x3x1x2xi32>
// CHECK-NEXT:    func.return %y, %z : tensor<?x?x4x3xf32>, tensor<1x4x3x1x2xi32>
func.func @pool(%x: tensor<?x?x7x3xf32>, %v: tensor<1x5x4x3x2xi32>) -> (tensor<?x?x4x3xf32>, tensor<1x4x3x1x2xi32>) {
  %y = aotk.pool %x window [3, 3] strides [2, 2] padding same mode avg : (tensor<?x?x7x3xf32>) -> tensor<?x?x4x3xf32>
  %z = "aotk.pool"(%v) <{window = array<i64: 2, 2, 3>, strides = array<i64: 1, 1, 2>, padding = #aotk<pool_padding valid>, mode = #aotk<pool_mode max>}> : (tensor<1x5x4x3x2xi32>) -> tensor<1x4x3x1x2xi32>
  func.return %y, %z : tensor<?x?x4x3xf32>, tensor<1x4x3x1x2xi32>
}

// CHECK-LABEL: func.func @pool_grad(%g: tensor<?x3x3x2xf16>, %x: tensor<?x7x7x2xf16>, %y: tensor<?x3x3x2xf16>) -> tensor<?x7x7x2xf16> {
// CHECK-NEXT:    %dx = aotk.pool_grad %g, %x, %y window [3, 3] strides [2, 2] padding valid mode max : (tensor<?x3x3x2xf16>, tensor<?x7x7x2xf16>, tensor<?x3x3x2xf16>) -> tensor<?x7x7x2xf16>
// CHECK-NEXT:    func.return %dx : tensor<?x7x7x2xf16>
func.func @pool_grad(%g: tensor<?x3x3x2xf16>, %x: tensor<?x7x7x2xf16>, %y: tensor<?x3x3x2xf16>) -> tensor<?x7x7x2xf16> {
  %dx = aotk.pool_grad %g, %x, %y window [3, 3] strides [2, 2] padding valid mode max : (tensor<?x3x3x2xf16>, tensor<?x7x7x2xf16>, tensor<?x3x3x2xf16>) -> tensor<?x7x7x2xf16>
  func.return %dx : tensor<?x7x7x2xf16>
}
