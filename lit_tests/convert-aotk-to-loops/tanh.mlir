// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// float32 tanh is |x| P(x^2) / Q(x^2) (P of degree 6, Q of degree 3, Horner's
// multiply-adds), held at most 1, set to 1 past 13 ln2, then given x's sign: no
// exponential, so no power of two built from integer bits.
// CHECK-LABEL: func.func @tanh_f32(
// CHECK:         %[[A:.*]] = math.absf %[[X:.*]] : f32
// CHECK-NEXT:    %[[S:.*]] = arith.mulf %[[A]], %[[A]] : f32
// CHECK-COUNT-6: math.fma %{{.*}}, %[[S]], %{{.*}} {fastmath = #arith.fastmath<contract>} : f32
// CHECK-NEXT:    %[[P:.*]] = arith.mulf %{{.*}}, %[[A]] : f32
// CHECK-COUNT-3: math.fma %{{.*}}, %[[S]], %{{.*}} {fastmath = #arith.fastmath<contract>} : f32
// CHECK-NEXT:    %[[R:.*]] = arith.divf %[[P]], %{{.*}} : f32
// CHECK-NEXT:    %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[PAST:.*]] = arith.cmpf ogt, %[[R]], %[[ONE]] : f32
// CHECK-NEXT:    %[[HELD:.*]] = arith.select %[[PAST]], %[[ONE]], %[[R]] : f32
// CHECK-NEXT:    %[[BIG:.*]] = arith.constant 9.0109129 : f32
// CHECK-NEXT:    %[[FAR:.*]] = arith.cmpf ogt, %[[A]], %[[BIG]] : f32
// CHECK-NEXT:    %[[SAT:.*]] = arith.select %[[FAR]], %[[ONE]], %[[HELD]] : f32
// CHECK-NEXT:    math.copysign %[[SAT]], %[[X]] : f32
// CHECK-NOT:     arith.shli
// CHECK-LABEL: func.func @tanh_f32_workspace_size(
func.func @tanh_f32(%x: tensor<16xf32>) -> tensor<16xf32> {
  %y = "aotk.tanh"(%x) : (tensor<16xf32>) -> tensor<16xf32>
  func.return %y : tensor<16xf32>
}

// float64 keeps expm1(2|x|) / (expm1(2|x|) + 2): its exponential's power of two, one
// division, the sign, and x itself for tiny x.
// CHECK-LABEL: func.func @tanh_f64(
// CHECK:         math.absf
// CHECK:         arith.shli
// CHECK:         arith.divf
// CHECK:         math.copysign
// CHECK:         arith.cmpf ult
// CHECK-LABEL: func.func @tanh_f64_workspace_size(
func.func @tanh_f64(%x: tensor<16xf64>) -> tensor<16xf64> {
  %y = "aotk.tanh"(%x) : (tensor<16xf64>) -> tensor<16xf64>
  func.return %y : tensor<16xf64>
}
