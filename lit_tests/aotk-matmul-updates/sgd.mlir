// RUN: aotk-opt %s --split-input-file -p aotk-matmul-updates,dce | filecheck %s

// A dense layer's SGD update, w - 0.01 * (x^T @ dz): one matmul_update whose alpha is the
// negated constant; the matmul and the multiply go.
// CHECK-LABEL: func.func @sgd
// CHECK-NEXT:    %[[A:.*]] = "aotk.constant"() <{value = -1.000000e-02 : f64, dtype = f32}> : () -> tensor<f32>
// CHECK-NEXT:    %[[U:.*]] = "aotk.matmul_update"(%w, %x, %dz, %[[A]]) <{transpose_lhs = true}> : (tensor<5x3xf32>, tensor<?x5xf32>, tensor<?x3xf32>, tensor<f32>) -> tensor<5x3xf32>
// CHECK-NEXT:    func.return %[[U]] : tensor<5x3xf32>
func.func @sgd(%w: tensor<5x3xf32>, %x: tensor<?x5xf32>, %dz: tensor<?x3xf32>) -> tensor<5x3xf32> {
  %g = "aotk.matmul"(%x, %dz) <{transpose_lhs = true}> : (tensor<?x5xf32>, tensor<?x3xf32>) -> tensor<5x3xf32>
  %lr = "aotk.constant"() <{value = 1.000000e-02 : f64, dtype = f32}> : () -> tensor<f32>
  %step = "aotk.mul"(%lr, %g) : (tensor<f32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  %new = "aotk.sub"(%w, %step) : (tensor<5x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  func.return %new : tensor<5x3xf32>
}

// -----

// A learning rate that is not a constant: alpha is its negation, computed once.
// CHECK-LABEL: func.func @variable_rate
// CHECK-NEXT:    %[[A:.*]] = "aotk.neg"(%lr) : (tensor<f64>) -> tensor<f64>
// CHECK-NEXT:    %[[U:.*]] = "aotk.matmul_update"(%w, %a, %b, %[[A]]) : (tensor<4x3xf64>, tensor<4x5xf64>, tensor<5x3xf64>, tensor<f64>) -> tensor<4x3xf64>
// CHECK-NEXT:    func.return %[[U]]
func.func @variable_rate(%w: tensor<4x3xf64>, %a: tensor<4x5xf64>, %b: tensor<5x3xf64>, %lr: tensor<f64>) -> tensor<4x3xf64> {
  %m = "aotk.matmul"(%a, %b) : (tensor<4x5xf64>, tensor<5x3xf64>) -> tensor<4x3xf64>
  %step = "aotk.mul"(%m, %lr) : (tensor<4x3xf64>, tensor<f64>) -> tensor<4x3xf64>
  %new = "aotk.sub"(%w, %step) : (tensor<4x3xf64>, tensor<4x3xf64>) -> tensor<4x3xf64>
  func.return %new : tensor<4x3xf64>
}

// -----

// The gradient is also returned: it must be written out anyway, and nothing folds.
// CHECK-LABEL: func.func @gradient_kept
// CHECK-NOT:     aotk.matmul_update
// CHECK:         "aotk.matmul"
// CHECK:         "aotk.sub"
func.func @gradient_kept(%w: tensor<4x3xf32>, %a: tensor<4x5xf32>, %b: tensor<5x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %m = "aotk.matmul"(%a, %b) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  %new = "aotk.sub"(%w, %m) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %new, %m : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// A bias-like w broadcast along the rows is not the product's type: nothing folds.
// CHECK-LABEL: func.func @broadcast
// CHECK-NOT:     aotk.matmul_update
func.func @broadcast(%w: tensor<3xf32>, %a: tensor<4x5xf32>, %b: tensor<5x3xf32>) -> tensor<4x3xf32> {
  %m = "aotk.matmul"(%a, %b) : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
  %new = "aotk.add"(%w, %m) : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %new : tensor<4x3xf32>
}
