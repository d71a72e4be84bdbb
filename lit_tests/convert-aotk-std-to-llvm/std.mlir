// RUN: aotk-opt %s --split-input-file -p convert-aotk-std-to-llvm | filecheck %s

// func, cf, arith and index become llvm; pointer arguments are noalias.
// CHECK-LABEL: llvm.func @fadd_loop(
// CHECK-SAME:      %x: !llvm.ptr {llvm.noalias}, %out0: !llvm.ptr {llvm.noalias}, %n: i64)
// CHECK-NEXT:    %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[C1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    llvm.br ^[[HEAD:.*]](%[[C0]] : i64)
// CHECK-NEXT:  ^[[HEAD]](%[[I:.*]]: i64):
// CHECK-NEXT:    %[[COND:.*]] = llvm.icmp "slt" %[[I]], %n : i64
// CHECK-NEXT:    llvm.cond_br %[[COND]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK-NEXT:    %[[OFF:.*]] = llvm.mul %[[I]], %[[C4]] : i64
// CHECK-NEXT:    %[[SRC:.*]] = llvm.getelementptr inbounds %x[%[[OFF]]]
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[SRC]]
// CHECK-NEXT:    %[[W:.*]] = llvm.fadd %[[V]], %[[V]] : f32
// CHECK-NEXT:    %[[DST:.*]] = llvm.getelementptr inbounds %out0[%[[OFF]]]
// CHECK-NEXT:    llvm.store %[[W]], %[[DST]]
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %[[I]], %[[C1]] : i64
// CHECK-NEXT:    llvm.br ^[[HEAD]](%[[NEXT]] : i64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    llvm.return
func.func @fadd_loop(%x: !llvm.ptr, %out0: !llvm.ptr, %n: i64) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %0 = arith.index_cast %n : i64 to index
  cf.br ^head(%c0 : index)
^head(%i: index):
  %cond = arith.cmpi slt, %i, %0 : index
  cf.cond_br %cond, ^body, ^exit
^body:
  %off = arith.muli %i, %c4 : index
  %off64 = arith.index_cast %off : index to i64
  %src = llvm.getelementptr inbounds %x[%off64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  %v = llvm.load %src : !llvm.ptr -> f32
  %w = arith.addf %v, %v : f32
  %dst = llvm.getelementptr inbounds %out0[%off64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
  llvm.store %w, %dst : f32, !llvm.ptr
  %next = arith.addi %i, %c1 : index
  cf.br ^head(%next : index)
^exit:
  func.return
}

// -----

// math ops become LLVM intrinsics; calls and returned values convert too. An fma
// flagged `contract` (a sum's or a polynomial's step) becomes llvm.fmuladd: fused only
// where the target has FMA.
// CHECK-LABEL: llvm.func @math_scalar(
// CHECK-SAME:      %x: f32) -> f32
// CHECK-NEXT:    %[[E:.*]] = llvm.intr.exp(%x) : (f32) -> f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call_intrinsic "llvm.tanh.f32"(%[[E]]) : (f32) -> f32
// CHECK-NEXT:    %[[F:.*]] = llvm.intr.fma(%[[T]], %x, %x) : (f32, f32, f32) -> f32
// CHECK-NEXT:    %[[A:.*]] = llvm.call_intrinsic "llvm.fmuladd.f32"(%[[F]], %x, %x) : (f32, f32, f32) -> f32
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.maximum.f32"(%[[A]], %x) : (f32, f32) -> f32
// CHECK-NEXT:    llvm.return %[[M]] : f32
// CHECK-LABEL: llvm.func @call_math(
// CHECK-NEXT:    %[[R:.*]] = llvm.call @math_scalar(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    llvm.return %[[R]] : f32
func.func @math_scalar(%x: f32) -> f32 {
  %e = math.exp %x : f32
  %t = math.tanh %e : f32
  %f = math.fma %t, %x, %x : f32
  %a = math.fma %f, %x, %x fastmath<contract> : f32
  %m = arith.maximumf %a, %x : f32
  func.return %m : f32
}
func.func @call_math(%x: f32) -> f32 {
  %r = func.call @math_scalar(%x) : (f32) -> f32
  func.return %r : f32
}

// -----

// Fast-math flags survive: a reduction's reassociable add stays reassociable for LLVM.
// CHECK-LABEL: llvm.func @reassociable_add(
// CHECK-NEXT:    %[[S:.*]] = llvm.fadd %a, %b {fastmathFlags = #llvm.fastmath<reassoc>} : f32
// CHECK-NEXT:    %[[P:.*]] = llvm.fmul %[[S]], %b : f32
// CHECK-NEXT:    llvm.return %[[P]] : f32
func.func @reassociable_add(%a: f32, %b: f32) -> f32 {
  %s = arith.addf %a, %b fastmath<reassoc> : f32
  %p = arith.mulf %s, %b : f32
  func.return %p : f32
}
