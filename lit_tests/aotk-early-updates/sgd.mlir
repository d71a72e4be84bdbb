// RUN: aotk-opt %s --split-input-file -p aotk-early-updates | filecheck %s

// Two layers' SGD updates, traced after both gradients and the rate: the rate (rank 0)
// goes first; w2's update, with the step only it reads, right after its gradient and
// the last read of w2 (%dh), before w1's gradient; w1's stays after its own.
// CHECK-LABEL: func.func @two_layers
// CHECK-NEXT:    %rate = "aotk.neg"(%lr)
// CHECK-NEXT:    %h = "aotk.matmul"(%x, %w1)
// CHECK-NEXT:    %y = "aotk.matmul"(%h, %w2)
// CHECK-NEXT:    %dh = "aotk.matmul"(%y, %w2)
// CHECK-NEXT:    %g2 = "aotk.matmul"(%h, %y)
// CHECK-NEXT:    %step2 = "aotk.mul"(%rate, %g2)
// CHECK-NEXT:    %new2 = "aotk.add"(%w2, %step2)
// CHECK-NEXT:    %g1 = "aotk.matmul"(%x, %dh)
// CHECK-NEXT:    %step1 = "aotk.mul"(%rate, %g1)
// CHECK-NEXT:    %new1 = "aotk.add"(%w1, %step1)
// CHECK-NEXT:    func.return %new1, %new2
func.func @two_layers(%x: tensor<?x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x8xf32>, %lr: tensor<f32>) -> (tensor<8x16xf32>, tensor<16x8xf32>) attributes {aotk.updates = array<i64: 0, 1, 1, 2>} {
  %h = "aotk.matmul"(%x, %w1) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %y = "aotk.matmul"(%h, %w2) : (tensor<?x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  %dh = "aotk.matmul"(%y, %w2) <{transpose_rhs = true}> : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %g2 = "aotk.matmul"(%h, %y) <{transpose_lhs = true}> : (tensor<?x16xf32>, tensor<?x8xf32>) -> tensor<16x8xf32>
  %g1 = "aotk.matmul"(%x, %dh) <{transpose_lhs = true}> : (tensor<?x8xf32>, tensor<?x16xf32>) -> tensor<8x16xf32>
  %rate = "aotk.neg"(%lr) : (tensor<f32>) -> tensor<f32>
  %step1 = "aotk.mul"(%rate, %g1) : (tensor<f32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %new1 = "aotk.add"(%w1, %step1) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %step2 = "aotk.mul"(%rate, %g2) : (tensor<f32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  %new2 = "aotk.add"(%w2, %step2) : (tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<16x8xf32>
  func.return %new1, %new2 : tensor<8x16xf32>, tensor<16x8xf32>
}

// -----

// The old w is returned too: the update is not written in place, and nothing moves.
// CHECK-LABEL: func.func @old_value_returned
// CHECK-NEXT:    %g = "aotk.matmul"(%x, %x)
// CHECK-NEXT:    %late = "aotk.exp"(%x)
// CHECK-NEXT:    %new = "aotk.sub"(%w, %g)
// CHECK-NEXT:    func.return %new, %w, %late
func.func @old_value_returned(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) attributes {aotk.updates = array<i64: 0, 1>} {
  %g = "aotk.matmul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %late = "aotk.exp"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %new = "aotk.sub"(%w, %g) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %new, %w, %late : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// A print (not pure) that only the update reads stays where it is, and so does the update.
// CHECK-LABEL: func.func @effect
// CHECK-NEXT:    %g = "aotk.matmul"(%x, %x)
// CHECK-NEXT:    %late = "aotk.exp"(%x)
// CHECK-NEXT:    %shown = "aotk.print_tensor"(%g)
// CHECK-NEXT:    %new = "aotk.sub"(%w, %shown)
func.func @effect(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) attributes {aotk.updates = array<i64: 0, 1>} {
  %g = "aotk.matmul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %late = "aotk.exp"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %shown = "aotk.print_tensor"(%g) <{message = "g"}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %new = "aotk.sub"(%w, %shown) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  func.return %new, %late : tensor<4x4xf32>, tensor<4x4xf32>
}
