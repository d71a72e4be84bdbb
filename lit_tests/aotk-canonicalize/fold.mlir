// RUN: aotk-opt %s -p aotk-canonicalize | filecheck %s

// Constant index arithmetic folds, x * 1 and x + 0 simplify, pure ops whose results are
// unused go (users first, so a dead chain goes at once); stores, calls and loops stay.
// CHECK-LABEL: func.func @fold(
// CHECK-SAME:      %m: memref<?xf32>, %n: index, %v: f32)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C12:.*]] = arith.constant 12 : index
// CHECK-NOT:     arith.muli
// CHECK-NOT:     arith.addi
// CHECK:         memref.store %v, %m[%[[C12]]] : memref<?xf32>
// CHECK-NEXT:    scf.for %{{.*}} = %[[C0]] to %n step %[[C1]] {
// CHECK-NEXT:      memref.store %v, %m[%n] : memref<?xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.call @effect() : () -> ()
// CHECK-NEXT:    func.return
func.func @fold(%m: memref<?xf32>, %n: index, %v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %twelve = arith.muli %c3, %c4 : index
  %dead = arith.addi %n, %c3 : index
  %dead2 = arith.muli %dead, %dead : index
  memref.store %v, %m[%twelve] : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %same = arith.muli %n, %c1 : index
    %also = arith.addi %same, %c0 : index
    %unused = memref.load %m[%i] : memref<?xf32>
    memref.store %v, %m[%also] : memref<?xf32>
  }
  func.call @effect() : () -> ()
  func.return
}

func.func private @effect() -> ()
