// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// The fused row softmax: one parallel loop over the rows, and in it three passes over a
// row (which stays in cache): its maximum, exp(x - max) stored and summed, and a scale
// by 1 / sum. The input is read from memory once, the output written once. The maximum
// reads four vectors a step, each kept by `x > m ? x : m` (one vmaxps); 1024 is a whole
// number of steps, so no scalar rest follows.
// CHECK-LABEL: func.func @softmax_rows(
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-COUNT-4:       %{{.*}} = vector.load %x[{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:          %[[GT:.*]] = arith.cmpf ogt, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:          %{{.*}} = arith.select %[[GT]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           %[[MAX:.*]] = vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK-NOT:       memref.load
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

// A row of 70: two steps of 32, then the last 6 elements one by one.
// CHECK-LABEL: func.func @softmax_rest(
// CHECK:           vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK-NEXT:      %{{.*}} = scf.for %{{.*}} = %[[FROM:.*]] to %{{.*}} step %{{.*}} iter_args(%[[M:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %x[
// CHECK-NEXT:        %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[M]] : f32
// CHECK-NEXT:        %[[M2:.*]] = arith.select %[[GT]], %[[X]], %[[M]] : f32
// CHECK-NEXT:        scf.yield %[[M2]] : f32
func.func @softmax_rest(%x: tensor<?x70xf32>) -> tensor<?x70xf32> {
  %y = "aotk.softmax"(%x) : (tensor<?x70xf32>) -> tensor<?x70xf32>
  func.return %y : tensor<?x70xf32>
}
