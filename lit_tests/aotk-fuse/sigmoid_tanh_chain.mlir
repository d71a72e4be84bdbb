// The acceptance chain tanh(x*a + b) * sigmoid(x) + x*x, sigmoid(x) = 1 / (1 + exp(-x)):
// one aotk.fused kernel, then one loop with one load per distinct input and one store
// (run in chunks of 4096 elements by an outer loop that threads may share).
// (Static shapes: with dynamic ones the loop is versioned, see convert-aotk-to-loops.)
// RUN: aotk-opt %s -p aotk-fuse | filecheck %s --check-prefix=FUSED
// RUN: aotk-opt %s -p aotk-fuse,convert-aotk-to-loops | filecheck %s --check-prefix=LOOPS

// FUSED-LABEL: func.func @fused_sigmoid_tanh_chain
// FUSED-NEXT:    %y = aotk.fused(%{{.*}} = %x, %{{.*}} = %a, %{{.*}} = %b) : (tensor<4194304xf32>, tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32> {
// FUSED-NOT:       aotk.fused
// FUSED-DAG:       "aotk.tanh"
// FUSED-DAG:       "aotk.exp"
// FUSED-DAG:       "aotk.div"
// FUSED:           aotk.yield %{{.*}} : tensor<f32>
// FUSED-NEXT:    }
// FUSED-NEXT:    func.return %y : tensor<4194304xf32>

// filecheck 1.0.6 checks a CHECK-NOT up to the end of the next match, so each NOT
// below excludes only what that next line cannot contain.
// LOOPS-LABEL: func.func @fused_sigmoid_tanh_chain(
// LOOPS-NOT:     memref.{{load|store}}
// LOOPS:         scf.for
// LOOPS-NOT:     memref.{{load|store}}
// LOOPS:         scf.for
// LOOPS-NOT:     {{scf.for|memref.store}}
// LOOPS:         memref.load %x[
// LOOPS-NOT:     {{scf.for|memref.store|memref.load %x}}
// LOOPS:         memref.load %a[
// LOOPS-NOT:     {{scf.for|memref.store|memref.load %[xa]}}
// LOOPS:         memref.load %b[
// LOOPS-NOT:     {{scf.for|memref.load}}
// LOOPS:         memref.store %{{.*}}, %out0[
// LOOPS-NEXT:    }
// LOOPS-NEXT:    } {aotk.parallel = {{[0-9]+}} : i64}
// LOOPS-NEXT:    func.return
// LOOPS-LABEL: func.func @fused_sigmoid_tanh_chain_workspace_size
func.func @fused_sigmoid_tanh_chain(%x: tensor<4194304xf32>, %a: tensor<4194304xf32>, %b: tensor<4194304xf32>) -> tensor<4194304xf32> {
  %xa = "aotk.mul"(%x, %a) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %xab = "aotk.add"(%xa, %b) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %t = "aotk.tanh"(%xab) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %one = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %nx = "aotk.neg"(%x) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %e = "aotk.exp"(%nx) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %den = "aotk.add"(%one, %e) : (tensor<f32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %sig = "aotk.div"(%one, %den) : (tensor<f32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %ts = "aotk.mul"(%t, %sig) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %xx = "aotk.mul"(%x, %x) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %y = "aotk.add"(%ts, %xx) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  func.return %y : tensor<4194304xf32>
}
