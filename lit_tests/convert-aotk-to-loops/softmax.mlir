// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// The fused row softmax: one parallel loop over the rows, and in it three passes over a
// row (which stays in cache): its maximum, exp(x - max) stored and summed, and a scale
// by 1 / sum. The input is read from memory once, the output written once.
// CHECK-LABEL: func.func @softmax_rows(
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[MAX:.*]] = scf.for %{{.*}} iter_args(%[[M:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %x[
// CHECK-NEXT:        %[[M2:.*]] = arith.maximumf %[[M]], %[[X]] : f32
// CHECK-NEXT:        scf.yield %[[M2]] : f32
// CHECK:           %[[SUM:.*]] = scf.for %{{.*}} iter_args(%[[S:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[X2:.*]] = memref.load %x[
// CHECK-NEXT:        %{{.*}} = arith.subf %[[X2]], %[[MAX]] : f32
// CHECK:             memref.store %[[E:.*]], %out0[
// CHECK-NEXT:        %[[S2:.*]] = arith.addf %[[S]], %[[E]] fastmath<reassoc> : f32
// CHECK-NEXT:        scf.yield %[[S2]] : f32
// CHECK:           %[[SCALE:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:           scf.for
// CHECK:             %[[Y:.*]] = memref.load %out0[
// CHECK-NEXT:        %[[Z:.*]] = arith.mulf %[[Y]], %[[SCALE]] : f32
// CHECK-NEXT:        memref.store %[[Z]], %out0[
// CHECK:         } {aotk.parallel = {{[0-9]+}} : i64}
// CHECK-NOT:     memref.load %x[
func.func @softmax_rows(%x: tensor<?x1024xf32>) -> tensor<?x1024xf32> {
  %y = "aotk.softmax"(%x) : (tensor<?x1024xf32>) -> tensor<?x1024xf32>
  func.return %y : tensor<?x1024xf32>
}
