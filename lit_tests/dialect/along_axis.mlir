// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the ops along one axis (cumsum, cumprod, argmax, argmin): printed,
// parsed back and printed again, each op keeps its axis and types.

// Scans along one axis keep the shape; argmax and argmin drop the axis and give int64.

// CHECK-LABEL: func.func @cumsum(%x: tensor<?x3x?xf32>, %i: tensor<7xi8>) -> (tensor<?x3x?xf32>, tensor<7xi8>) {
// CHECK-NEXT:    %y = "aotk.cumsum"(%x) <{axis = 1 : i64}> : (tensor<?x3x?xf32>) -> tensor<?x3x?xf32>
// CHECK-NEXT:    %z = "aotk.cumsum"(%i) <{axis = 0 : i64}> : (tensor<7xi8>) -> tensor<7xi8>
// CHECK-NEXT:    func.return %y, %z : tensor<?x3x?xf32>, tensor<7xi8>
// CHECK-NEXT:  }
func.func @cumsum(%x: tensor<?x3x?xf32>, %i: tensor<7xi8>) -> (tensor<?x3x?xf32>, tensor<7xi8>) {
  %y = "aotk.cumsum"(%x) <{axis = 1 : i64}> : (tensor<?x3x?xf32>) -> tensor<?x3x?xf32>
  %z = "aotk.cumsum"(%i) <{axis = 0 : i64}> : (tensor<7xi8>) -> tensor<7xi8>
  func.return %y, %z : tensor<?x3x?xf32>, tensor<7xi8>
}

// CHECK-LABEL: func.func @cumprod(%x: tensor<4x?xf64>) -> tensor<4x?xf64> {
// CHECK-NEXT:    %y = "aotk.cumprod"(%x) <{axis = 1 : i64}> : (tensor<4x?xf64>) -> tensor<4x?xf64>
// CHECK-NEXT:    func.return %y : tensor<4x?xf64>
// CHECK-NEXT:  }
func.func @cumprod(%x: tensor<4x?xf64>) -> tensor<4x?xf64> {
  %y = "aotk.cumprod"(%x) <{axis = 1 : i64}> : (tensor<4x?xf64>) -> tensor<4x?xf64>
  func.return %y : tensor<4x?xf64>
}

// CHECK-LABEL: func.func @argmax(%x: tensor<?x3x4xf16>, %b: tensor<5xi1>) -> (tensor<?x4xi64>, tensor<i64>) {
// CHECK-NEXT:    %y = "aotk.argmax"(%x) <{axis = 1 : i64}> : (tensor<?x3x4xf16>) -> tensor<?x4xi64>
// CHECK-NEXT:    %z = "aotk.argmax"(%b) <{axis = 0 : i64}> : (tensor<5xi1>) -> tensor<i64>
// CHECK-NEXT:    func.return %y, %z : tensor<?x4xi64>, tensor<i64>
// CHECK-NEXT:  }
func.func @argmax(%x: tensor<?x3x4xf16>, %b: tensor<5xi1>) -> (tensor<?x4xi64>, tensor<i64>) {
  %y = "aotk.argmax"(%x) <{axis = 1 : i64}> : (tensor<?x3x4xf16>) -> tensor<?x4xi64>
  %z = "aotk.argmax"(%b) <{axis = 0 : i64}> : (tensor<5xi1>) -> tensor<i64>
  func.return %y, %z : tensor<?x4xi64>, tensor<i64>
}

// CHECK-LABEL: func.func @argmin(%x: tensor<3x5xui8>) -> tensor<3xi64> {
// CHECK-NEXT:    %y = "aotk.argmin"(%x) <{axis = 1 : i64}> : (tensor<3x5xui8>) -> tensor<3xi64>
// CHECK-NEXT:    func.return %y : tensor<3xi64>
// CHECK-NEXT:  }
func.func @argmin(%x: tensor<3x5xui8>) -> tensor<3xi64> {
  %y = "aotk.argmin"(%x) <{axis = 1 : i64}> : (tensor<3x5xui8>) -> tensor<3xi64>
  func.return %y : tensor<3xi64>
}
