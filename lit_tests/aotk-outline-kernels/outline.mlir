// RUN: aotk-opt %s -p aotk-outline-kernels | filecheck %s

// Each loop nest of an entry (`aotk.kernel`) becomes a private function called in its
// place; constants are rebuilt inside, other values it uses are passed. A pointer keeps
// noalias only when it is computed from a noalias entry argument no other argument of the
// kernel comes from: two views of the workspace are listed in `aotk.may_alias`.
// CHECK-LABEL: func.func @entry(
// CHECK-SAME:      %x: !llvm.ptr, %ws: !llvm.ptr, %n: index)
// CHECK:         %[[VIEW:.*]] = llvm.getelementptr %ws[64] : (!llvm.ptr) -> !llvm.ptr, i8
// CHECK-NEXT:    func.call @entry_k0(%n, %x, %[[VIEW]]) : (index, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    func.call @entry_k1(%n, %ws, %[[VIEW]]) : (index, !llvm.ptr, !llvm.ptr) -> ()
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @entry_k0(
// CHECK-SAME:      %{{.*}}: index, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr) {
// CHECK-DAG:     arith.constant 0 : index
// CHECK-DAG:     arith.constant 1 : index
// CHECK-DAG:     arith.constant 2.000000e+00 : f32
// CHECK:         scf.for
// CHECK:           arith.mulf
// CHECK:         func.return
// CHECK-NOT:     aotk.may_alias
// CHECK-LABEL: func.func private @entry_k1(
// CHECK-SAME:      attributes {aotk.may_alias = array<i64: 1, 2>}
// CHECK-LABEL: func.func @helper(
// CHECK-NOT:     func.call
// CHECK:         scf.for
func.func @entry(%x: !llvm.ptr, %ws: !llvm.ptr, %n: index) attributes {aotk.kernel = array<i64: 1, 0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %view = llvm.getelementptr %ws[64] : (!llvm.ptr) -> !llvm.ptr, i8
  scf.for %i = %c0 to %n step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %w = arith.mulf %v, %two : f32
    %w2 = arith.mulf %w, %w : f32
    %w3 = arith.addf %w2, %v : f32
    %w4 = arith.addf %w3, %two : f32
    %w5 = arith.mulf %w4, %w3 : f32
    %q = llvm.getelementptr %view[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %w5, %q : f32, !llvm.ptr
  }
  scf.for %i = %c0 to %n step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %ws[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %w = arith.mulf %v, %two : f32
    %w2 = arith.mulf %w, %w : f32
    %w3 = arith.addf %w2, %v : f32
    %w4 = arith.addf %w3, %two : f32
    %w5 = arith.mulf %w4, %w3 : f32
    %q = llvm.getelementptr %view[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %w5, %q : f32, !llvm.ptr
  }
  func.return
}

// Not an entry: left alone.
func.func @helper(%x: !llvm.ptr, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %w = arith.mulf %v, %v : f32
    %w2 = arith.mulf %w, %w : f32
    %w3 = arith.addf %w2, %v : f32
    %w4 = arith.addf %w3, %v : f32
    %w5 = arith.addf %w4, %v : f32
    llvm.store %w5, %p : f32, !llvm.ptr
  }
  func.return
}
