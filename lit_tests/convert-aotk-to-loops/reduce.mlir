// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops | filecheck %s

// Reducing the last axis: each output element accumulates in a loop-carried register;
// a float sum may be reassociated, so that LLVM vectorizes it into per-lane partial sums.
// CHECK-LABEL: func.func @reduce_sum_last(
// CHECK-SAME:      %x: memref<?xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64)
// CHECK:         %[[N:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[N]] step
// CHECK:           %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:           %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK:             %[[V:.*]] = memref.load %x[
// CHECK-NEXT:        %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V]] fastmath<reassoc> : f32
// CHECK-NEXT:        scf.yield %[[NEXT]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      memref.store %[[SUM]], %out0[%[[I]]] : memref<?xf32>
func.func @reduce_sum_last(%x: tensor<?x4xf32>) -> tensor<?xf32> {
  %y = "aotk.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<?x4xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// -----

// Reducing a leading axis: initialise the output to -inf, then sweep the input in
// memory order so the inner loop stays contiguous.
// CHECK-LABEL: func.func @reduce_max_first(
// CHECK-SAME:      %x: memref<12xf32>, %out0: memref<4xf32>
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:      %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      memref.store %[[NEGINF]], %out0[%[[I]]] : memref<4xf32>
// CHECK:         scf.for
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        %[[OLD:.*]] = memref.load %out0[%[[J]]] : memref<4xf32>
// CHECK:             %[[V:.*]] = memref.load %x[
// CHECK-NEXT:        %[[MAX:.*]] = arith.maximumf %[[OLD]], %[[V]] : f32
// CHECK-NEXT:        memref.store %[[MAX]], %out0[%[[J]]] : memref<4xf32>
func.func @reduce_max_first(%x: tensor<3x4xf32>) -> tensor<1x4xf32> {
  %y = "aotk.reduce_max"(%x) <{axes = array<i64: 0>, keepdims = true}> : (tensor<3x4xf32>) -> tensor<1x4xf32>
  func.return %y : tensor<1x4xf32>
}
