// A value read by the op that defines it (or by any op before its definition) is refused
// where it is read, with exit status 1, before any pass could loop on the cycle.
// RUN: not aotk-opt %s -p aotk-simplify,canonicalize,dce 2>&1 | filecheck %s

// CHECK-NOT:  Traceback
// CHECK:      use_before_definition.mlir:[[# @LINE + 6]]:3
// CHECK-NEXT:   %c = "aotk.sub"(%c, %z)
// CHECK:      error: operand 0 of 'aotk.sub' is used before it is defined
// CHECK-NOT:  Traceback
// CHECK-NOT:  builtin.module
func.func @self_use(%z: tensor<3xf32>) -> tensor<3xf32> {
  %c = "aotk.sub"(%c, %z) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return %c : tensor<3xf32>
}
