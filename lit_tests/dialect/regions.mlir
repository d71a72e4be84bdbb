// RUN: aotk-opt %s | aotk-opt | filecheck %s
// RUN: aotk-opt %s --print-op-generic | aotk-opt | filecheck %s

// The ops with a body print each operand bound to its block argument, then the op's
// type, then the body; the block arguments' types follow from the operands'. Generic
// input (below, for aotk.fused) parses too.

// CHECK-LABEL: func.func @fused
// CHECK-NEXT:    %y = aotk.fused(%[[A:.*]] = %x, %[[B:.*]] = %b) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32> {
// CHECK-NEXT:      %[[S:.*]] = "aotk.add"(%[[A]], %[[B]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:      %[[T:.*]] = "aotk.tanh"(%[[S]]) : (tensor<f32>) -> tensor<f32>
// CHECK-NEXT:      aotk.yield %[[T]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : tensor<2x4xf32>
func.func @fused(%x: tensor<2x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = "aotk.fused"(%x, %b) ({
  ^bb0(%e: tensor<f32>, %f: tensor<f32>):
    %s = "aotk.add"(%e, %f) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %t = "aotk.tanh"(%s) : (tensor<f32>) -> tensor<f32>
    "aotk.yield"(%t) : (tensor<f32>) -> ()
  }) : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %y : tensor<2x4xf32>
}

// A fused op with two results, one of them broadcast to a higher rank.
// CHECK-LABEL: func.func @fused_two_results
// CHECK-NEXT:    %a, %b = aotk.fused(%[[X:.*]] = %x) : (tensor<3xf32>) -> (tensor<3xf32>, tensor<1x3xf32>) {
// CHECK-NEXT:      %[[N:.*]] = "aotk.neg"(%[[X]]) : (tensor<f32>) -> tensor<f32>
// CHECK-NEXT:      aotk.yield %[[N]], %[[X]] : tensor<f32>, tensor<f32>
// CHECK-NEXT:    }
func.func @fused_two_results(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<1x3xf32>) {
  %a, %b = aotk.fused(%e = %x) : (tensor<3xf32>) -> (tensor<3xf32>, tensor<1x3xf32>) {
    %n = "aotk.neg"(%e) : (tensor<f32>) -> tensor<f32>
    aotk.yield %n, %e : tensor<f32>, tensor<f32>
  }
  func.return %a, %b : tensor<3xf32>, tensor<1x3xf32>
}

// A scan binds one step of each sequence (leading axis dropped) and each carry; its body
// may use outer values (%w). Results: the final carries, then the stacked outputs.
// CHECK-LABEL: func.func @scan
// CHECK-NEXT:    %h, %ys = aotk.scan seqs(%[[XT:.*]] = %xs) carries(%[[HT:.*]] = %h0) : (tensor<5x2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<5x2x3xf32>) {
// CHECK-NEXT:      %[[M:.*]] = "aotk.mul"(%[[HT]], %w) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:      %[[N:.*]] = "aotk.add"(%[[XT]], %[[M]]) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:      aotk.yield %[[N]], %[[N]] : tensor<2x3xf32>, tensor<2x3xf32>
// CHECK-NEXT:    }
func.func @scan(%xs: tensor<5x2x3xf32>, %h0: tensor<2x3xf32>, %w: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<5x2x3xf32>) {
  %h, %ys = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<5x2x3xf32>) {
    %m = "aotk.mul"(%s, %w) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %n = "aotk.add"(%x, %m) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    aotk.yield %n, %n : tensor<2x3xf32>, tensor<2x3xf32>
  }
  func.return %h, %ys : tensor<2x3xf32>, tensor<5x2x3xf32>
}

// aotk.conv_fused: the conv's operands and window, then its epilogue: the accumulator's
// block argument, then each epilogue input bound to its own.
// CHECK-LABEL: func.func @conv_fused
// CHECK-NEXT:    %y = aotk.conv_fused %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%[[ACC:.*]], %[[B:.*]] = %b) : (tensor<?x4x4x2xf32>, tensor<3x3x2x8xf32>, tensor<8xf32>) -> tensor<?x4x4x8xf32> {
// CHECK-NEXT:      %[[S:.*]] = "aotk.add"(%[[ACC]], %[[B]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:      aotk.yield %[[S]] : tensor<f32>
// CHECK-NEXT:    }
func.func @conv_fused(%x: tensor<?x4x4x2xf32>, %w: tensor<3x3x2x8xf32>, %b: tensor<8xf32>) -> tensor<?x4x4x8xf32> {
  %y = aotk.conv_fused %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 epilogue(%acc, %bias = %b) : (tensor<?x4x4x2xf32>, tensor<3x3x2x8xf32>, tensor<8xf32>) -> tensor<?x4x4x8xf32> {
    %s = "aotk.add"(%acc, %bias) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %s : tensor<f32>
  }
  func.return %y : tensor<?x4x4x8xf32>
}
