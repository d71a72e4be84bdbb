// RUN: aotk-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every aotk op re-runs its shape rule; errors point at the op's line and column.

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.add' op does not verify: result type should be tensor<3x4xf32>, got tensor<4xf32>
func.func @add_bad_result(%x: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %y = "aotk.add"(%x, %b) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.add' op does not verify: shapes (4,) and (3,) do not broadcast (axis 0)
func.func @add_no_broadcast(%x: tensor<4xf32>, %z: tensor<3xf32>) -> tensor<4xf32> {
  %y = "aotk.add"(%x, %z) : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.matmul' op does not verify: contracted dims differ: (2, 4) and (3, 5)
func.func @matmul_bad_contraction(%a: tensor<2x4xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %y = "aotk.matmul"(%a, %b) : (tensor<2x4xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.reduce_sum' op does not verify: axis 2 is out of range for rank 2
func.func @reduce_sum_bad_axis(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  %y = "aotk.reduce_sum"(%x) <{axes = array<i64: 2>, keepdims = false}> : (tensor<3x4xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.fused' op does not verify: 2 inputs but 1 block arguments
func.func @fused_missing_arg(%x: tensor<4xf32>, %z: tensor<4xf32>) -> tensor<4xf32> {
  %y = "aotk.fused"(%x, %z) ({
  ^bb0(%a: tensor<f32>):
    %n = "aotk.neg"(%a) : (tensor<f32>) -> tensor<f32>
    "aotk.yield"(%n) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.fused' op does not verify: aotk.reduce_sum is not an elementwise aotk op
func.func @fused_reduction_inside(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "aotk.fused"(%x) ({
  ^bb0(%a: tensor<f32>):
    %s = "aotk.reduce_sum"(%a) <{axes = array<i64>, keepdims = false}> : (tensor<f32>) -> tensor<f32>
    "aotk.yield"(%s) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.fused' op does not verify: result tensor<3xf32> does not match the broadcast of the inputs
func.func @fused_bad_result(%x: tensor<4xf32>) -> tensor<3xf32> {
  %y = "aotk.fused"(%x) ({
  ^bb0(%a: tensor<f32>):
    %n = "aotk.neg"(%a) : (tensor<f32>) -> tensor<f32>
    "aotk.yield"(%n) : (tensor<f32>) -> ()
  }) : (tensor<4xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.transpose' op does not verify: perm (0, 0) is not a permutation of the 2 axes of (3, 4)
func.func @transpose_bad_perm(%x: tensor<3x4xf32>) -> tensor<3x3xf32> {
  %y = "aotk.transpose"(%x) <{perm = array<i64: 0, 0>}> : (tensor<3x4xf32>) -> tensor<3x3xf32>
  func.return %y : tensor<3x3xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.exp' op does not verify: expected a float tensor, got int32
func.func @exp_of_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %y = "aotk.exp"(%x) : (tensor<4xi32>) -> tensor<4xi32>
  func.return %y : tensor<4xi32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.conv_fused' op does not verify: epilogue input tensor<4x8xf32> must be a scalar or hold one value per output channel (8)
func.func @conv_fused_input_not_per_channel(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x8xf32>, %b: tensor<4x8xf32>) -> tensor<1x4x4x8xf32> {
  %y = aotk.conv_fused %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc, %bias = %b) : (tensor<1x4x4x2xf32>, tensor<3x3x2x8xf32>, tensor<4x8xf32>) -> tensor<1x4x4x8xf32> {
    %s = "aotk.add"(%acc, %bias) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %s : tensor<f32>
  }
  func.return %y : tensor<1x4x4x8xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.conv_fused' op does not verify: aotk.reduce_sum is not an elementwise aotk op
func.func @conv_fused_body_not_elementwise(%x: tensor<1x4x4x2xf32>, %w: tensor<3x3x2x8xf32>) -> tensor<1x4x4x8xf32> {
  %y = aotk.conv_fused %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc) : (tensor<1x4x4x2xf32>, tensor<3x3x2x8xf32>) -> tensor<1x4x4x8xf32> {
    %s = "aotk.reduce_sum"(%acc) <{axes = array<i64>, keepdims = false}> : (tensor<f32>) -> tensor<f32>
    aotk.yield %s : tensor<f32>
  }
  func.return %y : tensor<1x4x4x8xf32>
}

// -----

// CHECK:      verifiers.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.reshape_dims' op does not verify: taken names axis 2 of operand 1, which has none
func.func @reshape_dims_bad_axis(%y: tensor<?x5xf32>, %x: tensor<?x3xf32>) -> tensor<?x?x5xf32> {
  %z = "aotk.reshape_dims"(%y, %x) <{shape = array<i64: -1, -2, 5>, taken = array<i64: 1, 2>}> : (tensor<?x5xf32>, tensor<?x3xf32>) -> tensor<?x?x5xf32>
  func.return %z : tensor<?x?x5xf32>
}
