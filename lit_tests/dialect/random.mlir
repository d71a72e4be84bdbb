// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the random ops: printed, parsed back and printed again, each op
// keeps its properties and types.

// A draw reads the philox state (key, counter) and advances it. `shape` dims of -1 come
// from the `like` operand's axes listed in `like_axes` (-1: a static dim).

// CHECK-LABEL: func.func @random_uniform(%state: tensor<2xi64>, %like: tensor<?x3xf32>) -> (tensor<?x5xf32>, tensor<4xf16>) {
// CHECK-NEXT:    %y = "aotk.random_uniform"(%state, %like) <{shape = array<i64: -1, 5>, like_axes = array<i64: 0, -1>, minval = -1.500000e+00 : f64, maxval = 2.500000e+00 : f64, dtype = f32}> : (tensor<2xi64>, tensor<?x3xf32>) -> tensor<?x5xf32>
// CHECK-NEXT:    %z = "aotk.random_uniform"(%state) <{shape = array<i64: 4>, like_axes = array<i64: -1>, minval = 0.000000e+00 : f64, maxval = 1.000000e+00 : f64, dtype = f16}> : (tensor<2xi64>) -> tensor<4xf16>
// CHECK-NEXT:    func.return %y, %z : tensor<?x5xf32>, tensor<4xf16>
// CHECK-NEXT:  }
func.func @random_uniform(%state: tensor<2xi64>, %like: tensor<?x3xf32>) -> (tensor<?x5xf32>, tensor<4xf16>) {
  %y = "aotk.random_uniform"(%state, %like) <{shape = array<i64: -1, 5>, like_axes = array<i64: 0, -1>, minval = -1.500000e+00 : f64, maxval = 2.500000e+00 : f64, dtype = f32}> : (tensor<2xi64>, tensor<?x3xf32>) -> tensor<?x5xf32>
  %z = "aotk.random_uniform"(%state) <{shape = array<i64: 4>, like_axes = array<i64: -1>, minval = 0.000000e+00 : f64, maxval = 1.000000e+00 : f64, dtype = f16}> : (tensor<2xi64>) -> tensor<4xf16>
  func.return %y, %z : tensor<?x5xf32>, tensor<4xf16>
}

// CHECK-LABEL: func.func @random_normal(%state: tensor<2xi64>, %like: tensor<?x3xi1>) -> (tensor<3x?xf64>, tensor<f32>) {
// CHECK-NEXT:    %y = "aotk.random_normal"(%state, %like) <{shape = array<i64: 3, -1>, like_axes = array<i64: -1, 0>, mean = 5.000000e-01 : f64, stddev = 3.000000e+00 : f64, truncated = true, dtype = f64}> : (tensor<2xi64>, tensor<?x3xi1>) -> tensor<3x?xf64>
// CHECK-NEXT:    %z = "aotk.random_normal"(%state) <{shape = array<i64>, like_axes = array<i64>, mean = 0.000000e+00 : f64, stddev = 1.000000e+00 : f64, truncated = false, dtype = f32}> : (tensor<2xi64>) -> tensor<f32>
// CHECK-NEXT:    func.return %y, %z : tensor<3x?xf64>, tensor<f32>
// CHECK-NEXT:  }
func.func @random_normal(%state: tensor<2xi64>, %like: tensor<?x3xi1>) -> (tensor<3x?xf64>, tensor<f32>) {
  %y = "aotk.random_normal"(%state, %like) <{shape = array<i64: 3, -1>, like_axes = array<i64: -1, 0>, mean = 5.000000e-01 : f64, stddev = 3.000000e+00 : f64, truncated = true, dtype = f64}> : (tensor<2xi64>, tensor<?x3xi1>) -> tensor<3x?xf64>
  %z = "aotk.random_normal"(%state) <{shape = array<i64>, like_axes = array<i64>, mean = 0.000000e+00 : f64, stddev = 1.000000e+00 : f64, truncated = false, dtype = f32}> : (tensor<2xi64>) -> tensor<f32>
  func.return %y, %z : tensor<3x?xf64>, tensor<f32>
}
