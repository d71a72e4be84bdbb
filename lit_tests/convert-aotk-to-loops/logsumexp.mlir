// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// The fused row logsumexp: one parallel loop over the rows, and in it two passes over a
// row: its maximum (in vectors, as softmax's), then the sum of exp(x - shift), where the shift is the maximum if it
// is finite and 0 otherwise; the row's result is log(sum) + shift. Nothing but the
// results is written.
// CHECK-LABEL: func.func @logsumexp_rows(
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:           %[[MAX:.*]] = vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK:           %[[ABS:.*]] = math.absf %[[MAX]] : f32
// CHECK:           %[[FINITE:.*]] = arith.cmpf olt, %[[ABS]], %{{.*}} : f32
// CHECK:           %[[SHIFT:.*]] = arith.select %[[FINITE]], %[[MAX]], %{{.*}} : f32
// CHECK:           %[[SUM:.*]] = scf.for %{{.*}} iter_args(%[[S:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[X2:.*]] = memref.load %x[
// CHECK-NEXT:        %{{.*}} = arith.subf %[[X2]], %[[SHIFT]] : f32
// CHECK-NOT:         memref.store
// CHECK:             %[[S2:.*]] = arith.addf %[[S]], %{{.*}} fastmath<reassoc> : f32
// CHECK-NEXT:        scf.yield %[[S2]] : f32
// CHECK:           %[[LOG:.*]] = {{.*}}%[[SUM]]
// CHECK:           %[[R:.*]] = arith.addf %{{.*}}, %[[SHIFT]] : f32
// CHECK-NEXT:      memref.store %[[R]], %out0[%[[ROW]]] : memref<?xf32>
// CHECK:         } {aotk.parallel = {{[0-9]+}} : i64}
func.func @logsumexp_rows(%x: tensor<?x1024xf32>) -> tensor<?xf32> {
  %y = "aotk.logsumexp"(%x) : (tensor<?x1024xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
