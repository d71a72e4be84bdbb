// RUN: aotk-opt %s -p aotk-cse | filecheck %s

// A load merges into an earlier one only with no store between them; a constant inside
// a loop merges into the enclosing one; a sibling loop's constant is not in scope.
// CHECK-LABEL: func.func @scopes(
// CHECK:         %a = memref.load %m[%i]
// CHECK-NEXT:    memref.store %a, %m[%n]
// CHECK-NEXT:    %c = memref.load %m[%i]
// CHECK-NEXT:    %one = arith.constant 1 : index
// CHECK-NEXT:    %s = arith.addf %a, %a : f32
// CHECK:         scf.for
// CHECK-NEXT:      %j = arith.addi %k, %one : index
// CHECK:         scf.for
// CHECK-NEXT:      %two = arith.constant 2 : index
// CHECK:         %two_1 = arith.constant 2 : index
func.func @scopes(%m: memref<8xf32>, %i: index, %n: index) {
  %a = memref.load %m[%i] : memref<8xf32>
  %b = memref.load %m[%i] : memref<8xf32>
  memref.store %a, %m[%n] : memref<8xf32>
  %c = memref.load %m[%i] : memref<8xf32>
  %one = arith.constant 1 : index
  %s = arith.addf %a, %b : f32
  scf.for %k = %i to %n step %one {
    %one_again = arith.constant 1 : index
    %j = arith.addi %k, %one_again : index
    memref.store %s, %m[%j] : memref<8xf32>
  }
  scf.for %k = %i to %n step %one {
    %two = arith.constant 2 : index
    %j = arith.addi %k, %two : index
    memref.store %c, %m[%j] : memref<8xf32>
  }
  %two = arith.constant 2 : index
  memref.store %s, %m[%two] : memref<8xf32>
  func.return
}
