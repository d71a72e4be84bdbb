// RUN: aotk-opt %s -p aotk-outline-kernels | filecheck %s

// Kernels that are the same code on other buffers become one function called twice; a
// kernel that differs only in a constant keeps a function of its own.
// CHECK-LABEL: func.func @entry(
// CHECK-NEXT:    func.call @entry_k0(%n, %x, %y)
// CHECK-NEXT:    func.call @entry_k0(%n, %z, %w)
// CHECK-NEXT:    func.call @entry_k2(%n, %x, %w)
// CHECK-NEXT:    func.return
// CHECK:       func.func private @entry_k0(
// CHECK:         arith.constant 2.000000e+00 : f32
// CHECK-NOT:   func.func private @entry_k1(
// CHECK:       func.func private @entry_k2(
// CHECK:         arith.constant 3.000000e+00 : f32
func.func @entry(%x: !llvm.ptr, %y: !llvm.ptr, %z: !llvm.ptr, %w: !llvm.ptr, %n: index) attributes {aotk.kernel = array<i64: 3, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %a = arith.mulf %v, %two : f32
    %b = arith.addf %a, %v : f32
    %c0f = arith.mulf %b, %b : f32
    %d = arith.addf %c0f, %a : f32
    %e = arith.mulf %d, %v : f32
    %c = arith.addf %e, %b : f32
    %q = llvm.getelementptr %y[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %c, %q : f32, !llvm.ptr
  }
  scf.for %j = %c0 to %n step %c1 {
    %j64 = arith.index_cast %j : index to i64
    %p = llvm.getelementptr %z[%j64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %a = arith.mulf %v, %two : f32
    %b = arith.addf %a, %v : f32
    %c0f = arith.mulf %b, %b : f32
    %d = arith.addf %c0f, %a : f32
    %e = arith.mulf %d, %v : f32
    %c = arith.addf %e, %b : f32
    %q = llvm.getelementptr %w[%j64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %c, %q : f32, !llvm.ptr
  }
  scf.for %k = %c0 to %n step %c1 {
    %k64 = arith.index_cast %k : index to i64
    %p = llvm.getelementptr %x[%k64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %a = arith.mulf %v, %three : f32
    %b = arith.addf %a, %v : f32
    %c0f = arith.mulf %b, %b : f32
    %d = arith.addf %c0f, %a : f32
    %e = arith.mulf %d, %v : f32
    %c = arith.addf %e, %b : f32
    %q = llvm.getelementptr %w[%k64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %c, %q : f32, !llvm.ptr
  }
  func.return
}
