// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops | filecheck %s

// Two row sums of one form (a 4x8 buffer in, a new one out): at the second, the loops of
// the first become a function, which both call; the add (elementwise, alone in its form:
// generic_loops) stays in place.
// CHECK-LABEL: func.func @two_sums(
// CHECK:         %[[A:.*]] = ptr_xdsl.from_ptr
// CHECK-NEXT:    func.call @two_sums_op0(%[[A]], %x) : (memref<4xf32>, memref<32xf32>) -> ()
// CHECK:         %[[B:.*]] = ptr_xdsl.from_ptr
// CHECK-NEXT:    func.call @two_sums_op0(%[[B]], %y) : (memref<4xf32>, memref<32xf32>) -> ()
// CHECK-NOT:     func.call
// CHECK:         scf.for
// CHECK:           memref.load %[[A]]
// CHECK:           memref.load %[[B]]
// CHECK:           arith.addf
// CHECK:         func.return
// Output and input come from different arguments of the entry (its workspace, and %x or
// %y): aliasing classes 0 and 1, so the kernels may take both as noalias.
// CHECK:       func.func private @two_sums_op0(%{{.*}}: memref<4xf32>, %[[IN:.*]]: memref<32xf32>) attributes {aotk.shared_loops, aotk.alias_classes = array<i64: 0, 1>} {
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             memref.load %[[IN]]
// CHECK:         func.return
// CHECK-NOT:   @two_sums_op1
func.func @two_sums(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4xf32> {
  %a = "aotk.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<4x8xf32>) -> tensor<4xf32>
  %b = "aotk.reduce_sum"(%y) <{axes = array<i64: 1>, keepdims = false}> : (tensor<4x8xf32>) -> tensor<4xf32>
  %c = "aotk.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// Row sums of two shapes: two forms, each emitted in place.
// CHECK-LABEL: func.func @two_shapes(
// CHECK-NOT:     func.call
// CHECK:         arith.addf
// CHECK:         arith.addf
// CHECK:         func.return
// CHECK-NOT:   aotk.shared_loops
func.func @two_shapes(%x: tensor<4x8xf32>, %y: tensor<8x8xf32>) -> (tensor<4xf32>, tensor<8xf32>) {
  %a = "aotk.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<4x8xf32>) -> tensor<4xf32>
  %b = "aotk.reduce_sum"(%y) <{axes = array<i64: 1>, keepdims = false}> : (tensor<8x8xf32>) -> tensor<8xf32>
  func.return %a, %b : tensor<4xf32>, tensor<8xf32>
}
