// RUN: aotk-opt %s --split-input-file -p aotk-fuse | filecheck %s

// A lone elementwise op is not wrapped.
// CHECK-LABEL: func.func @exp_single
// CHECK-NEXT:    %y = "aotk.exp"(%x)
// CHECK-NEXT:    func.return %y
func.func @exp_single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "aotk.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// A producer with a second user is not merged: its result must be stored anyway.
// CHECK-LABEL: func.func @exp_two_users
// CHECK-NEXT:    %e = "aotk.exp"(%x)
// CHECK-NEXT:    %y = "aotk.neg"(%e)
// CHECK-NEXT:    func.return %e, %y
func.func @exp_two_users(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = "aotk.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %y = "aotk.neg"(%e) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// A producer over a smaller (broadcast) shape stays out, so exp runs 4 times, not 12.
// CHECK-LABEL: func.func @add_broadcast_producer
// CHECK-NEXT:    %e = "aotk.exp"(%b) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %z = aotk.fused(%[[X:.*]] = %x, %[[E:.*]] = %e) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32> {
// CHECK-NEXT:      %[[S:.*]] = "aotk.add"(%[[X]], %[[E]]) : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK-NEXT:      %[[T:.*]] = "aotk.tanh"(%[[S]])
// CHECK-NEXT:      aotk.yield %[[T]] : tensor<f32>
// CHECK-NEXT:    }
func.func @add_broadcast_producer(%x: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %e = "aotk.exp"(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %y = "aotk.add"(%x, %e) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  %z = "aotk.tanh"(%y) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %z : tensor<3x4xf32>
}

// -----

// Reductions end a kernel; the elementwise ops after it fuse with each other.
// CHECK-LABEL: func.func @reduce_sum_boundary
// CHECK-NEXT:    %e = "aotk.exp"(%x)
// CHECK-NEXT:    %s = "aotk.reduce_sum"(%e)
// CHECK-NEXT:    %y = aotk.fused(%{{.*}} = %s) : (tensor<3xf32>) -> tensor<3xf32> {
// CHECK:           "aotk.log"
// CHECK-NEXT:      "aotk.neg"
// CHECK-NEXT:      aotk.yield
// CHECK-NEXT:    }
func.func @reduce_sum_boundary(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  %e = "aotk.exp"(%x) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %s = "aotk.reduce_sum"(%e) <{axes = array<i64: 1>, keepdims = false}> : (tensor<3x4xf32>) -> tensor<3xf32>
  %l = "aotk.log"(%s) : (tensor<3xf32>) -> tensor<3xf32>
  %y = "aotk.neg"(%l) : (tensor<3xf32>) -> tensor<3xf32>
  func.return %y : tensor<3xf32>
}

// -----

// A repeated input becomes one kernel input, read once per element.
// CHECK-LABEL: func.func @mul_same_input
// CHECK-NEXT:    %y = aotk.fused(%[[X:.*]] = %x) : (tensor<?xf32>) -> tensor<?xf32> {
// CHECK-NEXT:      %[[M:.*]] = "aotk.mul"(%[[X]], %[[X]])
// CHECK-NEXT:      aotk.yield %[[M]] : tensor<f32>
func.func @mul_same_input(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = "aotk.mul"(%x, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
