// RUN: not aotk-opt %s 2>&1 | filecheck %s

// Two operands bound, one type: the error points at the bindings.
// CHECK-NOT:  Traceback
// CHECK:      region_syntax_error.mlir:[[# @LINE + 3]]:18
// CHECK:      2 operands bound but the type lists 1
func.func @fused_type_count(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = aotk.fused(%a = %x, %b = %x) : (tensor<4xf32>) -> tensor<4xf32> {
    aotk.yield %a : tensor<f32>
  }
  func.return %y : tensor<4xf32>
}
// CHECK-NOT:  Traceback
