// RUN: aotk-opt %s --split-input-file -p aotk-simplify,dce | filecheck %s

// The vector-Jacobian product of sum(batch_matmul(a, b) * g), as autodiff writes it: the
// zeros of the sum's gradient take their dims from g, which has the product's, so the
// product is computed for nothing and goes.
// CHECK-LABEL: func.func @vjp
// CHECK-NOT:     "aotk.batch_matmul"(%a, %b)
// CHECK:         %zeros = "aotk.fill_like"(%g) <{value = 0.000000e+00 : f64, dtype = f32}> : (tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
func.func @vjp(%a: tensor<4x3x5xf32>, %b: tensor<4x5x2xf32>, %g: tensor<4x3x2xf32>) -> tensor<4x3x5xf32> {
  %y = "aotk.batch_matmul"(%a, %b) : (tensor<4x3x5xf32>, tensor<4x5x2xf32>) -> tensor<4x3x2xf32>
  %yg = "aotk.mul"(%y, %g) : (tensor<4x3x2xf32>, tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
  %one = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %seed = "aotk.expand_dims"(%one) <{axes = array<i64: 0, 1, 2>}> : (tensor<f32>) -> tensor<1x1x1xf32>
  %zeros = "aotk.fill_like"(%yg) <{value = 0.000000e+00 : f64, dtype = f32}> : (tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
  %ones = "aotk.add"(%seed, %zeros) : (tensor<1x1x1xf32>, tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
  %dy = "aotk.mul"(%ones, %g) : (tensor<4x3x2xf32>, tensor<4x3x2xf32>) -> tensor<4x3x2xf32>
  %da = "aotk.batch_matmul"(%dy, %b) <{transpose_rhs = true}> : (tensor<4x3x2xf32>, tensor<4x5x2xf32>) -> tensor<4x3x5xf32>
  func.return %da : tensor<4x3x5xf32>
}

// -----

// A dynamic dim may be 1 at run time and broadcast: x * y keeps its own dims, while
// x * w, with w of one row, has x's whatever they are. A unary op and a cast pass
// their operand's dims on.
// CHECK-LABEL: func.func @dynamic
// CHECK:         %xy = "aotk.mul"(%x, %y)
// CHECK:         %s1 = "aotk.shape_of"(%xy)
// CHECK:         %s2 = "aotk.shape_of"(%x)
// CHECK:         %s3 = "aotk.shape_of"(%x)
func.func @dynamic(%x: tensor<?x3xf32>, %y: tensor<?x3xf32>, %w: tensor<1x3xf32>) -> (tensor<2xi32>, tensor<2xi32>, tensor<2xi32>) {
  %xy = "aotk.mul"(%x, %y) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %s1 = "aotk.shape_of"(%xy) : (tensor<?x3xf32>) -> tensor<2xi32>
  %xw = "aotk.mul"(%x, %w) : (tensor<?x3xf32>, tensor<1x3xf32>) -> tensor<?x3xf32>
  %s2 = "aotk.shape_of"(%xw) : (tensor<?x3xf32>) -> tensor<2xi32>
  %t = "aotk.tanh"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %c = "aotk.cast"(%t) <{dtype = f64}> : (tensor<?x3xf32>) -> tensor<?x3xf64>
  %s3 = "aotk.shape_of"(%c) : (tensor<?x3xf64>) -> tensor<2xi32>
  func.return %s1, %s2, %s3 : tensor<2xi32>, tensor<2xi32>, tensor<2xi32>
}
