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

// A producer with a second user is merged all the same: the kernel stores its value as a
// second result in the same pass, and the consumer does not read it back.
// CHECK-LABEL: func.func @exp_two_users
// CHECK-NEXT:    %y, %e = aotk.fused(%[[X:.*]] = %x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK-NEXT:      %[[E:.*]] = "aotk.exp"(%[[X]])
// CHECK-NEXT:      %[[Y:.*]] = "aotk.neg"(%[[E]])
// CHECK-NEXT:      aotk.yield %[[Y]], %[[E]] : tensor<f32>, tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %e, %y
func.func @exp_two_users(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %e = "aotk.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %y = "aotk.neg"(%e) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %e, %y : tensor<4xf32>, tensor<4xf32>
}

// -----

// When the second reader comes before the consumer, the merged kernel takes the
// producer's place instead: everything else the consumer reads exists by then.
// CHECK-LABEL: func.func @exp_read_before_consumer
// CHECK-NEXT:    %y, %e = aotk.fused(%{{.*}} = %x) : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
// CHECK:         }
// CHECK-NEXT:    %s = "aotk.reduce_sum"(%e)
// CHECK-NEXT:    func.return %s, %y
func.func @exp_read_before_consumer(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %e = "aotk.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %s = "aotk.reduce_sum"(%e) <{axes = array<i64: 0>, keepdims = false}> : (tensor<4xf32>) -> tensor<f32>
  %y = "aotk.neg"(%e) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %s, %y : tensor<f32>, tensor<4xf32>
}

// -----

// Neither place works when a reader comes before the consumer and the consumer also
// reads a value made after the producer: the two stay apart.
// CHECK-LABEL: func.func @exp_read_between
// CHECK-NEXT:    %e = "aotk.exp"(%x)
// CHECK-NEXT:    %s = "aotk.reduce_sum"(%e)
// CHECK-NEXT:    %z = "aotk.reduce_sum"(%m)
// CHECK-NEXT:    %y = "aotk.mul"(%e, %z)
func.func @exp_read_between(%x: tensor<4xf32>, %m: tensor<2x4xf32>) -> (tensor<f32>, tensor<4xf32>) {
  %e = "aotk.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %s = "aotk.reduce_sum"(%e) <{axes = array<i64: 0>, keepdims = false}> : (tensor<4xf32>) -> tensor<f32>
  %z = "aotk.reduce_sum"(%m) <{axes = array<i64: 0>, keepdims = false}> : (tensor<2x4xf32>) -> tensor<4xf32>
  %y = "aotk.mul"(%e, %z) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %s, %y : tensor<f32>, tensor<4xf32>
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
