// RUN: aotk-opt %s --aotk-tile-for=avx2 --split-input-file --verify-diagnostics | filecheck %s

// A matmul on a weight and its packed copy: the copy must hold the weight's columns in
// whole slivers (16 floats with AVX2 tiles) times its rows, and the weight a static
// float matrix. Errors point at the op's line and column.

// CHECK:      matmul_packed_weight.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.matmul_packed_weight' op does not verify: packed must be a float32 vector of 128 elements for a (4, 20) weight, got float32 (80,)
func.func @short_copy(%x: tensor<?x4xf32>, %w: tensor<4x20xf32>, %p: tensor<80xf32>) -> tensor<?x20xf32> {
  %y = "aotk.matmul_packed_weight"(%x, %w, %p) : (tensor<?x4xf32>, tensor<4x20xf32>, tensor<80xf32>) -> tensor<?x20xf32>
  func.return %y : tensor<?x20xf32>
}

// -----

// CHECK:      matmul_packed_weight.mlir:[[# @LINE + 3]]:3
// CHECK:      error: 'aotk.matmul_packed_weight' op does not verify: the weight must be a float32 or float64 matrix of static shape, got float32 (4, None)
func.func @dynamic_weight(%x: tensor<?x4xf32>, %w: tensor<4x?xf32>, %p: tensor<128xf32>) -> tensor<?x?xf32> {
  %y = "aotk.matmul_packed_weight"(%x, %w, %p) : (tensor<?x4xf32>, tensor<4x?xf32>, tensor<128xf32>) -> tensor<?x?xf32>
  func.return %y : tensor<?x?xf32>
}

// -----

// The copy of a 4 x 20 weight: two slivers of 16 columns (the last 12 zeros) by 4 rows.
// CHECK-LABEL: func.func @whole_slivers(
// CHECK:         "aotk.matmul_packed_weight"(%x, %w, %p) : (tensor<?x4xf32>, tensor<4x20xf32>, tensor<128xf32>) -> tensor<?x20xf32>
func.func @whole_slivers(%x: tensor<?x4xf32>, %w: tensor<4x20xf32>, %p: tensor<128xf32>) -> tensor<?x20xf32> {
  %y = "aotk.matmul_packed_weight"(%x, %w, %p) : (tensor<?x4xf32>, tensor<4x20xf32>, tensor<128xf32>) -> tensor<?x20xf32>
  func.return %y : tensor<?x20xf32>
}
