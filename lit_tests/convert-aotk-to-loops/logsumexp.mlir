// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// The fused row logsumexp: one parallel loop over the rows, and in it two passes over a
// row: its maximum (in vectors, as softmax's), then the sum of exp(x - shift), where the
// shift is the maximum if it is finite and 0 otherwise; the row's result is
// log(sum) + shift. The exponentials are softmax's (four vectors of 8 lanes a step, a
// table of 2**(j/8) read by a lane permute), of x - shift capped at 0, so a row whose
// maximum is +inf sums exponentials of at most 1: its result is set apart, +inf (or NaN
// if the sum is NaN, as 0 * sum is then). Nothing but the results is written.
// CHECK-LABEL: func.func @logsumexp_rows(
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:           %[[MAX:.*]] = vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK:           %[[ABS:.*]] = math.absf %[[MAX]] : f32
// CHECK:           %[[FINITE:.*]] = arith.cmpf olt, %[[ABS]], %{{.*}} : f32
// CHECK:           %[[SHIFT:.*]] = arith.select %[[FINITE]], %[[MAX]], %{{.*}} : f32
// CHECK-NEXT:      %[[TOP:.*]] = vector.broadcast %[[SHIFT]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %{{.*}} = vector.broadcast %[[NEGINF]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[Z0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[ZERO:.*]] = vector.broadcast %[[Z0]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[SUM:.*]] = scf.for %{{.*}} iter_args(%[[S:.*]] = %[[ZERO]]) -> (vector<8xf32>) {
// CHECK-COUNT-4:       %{{.*}} = vector.load %x[{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:        %[[D:.*]] = arith.subf %{{.*}}, %[[TOP]] : vector<8xf32>
// CHECK-NEXT:        %[[POS:.*]] = arith.cmpf ogt, %[[D]], %[[ZERO]] : vector<8xf32>
// CHECK-NEXT:        %{{.*}} = arith.select %[[POS]], %[[ZERO]], %[[D]] : vector<8xf32>
// CHECK:             llvm.call_intrinsic "llvm.aotk.lane_permute.v8f32"
// CHECK-NOT:         vector.store
// CHECK:             %{{.*}} = arith.addf %[[S]], %{{.*}} fastmath<reassoc> : vector<8xf32>
// CHECK:             scf.yield
// CHECK:           %[[TOTAL:.*]] = vector.reduction <add>, %[[SUM]] fastmath<reassoc> : vector<8xf32> into f32
// CHECK:           %[[R:.*]] = arith.addf %{{.*}}, %[[SHIFT]] : f32
// CHECK-NEXT:      %[[PLUS_INF:.*]] = arith.constant 0x7f800000 : f32
// CHECK-NEXT:      %[[INF:.*]] = arith.cmpf oeq, %[[MAX]], %[[PLUS_INF]] : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[NZ:.*]] = arith.mulf %[[Z]], %[[TOTAL]] : f32
// CHECK-NEXT:      %[[OVER:.*]] = arith.addf %[[MAX]], %[[NZ]] : f32
// CHECK-NEXT:      %[[RES:.*]] = arith.select %[[INF]], %[[OVER]], %[[R]] : f32
// CHECK-NEXT:      memref.store %[[RES]], %out0[%[[ROW]]] : memref<?xf32>
// CHECK:         } {aotk.parallel = {{[0-9]+}} : i64}
func.func @logsumexp_rows(%x: tensor<?x1024xf32>) -> tensor<?xf32> {
  %y = "aotk.logsumexp"(%x) : (tensor<?x1024xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
