// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops | filecheck %s

// Tanh of 4x8 and of 2x3x5: one function of the element count, 32 and then 30, on
// buffers taken as memref<?xf32>.
// CHECK-LABEL: func.func @two_shapes(
// CHECK-DAG:     %[[N30:.*]] = arith.constant 30 : index
// CHECK-DAG:     %[[N32:.*]] = arith.constant 32 : index
// CHECK:         %[[X:.*]] = ptr_xdsl.to_ptr %x : memref<32xf32> -> !ptr_xdsl.ptr
// CHECK-NEXT:    %[[XD:.*]] = ptr_xdsl.from_ptr %[[X]] : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NEXT:    func.call @two_shapes_op0(%{{.*}}, %[[XD]], %[[N32]]) : (memref<?xf32>, memref<?xf32>, index) -> ()
// CHECK:         func.call @two_shapes_op0(%{{.*}}, %{{.*}}, %[[N30]])
// CHECK-NEXT:    func.return
// Its flat loop runs in chunks up to the count; the chunks' count is computed.
// CHECK:       func.func private @two_shapes_op0(%{{.*}}: memref<?xf32>, %{{.*}}: memref<?xf32>, %[[N:.*]]: index) attributes {aotk.shared_loops, aotk.alias_classes = array<i64: 0, 1, -1>} {
// CHECK:         %[[CHUNKS:.*]] = arith.divui
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[CHUNKS]]
// CHECK:           arith.minsi %{{.*}}, %[[N]] : index
// CHECK:           math.absf
// CHECK:       } {aotk.parallel = 5 : i64}
func.func @two_shapes(%x: tensor<4x8xf32>, %y: tensor<2x3x5xf32>) -> (tensor<4x8xf32>, tensor<2x3x5xf32>) {
  %a = "aotk.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = "aotk.tanh"(%y) : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  func.return %a, %b : tensor<4x8xf32>, tensor<2x3x5xf32>
}

// -----

// A per-channel scale at 2x4x8 and at 3x5x8: one nest over three dims, the channels one
// size for the input and the scale. Its outer loop is costed at the first op's sizes
// (a trip of 4 x 8 elements, 8 ops each: the offset is computed once for the input and
// the output), so it is worth threads from 2^18 / 256 = 1024 trips.
// CHECK-LABEL: func.func @channels(
// CHECK:         func.call @channels_op0(%{{.*}}, %{{.*}}, %{{.*}}, %[[A:.*]], %[[B:.*]], %[[C:.*]]) : (memref<?xf32>, memref<?xf32>, memref<?xf32>, index, index, index) -> ()
// CHECK:         func.call @channels_op0(
// CHECK:       func.func private @channels_op0(%{{.*}}: memref<?xf32>, %[[IN:.*]]: memref<?xf32>, %[[SCALE:.*]]: memref<?xf32>, %[[D0:.*]]: index, %[[D1:.*]]: index, %[[D2:.*]]: index)
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[D0]]
// CHECK-NEXT:      scf.for %{{.*}} = %{{.*}} to %[[D1]]
// CHECK-NEXT:        scf.for %[[CH:.*]] = %{{.*}} to %[[D2]]
// CHECK:               memref.load %[[IN]]
// CHECK:               memref.load %[[SCALE]][%[[CH]]]
// CHECK:               arith.mulf
// CHECK:       } {aotk.parallel = 1024 : i64}
func.func @channels(%x: tensor<2x4x8xf32>, %s: tensor<8xf32>, %y: tensor<3x5x8xf32>, %t: tensor<8xf32>) -> (tensor<2x4x8xf32>, tensor<3x5x8xf32>) {
  %a = "aotk.mul"(%x, %s) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %b = "aotk.mul"(%y, %t) : (tensor<3x5x8xf32>, tensor<8xf32>) -> tensor<3x5x8xf32>
  func.return %a, %b : tensor<2x4x8xf32>, tensor<3x5x8xf32>
}

// -----

// Alone in its form, the tanh is put back in place, its count the constant 32 again.
// CHECK-LABEL: func.func @alone(
// CHECK-NOT:     func.call
// CHECK:         arith.constant 32 : index
// CHECK:         math.absf
// CHECK-NOT:   aotk.shared_loops
func.func @alone(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %a = "aotk.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %a : tensor<4x8xf32>
}
