// RUN: aotk-opt %s -p aotk-canonicalize | filecheck %s

// A constant three loops deep leaves the whole nest (one loop per application of the
// pattern; the loops are settled without sweeping the module again for each level), and
// an addition of zero folds away.
// CHECK-LABEL: func.func @nest(
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %half = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:    scf.for %i = %c0 to %n step %c1 {
// CHECK-NEXT:      scf.for %j = %c0 to %n step %c1 {
// CHECK-NEXT:        scf.for %k = %c0 to %n step %c1 {
// CHECK-NEXT:          %v = memref.load %m[%k] : memref<?xf32>
// CHECK-NEXT:          %w = arith.mulf %v, %half : f32
// CHECK-NEXT:          memref.store %w, %m[%j] : memref<?xf32>
func.func @nest(%m: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    scf.for %j = %c0 to %n step %c1 {
      scf.for %k = %c0 to %n step %c1 {
        %half = arith.constant 0.5 : f32
        %zero = arith.constant 0 : index
        %kk = arith.addi %k, %zero : index
        %v = memref.load %m[%kk] : memref<?xf32>
        %w = arith.mulf %v, %half : f32
        memref.store %w, %m[%j] : memref<?xf32>
      }
    }
  }
  func.return
}
