// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the contractions (matmul, batch_matmul): printed, parsed back and
// printed again, each op keeps its types.

// aotk.matmul contracts the last axis of a with the first of b (K.dot); aotk.batch_matmul
// contracts over matching leading batch dims (K.batch_dot).

// CHECK-LABEL: func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x4xf32>, %v: tensor<5xi32>, %w: tensor<5x3xi32>) -> (tensor<?x4xf32>, tensor<3xi32>) {
// CHECK-NEXT:    %y = "aotk.matmul"(%a, %b) : (tensor<?x?xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
// CHECK-NEXT:    %z = "aotk.matmul"(%v, %w) : (tensor<5xi32>, tensor<5x3xi32>) -> tensor<3xi32>
// CHECK-NEXT:    func.return %y, %z : tensor<?x4xf32>, tensor<3xi32>
// CHECK-NEXT:  }
func.func @matmul(%a: tensor<?x?xf32>, %b: tensor<?x4xf32>, %v: tensor<5xi32>, %w: tensor<5x3xi32>) -> (tensor<?x4xf32>, tensor<3xi32>) {
  %y = "aotk.matmul"(%a, %b) : (tensor<?x?xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %z = "aotk.matmul"(%v, %w) : (tensor<5xi32>, tensor<5x3xi32>) -> tensor<3xi32>
  func.return %y, %z : tensor<?x4xf32>, tensor<3xi32>
}

// CHECK-LABEL: func.func @matmul_rank3(%a: tensor<2x3x5xf64>, %b: tensor<5x4xf64>) -> tensor<2x3x4xf64> {
// CHECK-NEXT:    %y = "aotk.matmul"(%a, %b) : (tensor<2x3x5xf64>, tensor<5x4xf64>) -> tensor<2x3x4xf64>
// CHECK-NEXT:    func.return %y : tensor<2x3x4xf64>
// CHECK-NEXT:  }
func.func @matmul_rank3(%a: tensor<2x3x5xf64>, %b: tensor<5x4xf64>) -> tensor<2x3x4xf64> {
  %y = "aotk.matmul"(%a, %b) : (tensor<2x3x5xf64>, tensor<5x4xf64>) -> tensor<2x3x4xf64>
  func.return %y : tensor<2x3x4xf64>
}

// CHECK-LABEL: func.func @batch_matmul(%a: tensor<?x?x?xf32>, %b: tensor<?x?x?xf32>, %u: tensor<2x5xf16>, %v: tensor<2x5x3xf16>) -> (tensor<?x?x?xf32>, tensor<2x3xf16>) {
// CHECK-NEXT:    %y = "aotk.batch_matmul"(%a, %b) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
// CHECK-NEXT:    %z = "aotk.batch_matmul"(%u, %v) : (tensor<2x5xf16>, tensor<2x5x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT:    func.return %y, %z : tensor<?x?x?xf32>, tensor<2x3xf16>
// CHECK-NEXT:  }
func.func @batch_matmul(%a: tensor<?x?x?xf32>, %b: tensor<?x?x?xf32>, %u: tensor<2x5xf16>, %v: tensor<2x5x3xf16>) -> (tensor<?x?x?xf32>, tensor<2x3xf16>) {
  %y = "aotk.batch_matmul"(%a, %b) : (tensor<?x?x?xf32>, tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %z = "aotk.batch_matmul"(%u, %v) : (tensor<2x5xf16>, tensor<2x5x3xf16>) -> tensor<2x3xf16>
  func.return %y, %z : tensor<?x?x?xf32>, tensor<2x3xf16>
}

// CHECK-LABEL: func.func @batch_matmul_folded(%a: tensor<?x2x3x4xi8>, %b: tensor<?x4x3xi8>) -> tensor<?x2x3x3xi8> {
// CHECK-NEXT:    %y = "aotk.batch_matmul"(%a, %b) : (tensor<?x2x3x4xi8>, tensor<?x4x3xi8>) -> tensor<?x2x3x3xi8>
// CHECK-NEXT:    func.return %y : tensor<?x2x3x3xi8>
// CHECK-NEXT:  }
func.func @batch_matmul_folded(%a: tensor<?x2x3x4xi8>, %b: tensor<?x4x3xi8>) -> tensor<?x2x3x3xi8> {
  %y = "aotk.batch_matmul"(%a, %b) : (tensor<?x2x3x4xi8>, tensor<?x4x3xi8>) -> tensor<?x2x3x3xi8>
  func.return %y : tensor<?x2x3x3xi8>
}
