// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the reductions: printed, parsed back and printed again, each op
// keeps its axes, keepdims and types.

// CHECK-LABEL: func.func @reduce_sum(%x: tensor<?x3x?xf32>) -> (tensor<3xf32>, tensor<?x1x?xf32>) {
// CHECK-NEXT:    %y = "aotk.reduce_sum"(%x) <{axes = array<i64: 0, 2>, keepdims = false}> : (tensor<?x3x?xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %k = "aotk.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = true}> : (tensor<?x3x?xf32>) -> tensor<?x1x?xf32>
// CHECK-NEXT:    func.return %y, %k : tensor<3xf32>, tensor<?x1x?xf32>
// CHECK-NEXT:  }
func.func @reduce_sum(%x: tensor<?x3x?xf32>) -> (tensor<3xf32>, tensor<?x1x?xf32>) {
  %y = "aotk.reduce_sum"(%x) <{axes = array<i64: 0, 2>, keepdims = false}> : (tensor<?x3x?xf32>) -> tensor<3xf32>
  %k = "aotk.reduce_sum"(%x) <{axes = array<i64: 1>, keepdims = true}> : (tensor<?x3x?xf32>) -> tensor<?x1x?xf32>
  func.return %y, %k : tensor<3xf32>, tensor<?x1x?xf32>
}

// CHECK-LABEL: func.func @reduce_prod(%x: tensor<2x3x4xi16>) -> tensor<1x1x1xi16> {
// CHECK-NEXT:    %y = "aotk.reduce_prod"(%x) <{axes = array<i64: 0, 1, 2>, keepdims = true}> : (tensor<2x3x4xi16>) -> tensor<1x1x1xi16>
// CHECK-NEXT:    func.return %y : tensor<1x1x1xi16>
// CHECK-NEXT:  }
func.func @reduce_prod(%x: tensor<2x3x4xi16>) -> tensor<1x1x1xi16> {
  %y = "aotk.reduce_prod"(%x) <{axes = array<i64: 0, 1, 2>, keepdims = true}> : (tensor<2x3x4xi16>) -> tensor<1x1x1xi16>
  func.return %y : tensor<1x1x1xi16>
}

// CHECK-LABEL: func.func @reduce_max(%x: tensor<4x?xf16>, %s: tensor<f16>) -> (tensor<4xf16>, tensor<f16>) {
// CHECK-NEXT:    %y = "aotk.reduce_max"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<4x?xf16>) -> tensor<4xf16>
// CHECK-NEXT:    %z = "aotk.reduce_max"(%s) <{axes = array<i64>, keepdims = false}> : (tensor<f16>) -> tensor<f16>
// CHECK-NEXT:    func.return %y, %z : tensor<4xf16>, tensor<f16>
// CHECK-NEXT:  }
func.func @reduce_max(%x: tensor<4x?xf16>, %s: tensor<f16>) -> (tensor<4xf16>, tensor<f16>) {
  %y = "aotk.reduce_max"(%x) <{axes = array<i64: 1>, keepdims = false}> : (tensor<4x?xf16>) -> tensor<4xf16>
  %z = "aotk.reduce_max"(%s) <{axes = array<i64>, keepdims = false}> : (tensor<f16>) -> tensor<f16>
  func.return %y, %z : tensor<4xf16>, tensor<f16>
}

// CHECK-LABEL: func.func @reduce_min(%x: tensor<5xui8>) -> tensor<ui8> {
// CHECK-NEXT:    %y = "aotk.reduce_min"(%x) <{axes = array<i64: 0>, keepdims = false}> : (tensor<5xui8>) -> tensor<ui8>
// CHECK-NEXT:    func.return %y : tensor<ui8>
// CHECK-NEXT:  }
func.func @reduce_min(%x: tensor<5xui8>) -> tensor<ui8> {
  %y = "aotk.reduce_min"(%x) <{axes = array<i64: 0>, keepdims = false}> : (tensor<5xui8>) -> tensor<ui8>
  func.return %y : tensor<ui8>
}

// The row softmax (a reduction's machinery: it runs along the last axis).
// CHECK-LABEL: func.func @softmax(%x: tensor<?x7xf16>) -> tensor<?x7xf16> {
// CHECK-NEXT:    %y = "aotk.softmax"(%x) : (tensor<?x7xf16>) -> tensor<?x7xf16>
// CHECK-NEXT:    func.return %y : tensor<?x7xf16>
// CHECK-NEXT:  }
func.func @softmax(%x: tensor<?x7xf16>) -> tensor<?x7xf16> {
  %y = "aotk.softmax"(%x) : (tensor<?x7xf16>) -> tensor<?x7xf16>
  func.return %y : tensor<?x7xf16>
}
