// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops | filecheck %s

// Tensors become flat memrefs plus an output and a workspace; a broadcast operand is
// indexed by the inner loop only.
// CHECK-LABEL: func.func @add_broadcast(
// CHECK-SAME:      %x: memref<12xf32>, %b: memref<4xf32>, %out0: memref<12xf32>, %workspace: !ptr_xdsl.ptr)
// CHECK-SAME:      attributes {aotk.kernel = array<i64: 2, 1>}
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             %[[IJ:.*]] = arith.addi %{{.*}}, %[[J]] : index
// CHECK-NEXT:        %[[X:.*]] = memref.load %x[%[[IJ]]] : memref<12xf32>
// CHECK-NEXT:        %[[B:.*]] = memref.load %b[%[[J]]] : memref<4xf32>
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[X]], %[[B]] : f32
// CHECK:             memref.store %[[S]], %out0[%{{.*}}] : memref<12xf32>
// CHECK:         func.return
// CHECK-LABEL: func.func @add_broadcast_workspace_size() -> i64
func.func @add_broadcast(%x: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %y = "aotk.add"(%x, %b) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// A scalar operand (a learning rate) leaves the loop flat: it is loaded once, before
// the loop, whose chunks threads share.
// CHECK-LABEL: func.func @scale_by_a_scalar(
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[LR:.*]] = memref.load %lr[%[[C0]]] : memref<1xf32>
// CHECK:         scf.for
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        %[[G:.*]] = memref.load %g[%[[I]]] : memref<?xf32>
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[G]], %[[LR]] : f32
// CHECK-NEXT:        memref.store %[[P]], %out0[%[[I]]] : memref<?xf32>
// CHECK:         } {aotk.parallel
func.func @scale_by_a_scalar(%g: tensor<?x3x3x8xf32>, %lr: tensor<f32>) -> tensor<?x3x3x8xf32> {
  %y = "aotk.mul"(%g, %lr) : (tensor<?x3x3x8xf32>, tensor<f32>) -> tensor<?x3x3x8xf32>
  func.return %y : tensor<?x3x3x8xf32>
}

// -----

// Each dynamic input dim is an i64 argument. The loop is versioned: one flat contiguous
// loop when the dims match at run time, else a nest where a dim of 1 broadcasts (stride 0).
// CHECK-LABEL: func.func @mul_dynamic(
// CHECK-SAME:      %x: memref<?xf32>, %z: memref<?xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64, %dim1: i64)
// CHECK-DAG:     %[[N0:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK-DAG:     %[[N1:.*]] = arith.index_cast %dim1 : i64 to index
// CHECK:         %[[N:.*]] = arith.maxui %[[N0]], %[[N1]] : index
// CHECK:         %[[SAME:.*]] = arith.andi
// CHECK:         scf.if %[[SAME]] {
// CHECK:           scf.for
// CHECK:             scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:          memref.load %x[%[[K]]]
// CHECK-NEXT:          memref.load %z[%[[K]]]
// CHECK-NEXT:          arith.mulf
// CHECK-NEXT:          memref.store %{{.*}}, %out0[%[[K]]]
// CHECK:         } else {
// CHECK:           %[[ONE0:.*]] = arith.cmpi eq, %[[N0]], %{{.*}} : index
// CHECK:           %[[STRIDE0:.*]] = arith.select %[[ONE0]]
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %[[N]] step
// CHECK:             scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:               arith.muli %[[I]], %[[STRIDE0]] : index
// CHECK:               memref.load %x[
// CHECK:               memref.load %z[
// CHECK:               arith.mulf
// CHECK:               memref.store %{{.*}}, %out0[
// CHECK-LABEL: func.func @mul_dynamic_workspace_size(%{{.*}}: i64, %{{.*}}: i64) -> i64
func.func @mul_dynamic(%x: tensor<?x4xf32>, %z: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = "aotk.mul"(%x, %z) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  func.return %y : tensor<?x4xf32>
}

// -----

// A fused kernel is one loop nest running its scalar body; constants become arith ones.
// The flat loop runs in chunks (the outer loop), which threads may share.
// CHECK-LABEL: func.func @fused_scale_neg(
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-NEXT:        %[[X:.*]] = memref.load %x[
// CHECK-NEXT:        %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:        %[[M:.*]] = arith.mulf %[[X]], %[[TWO]] : f32
// CHECK-NEXT:        %[[E:.*]] = arith.negf %[[M]] : f32
// CHECK-NEXT:        memref.store %[[E]], %out0[
// CHECK-NEXT:      }
// CHECK-NEXT:    } {aotk.parallel = {{[0-9]+}} : i64}
// CHECK-NEXT:    func.return
func.func @fused_scale_neg(%x: tensor<?xf32>) -> tensor<?xf32> {
  %y = "aotk.fused"(%x) ({
  ^bb0(%a: tensor<f32>):
    %two = "aotk.constant"() <{value = 2.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
    %m = "aotk.mul"(%a, %two) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %n = "aotk.neg"(%m) : (tensor<f32>) -> tensor<f32>
    "aotk.yield"(%n) : (tensor<f32>) -> ()
  }) : (tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
