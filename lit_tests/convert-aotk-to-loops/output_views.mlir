// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops | filecheck %s

// An output that reshapes a value computed here (K.repeat_elements is a broadcast
// between two reshapes) has the value computed straight into the output buffer: the
// broadcast stores into %out0, with no workspace and no copy loop after it.
// CHECK-LABEL: func.func @repeat_elements(
// CHECK-SAME:      %x: memref<12xf32>, %out0: memref<24xf32>, %workspace: !ptr_xdsl.ptr)
// CHECK-NOT:     ptr_xdsl.from_ptr %workspace
// CHECK:         memref.store %{{.*}}, %out0[%{{.*}}] : memref<24xf32>
// CHECK-NOT:     memref.store
// CHECK:         func.return
// CHECK-LABEL: func.func @repeat_elements_workspace_size() -> i64
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-NEXT:    %[[SIZE:.*]] = arith.index_cast %[[ZERO]] : index to i64
// CHECK-NEXT:    func.return %[[SIZE]] : i64
func.func @repeat_elements(%x: tensor<4x3xf32>) -> tensor<4x6xf32> {
  %v = "aotk.reshape"(%x) <{shape = array<i64: 4, 3, 1>}> : (tensor<4x3xf32>) -> tensor<4x3x1xf32>
  %b = "aotk.broadcast_to"(%v) <{shape = array<i64: -1, -1, 2>}> : (tensor<4x3x1xf32>) -> tensor<4x3x2xf32>
  %y = "aotk.reshape"(%b) <{shape = array<i64: 4, 6>}> : (tensor<4x3x2xf32>) -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// -----

// Returned through two views, the value is computed into the first output and copied
// into the second; a view of an argument is copied as before.
// CHECK-LABEL: func.func @shared(
// CHECK:         memref.store %{{.*}}, %out0[
// CHECK:         scf.for
// CHECK:           memref.load %out0[
// CHECK:           memref.store %{{.*}}, %out1[
// CHECK:         scf.for
// CHECK:           memref.load %x[
// CHECK:           memref.store %{{.*}}, %out2[
func.func @shared(%x: tensor<4x3xf32>) -> (tensor<12xf32>, tensor<3x4xf32>, tensor<12xf32>) {
  %t = "aotk.neg"(%x) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %a = "aotk.reshape"(%t) <{shape = array<i64: 12>}> : (tensor<4x3xf32>) -> tensor<12xf32>
  %b = "aotk.reshape"(%t) <{shape = array<i64: 3, 4>}> : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %c = "aotk.reshape"(%x) <{shape = array<i64: 12>}> : (tensor<4x3xf32>) -> tensor<12xf32>
  func.return %a, %b, %c : tensor<12xf32>, tensor<3x4xf32>, tensor<12xf32>
}
