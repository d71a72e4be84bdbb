// RUN: aotk-opt %s --split-input-file -p aotk-fuse | filecheck %s

// A conv's bias and relu become its epilogue: the conv's operands, then the bias bound
// to a block argument; the body sees an element of the conv as its first argument.
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK-NEXT:    %r = aotk.conv_fused %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%[[ACC:.*]], %[[B:.*]] = %b) : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>, tensor<16xf32>) -> tensor<?x8x10x16xf32> {
// CHECK-NEXT:      %[[ZERO:.*]] = "aotk.constant"()
// CHECK-NEXT:      %[[S:.*]] = "aotk.add"(%[[ACC]], %[[B]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:      %[[R:.*]] = "aotk.maximum"(%[[S]], %[[ZERO]])
// CHECK-NEXT:      aotk.yield %[[R]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r
func.func @conv_bias_relu(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>, %b: tensor<16xf32>) -> tensor<?x8x10x16xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32>
  %s = "aotk.add"(%y, %b) : (tensor<?x8x10x16xf32>, tensor<16xf32>) -> tensor<?x8x10x16xf32>
  %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %r = "aotk.maximum"(%s, %zero) : (tensor<?x8x10x16xf32>, tensor<f32>) -> tensor<?x8x10x16xf32>
  func.return %r : tensor<?x8x10x16xf32>
}

// -----

// The conv is returned too, so it keeps its output; and a residual (a full-size tensor,
// not one value per channel) is not an epilogue input.
// CHECK-LABEL: func.func @conv_kept
// CHECK-NOT:     aotk.conv_fused
// CHECK:         %y = aotk.conv %x, %w
// CHECK:         %{{.*}} = "aotk.add"(%y, %b)
// CHECK:         %z = aotk.conv %x, %w
// CHECK:         %{{.*}} = "aotk.add"(%z, %other)
// CHECK-NOT:     aotk.conv_fused
func.func @conv_kept(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>, %b: tensor<16xf32>, %other: tensor<?x8x10x16xf32>) -> (tensor<?x8x10x16xf32>, tensor<?x8x10x16xf32>, tensor<?x8x10x16xf32>) {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32>
  %s = "aotk.add"(%y, %b) : (tensor<?x8x10x16xf32>, tensor<16xf32>) -> tensor<?x8x10x16xf32>
  %z = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32>
  %t = "aotk.add"(%z, %other) : (tensor<?x8x10x16xf32>, tensor<?x8x10x16xf32>) -> tensor<?x8x10x16xf32>
  func.return %s, %y, %t : tensor<?x8x10x16xf32>, tensor<?x8x10x16xf32>, tensor<?x8x10x16xf32>
}
