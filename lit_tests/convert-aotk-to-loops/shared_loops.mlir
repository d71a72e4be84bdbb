// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops | filecheck %s

// Two tanh of one form (a 4x8 buffer in, a new one out): at the second, the loops of the
// first become a function, which both call; the add, of another form, stays in place.
// CHECK-LABEL: func.func @two_tanh(
// CHECK:         %[[A:.*]] = ptr_xdsl.from_ptr
// CHECK-NEXT:    func.call @two_tanh_op0(%[[A]], %x) : (memref<32xf32>, memref<32xf32>) -> ()
// CHECK:         %[[B:.*]] = ptr_xdsl.from_ptr
// CHECK-NEXT:    func.call @two_tanh_op0(%[[B]], %y) : (memref<32xf32>, memref<32xf32>) -> ()
// CHECK-NOT:     math.absf
// CHECK:         scf.for
// CHECK:           memref.load %[[A]]
// CHECK:           memref.load %[[B]]
// CHECK:           arith.addf
// CHECK:         func.return
// Output and input come from different arguments of the entry (its workspace, and %x or
// %y): aliasing classes 0 and 1, so the kernels may take both as noalias.
// CHECK:       func.func private @two_tanh_op0(%{{.*}}: memref<32xf32>, %[[IN:.*]]: memref<32xf32>) attributes {aotk.shared_loops, aotk.alias_classes = array<i64: 0, 1>} {
// CHECK:         scf.for
// CHECK:           memref.load %[[IN]]
// CHECK:           math.absf
// CHECK:         func.return
// CHECK-NOT:   @two_tanh_op1
func.func @two_tanh(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = "aotk.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = "aotk.tanh"(%y) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = "aotk.add"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}

// -----

// Tanh of two shapes: two forms, each emitted in place.
// CHECK-LABEL: func.func @two_shapes(
// CHECK-NOT:     func.call
// CHECK:         math.absf
// CHECK:         math.absf
// CHECK:         func.return
// CHECK-NOT:   aotk.shared_loops
func.func @two_shapes(%x: tensor<4x8xf32>, %y: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<8x8xf32>) {
  %a = "aotk.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = "aotk.tanh"(%y) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  func.return %a, %b : tensor<4x8xf32>, tensor<8x8xf32>
}
