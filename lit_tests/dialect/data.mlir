// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the data-movement ops (view, broadcast_to, pad): printed, parsed
// back and printed again, each op keeps its properties and types.

// aotk.view: result dim i is factors[i] times the input dims a with sources[a] == i; an
// input dim with source -1 is static and folded into the factors.

// CHECK-LABEL: func.func @view(%x: tensor<?x3x?xf32>, %s: tensor<6x?xi8>) -> (tensor<?x?xf32>, tensor<2x3x?xi8>) {
// CHECK-NEXT:    %merged = "aotk.view"(%x) <{factors = array<i64: 1, 1>, sources = array<i64: 0, 0, 1>}> : (tensor<?x3x?xf32>) -> tensor<?x?xf32>
// CHECK-NEXT:    %split = "aotk.view"(%s) <{factors = array<i64: 2, 3, 1>, sources = array<i64: -1, 2>}> : (tensor<6x?xi8>) -> tensor<2x3x?xi8>
// CHECK-NEXT:    func.return %merged, %split : tensor<?x?xf32>, tensor<2x3x?xi8>
// CHECK-NEXT:  }
func.func @view(%x: tensor<?x3x?xf32>, %s: tensor<6x?xi8>) -> (tensor<?x?xf32>, tensor<2x3x?xi8>) {
  %merged = "aotk.view"(%x) <{factors = array<i64: 1, 1>, sources = array<i64: 0, 0, 1>}> : (tensor<?x3x?xf32>) -> tensor<?x?xf32>
  %split = "aotk.view"(%s) <{factors = array<i64: 2, 3, 1>, sources = array<i64: -1, 2>}> : (tensor<6x?xi8>) -> tensor<2x3x?xi8>
  func.return %merged, %split : tensor<?x?xf32>, tensor<2x3x?xi8>
}

// CHECK-LABEL: func.func @broadcast_to(%x: tensor<?x1x3xi1>) -> tensor<?x4x3xi1> {
// CHECK-NEXT:    %y = "aotk.broadcast_to"(%x) <{shape = array<i64: -1, 4, -1>}> : (tensor<?x1x3xi1>) -> tensor<?x4x3xi1>
// CHECK-NEXT:    func.return %y : tensor<?x4x3xi1>
// CHECK-NEXT:  }
func.func @broadcast_to(%x: tensor<?x1x3xi1>) -> tensor<?x4x3xi1> {
  %y = "aotk.broadcast_to"(%x) <{shape = array<i64: -1, 4, -1>}> : (tensor<?x1x3xi1>) -> tensor<?x4x3xi1>
  func.return %y : tensor<?x4x3xi1>
}

// CHECK-LABEL: func.func @pad(%x: tensor<?x3x?xf16>, %s: tensor<i32>) -> (tensor<?x4x?xf16>, tensor<i32>) {
// CHECK-NEXT:    %y = "aotk.pad"(%x) <{before = array<i64: 0, 1, 2>, after = array<i64: 1, 0, 3>, value = -1.500000e+00 : f64}> : (tensor<?x3x?xf16>) -> tensor<?x4x?xf16>
// CHECK-NEXT:    %z = "aotk.pad"(%s) <{before = array<i64>, after = array<i64>, value = 0.000000e+00 : f64}> : (tensor<i32>) -> tensor<i32>
// CHECK-NEXT:    func.return %y, %z : tensor<?x4x?xf16>, tensor<i32>
// CHECK-NEXT:  }
func.func @pad(%x: tensor<?x3x?xf16>, %s: tensor<i32>) -> (tensor<?x4x?xf16>, tensor<i32>) {
  %y = "aotk.pad"(%x) <{before = array<i64: 0, 1, 2>, after = array<i64: 1, 0, 3>, value = -1.500000e+00 : f64}> : (tensor<?x3x?xf16>) -> tensor<?x4x?xf16>
  %z = "aotk.pad"(%s) <{before = array<i64>, after = array<i64>, value = 0.000000e+00 : f64}> : (tensor<i32>) -> tensor<i32>
  func.return %y, %z : tensor<?x4x?xf16>, tensor<i32>
}
