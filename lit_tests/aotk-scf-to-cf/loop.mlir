// RUN: aotk-opt %s -p aotk-scf-to-cf | filecheck %s

// A loop carrying a value, with a branch inside, becomes blocks in one sweep: the
// header compares the induction variable, the body branches on the condition, and the
// loop's result is the carried block argument on exit.
// CHECK-LABEL: func.func @sum_positive(
// CHECK-NOT:     scf.
// CHECK:         cf.br ^[[HEAD:bb[0-9]+]](%c0, %zero : index, f32)
// CHECK:       ^[[HEAD]](%i: index, %acc: f32):
// CHECK-NEXT:    %[[MORE:.*]] = arith.cmpi slt, %i, %n : index
// CHECK-NEXT:    cf.cond_br %[[MORE]], ^[[BODY:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// CHECK:       ^[[BODY]]:
// CHECK:         cf.cond_br %pos, ^[[THEN:bb[0-9]+]], ^[[ELSE:bb[0-9]+]]
// CHECK:       ^[[THEN]]:
// CHECK-NEXT:    %a = arith.addf %acc, %v : f32
// CHECK-NEXT:    cf.br ^[[JOIN:bb[0-9]+]](%a : f32)
// CHECK:       ^[[ELSE]]:
// CHECK-NEXT:    cf.br ^[[JOIN]](%acc : f32)
// CHECK:         %[[NEXT:.*]] = arith.addi %i, %c1 : index
// CHECK-NEXT:    cf.br ^[[HEAD]](%[[NEXT]], %t : index, f32)
// CHECK:       ^[[EXIT]]:
// CHECK-NEXT:    func.return %acc : f32
// CHECK-NOT:     scf.
func.func @sum_positive(%buf: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %buf[%i] : memref<?xf32>
    %pos = arith.cmpf ogt, %v, %zero : f32
    %t = scf.if %pos -> (f32) {
      %a = arith.addf %acc, %v : f32
      scf.yield %a : f32
    } else {
      scf.yield %acc : f32
    }
    scf.yield %t : f32
  }
  func.return %s : f32
}
