// RUN: aotk-opt %s --split-input-file --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// argmax along float rows, rows split across threads: the maximum without NaNs in four
// vectors of 8 and a scalar rest, then one loop for the first index holding it and the
// first NaN; a NaN found wins.
// CHECK-LABEL: func.func @rows(
// CHECK:         scf.for
// CHECK:           scf.for {{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-COUNT-4:     arith.cmpf ogt, {{.*}} : vector<8xf32>
// CHECK:           vector.reduction <maxnumf>, {{.*}} : vector<8xf32> into f32
// CHECK:           %[[BEST:.*]], %[[NAN:.*]] = scf.for {{.*}} -> (index, index) {
// CHECK:             arith.cmpf oeq
// CHECK:             arith.cmpf uno
// CHECK:           %[[FOUND:.*]] = arith.cmpi ult, %[[NAN]],
// CHECK:           arith.select %[[FOUND]], %[[NAN]], %[[BEST]] : index
// CHECK:         } {aotk.parallel = {{[0-9]+}} : i64}
func.func @rows(%x: tensor<?x100xf32>) -> tensor<?xi64> {
  %y = "aotk.argmax"(%x) <{axis = 1 : i64}> : (tensor<?x100xf32>) -> tensor<?xi64>
  func.return %y : tensor<?xi64>
}

// -----

// argmin down axis 0 of [?, 40] float64: blocks of two vectors of the 40 columns walk
// the rows once, a best value and its index per lane in registers (an unordered compare
// takes a NaN; a NaN best stays). 40 is whole blocks: no masked edge.
// CHECK-LABEL: func.func @columns(
// CHECK-NOT:     vector.maskedload
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (vector<4xf64>, vector<4xf64>, vector<4xi64>, vector<4xi64>) {
// CHECK:           arith.cmpf ult, {{.*}} : vector<4xf64>
// CHECK:           arith.cmpf uno, {{.*}} : vector<4xf64>
// CHECK:         vector.store {{.*}}, %out0[{{.*}}] : memref<40xi64>, vector<4xi64>
// CHECK:         vector.store {{.*}}, %out0[{{.*}}] : memref<40xi64>, vector<4xi64>
func.func @columns(%x: tensor<?x40xf64>) -> tensor<40xi64> {
  %y = "aotk.argmin"(%x) <{axis = 0 : i64}> : (tensor<?x40xf64>) -> tensor<40xi64>
  func.return %y : tensor<40xi64>
}

// -----

// 37 columns end in a partial block: its lanes are masked.
// CHECK-LABEL: func.func @ragged(
// CHECK:         scf.if
// CHECK:         } else {
// CHECK:           vector.create_mask
// CHECK:           vector.maskedload
// CHECK:           vector.maskedstore
func.func @ragged(%x: tensor<?x37xf32>) -> tensor<37xi64> {
  %y = "aotk.argmax"(%x) <{axis = 0 : i64}> : (tensor<?x37xf32>) -> tensor<37xi64>
  func.return %y : tensor<37xi64>
}
