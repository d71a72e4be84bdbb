// sum(tanh(x * 1 + b), axis=1) through each named stage of aotk.lowering.pipeline.
// RUN: aotk-opt %s --aotk-stage=graph | filecheck %s --check-prefix=GRAPH
// RUN: aotk-opt %s --aotk-stage=loops | filecheck %s --check-prefix=LOOPS
// RUN: aotk-opt %s --aotk-stage=llvm -t llvm | filecheck %s --check-prefix=IR

// Stage graph: x * 1 is gone, add and tanh are one kernel, the reduction stays.
// GRAPH-LABEL: func.func @reduce_sum_of_tanh(
// GRAPH-NEXT:    %t = aotk.fused(%{{.*}} = %x, %{{.*}} = %b) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> {
// GRAPH:           "aotk.add"
// GRAPH-NEXT:      "aotk.tanh"
// GRAPH-NEXT:      aotk.yield %{{.*}} : tensor<f32>
// GRAPH-NEXT:    }
// GRAPH-NEXT:    %y = "aotk.reduce_sum"(%t) <{axes = array<i64: 1>, keepdims = false}>
// GRAPH-NEXT:    func.return %y : tensor<?xf32>

// Stage loops: the kernel ABI on memrefs. Each kernel is a function of its own, called
// with the buffers it uses; the first kernel's result lives in the workspace.
// LOOPS-LABEL: func.func @reduce_sum_of_tanh(
// LOOPS-SAME:      %x: memref<?xf32>, %b: memref<4xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64)
// LOOPS-NOT:     "aotk.
// LOOPS:         %[[T:.*]] = ptr_xdsl.from_ptr %workspace
// LOOPS-NEXT:    func.call @reduce_sum_of_tanh_k0(%[[N:[0-9]+]], %x, %b, %[[T]])
// LOOPS-NEXT:    func.call @reduce_sum_of_tanh_k1(%[[N]], %[[T]], %out0)
// LOOPS-NEXT:    func.return
// LOOPS-LABEL: func.func private @reduce_sum_of_tanh_k0(
// LOOPS-SAME:      %{{[0-9]+}}: memref<4xf32>, %[[K0T:[0-9]+]]: memref<?xf32>)
// LOOPS:         scf.for
// LOOPS:           memref.store %{{.*}}, %[[K0T]][
// LOOPS-LABEL: func.func private @reduce_sum_of_tanh_k1(
// LOOPS-SAME:      %[[K1T:[0-9]+]]: memref<?xf32>, %[[K1O:[0-9]+]]: memref<?xf32>)
// LOOPS:         scf.for
// LOOPS:           memref.load %[[K1T]][
// LOOPS:         memref.store %{{.*}}, %[[K1O]][
// LOOPS-NOT:     "aotk.
// LOOPS-LABEL: func.func @reduce_sum_of_tanh_workspace_size(%{{.*}}: i64) -> i64

// Stage llvm (its last pass checks that only llvm ops are left), printed as LLVM IR by
// xDSL's -t llvm: addresses are GEPs typed by the element, not ptrtoint/inttoptr arithmetic.
// IR:          define void @"reduce_sum_of_tanh"(ptr noalias %{{.*}}, ptr noalias %{{.*}}, ptr noalias %{{.*}}, ptr noalias %{{.*}}, i64 %{{.*}})
// IR-NOT:      inttoptr
// IR:          getelementptr inbounds float, ptr
// IR-NOT:      inttoptr
// IR:          define i64 @"reduce_sum_of_tanh_workspace_size"(i64 %{{.*}})
func.func @reduce_sum_of_tanh(%x: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?xf32> {
  %one = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %xs = "aotk.mul"(%x, %one) : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32>
  %z = "aotk.add"(%xs, %b) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %t = "aotk.tanh"(%z) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %y = "aotk.reduce_sum"(%t) <{axes = array<i64: 1>, keepdims = false}> : (tensor<?x4xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
