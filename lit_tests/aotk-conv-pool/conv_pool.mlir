// RUN: aotk-opt %s --split-input-file -p aotk-conv-pool | filecheck %s

// A conv and its 2x2 max pool: one conv_pool of the pooled type, its epilogue the
// identity; the relu after the pool (where aotk-simplify moved it) joins the epilogue.
// CHECK-LABEL: func.func @conv_pool_relu
// CHECK-NEXT:    %{{.*}} = aotk.conv_pool %x, %w pool_window [2, 2] pool_mode max strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%[[ACC:.*]]) : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x4x5x16xf32> {
// CHECK-NEXT:      %[[ZERO:.*]] = "aotk.constant"()
// CHECK-NEXT:      %[[R:.*]] = "aotk.maximum"(%[[ACC]], %[[ZERO]])
// CHECK-NEXT:      aotk.yield %[[R]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @conv_pool_relu(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>) -> tensor<?x4x5x16xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32>
  %p = aotk.pool %y window [2, 2] strides [2, 2] padding valid mode max : (tensor<?x8x10x16xf32>) -> tensor<?x4x5x16xf32>
  %r = aotk.fused(%a = %p) : (tensor<?x4x5x16xf32>) -> tensor<?x4x5x16xf32> {
    %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
    %m = "aotk.maximum"(%a, %zero) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %m : tensor<f32>
  }
  func.return %r : tensor<?x4x5x16xf32>
}

// -----

// A conv_fused (a bias) and an average pool, 'same' on a 8x10 output that 2x2 windows
// tile: the bias comes along as the epilogue's input, applied before the pool. The relu
// after an average pool does not commute with it and stays.
// CHECK-LABEL: func.func @bias_avg_pool
// CHECK-NEXT:    %[[P:.*]] = aotk.conv_pool %x, %w pool_window [2, 2] pool_mode avg {{.*}} epilogue(%[[ACC:.*]], %[[B:.*]] = %b) : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>, tensor<16xf32>) -> tensor<?x4x5x16xf32> {
// CHECK-NEXT:      %[[S:.*]] = "aotk.add"(%[[ACC]], %[[B]])
// CHECK-NEXT:      aotk.yield %[[S]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    %r = aotk.fused(%{{.*}} = %[[P]])
func.func @bias_avg_pool(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>, %b: tensor<16xf32>) -> tensor<?x4x5x16xf32> {
  %y = aotk.conv_fused %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc, %c = %b) : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>, tensor<16xf32>) -> tensor<?x8x10x16xf32> {
    %s = "aotk.add"(%acc, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %s : tensor<f32>
  }
  %p = aotk.pool %y window [2, 2] strides [2, 2] padding same mode avg : (tensor<?x8x10x16xf32>) -> tensor<?x4x5x16xf32>
  %r = aotk.fused(%a = %p) : (tensor<?x4x5x16xf32>) -> tensor<?x4x5x16xf32> {
    %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
    %m = "aotk.maximum"(%a, %zero) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %m : tensor<f32>
  }
  func.return %r : tensor<?x4x5x16xf32>
}

// -----

// Left alone: overlapping windows (stride 1), a 'same' pool whose windows would pad the
// 9-row output, and a conv that is returned too.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     aotk.conv_pool
// CHECK:         aotk.pool %y window [2, 2] strides [1, 1]
// CHECK:         aotk.pool %z window [2, 2] strides [2, 2] padding same
// CHECK:         aotk.pool %v window [2, 2] strides [2, 2] padding valid
// CHECK-NOT:     aotk.conv_pool
func.func @left_alone(%x: tensor<1x8x10x3xf32>, %x9: tensor<1x9x10x3xf32>, %w: tensor<3x3x3x16xf32>) -> (tensor<1x7x9x16xf32>, tensor<1x5x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x8x10x16xf32>) {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<1x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x8x10x16xf32>
  %p = aotk.pool %y window [2, 2] strides [1, 1] padding valid mode max : (tensor<1x8x10x16xf32>) -> tensor<1x7x9x16xf32>
  %z = aotk.conv %x9, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<1x9x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x9x10x16xf32>
  %q = aotk.pool %z window [2, 2] strides [2, 2] padding same mode max : (tensor<1x9x10x16xf32>) -> tensor<1x5x5x16xf32>
  %v = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<1x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x8x10x16xf32>
  %u = aotk.pool %v window [2, 2] strides [2, 2] padding valid mode max : (tensor<1x8x10x16xf32>) -> tensor<1x4x5x16xf32>
  func.return %p, %q, %u, %v : tensor<1x7x9x16xf32>, tensor<1x5x5x16xf32>, tensor<1x4x5x16xf32>, tensor<1x8x10x16xf32>
}
