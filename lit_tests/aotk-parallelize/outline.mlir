// RUN: aotk-opt %s -p aotk-parallelize --split-input-file | filecheck %s

// A marked loop becomes a task over [begin, end) and a launch: the values its body takes
// from outside go through a stack context (constants are rebuilt in the task instead),
// and trip counts below the mark's threshold call the task directly on this thread.
// Its pointers, loaded from the context, would be known apart from nothing: the task
// passes them to a function of the iterations, which takes as `noalias` (no
// aotk.may_alias) those the enclosing function has as `noalias`: here %x and %y.
// CHECK:       func.func private @aotk_parallel_for(!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-LABEL: func.func @scale(
// CHECK-SAME:      %x: !llvm.ptr, %y: !llvm.ptr, %n: index)
// CHECK-NEXT:    %[[WORDS:.*]] = arith.constant 2 : i64
// CHECK-NEXT:    %[[SLOTS:.*]] = llvm.alloca %[[WORDS]] x i64
// CHECK-NEXT:    %[[CTX:.*]] = llvm.bitcast %[[SLOTS]] : !llvm.ptr to !llvm.ptr
// CHECK-NOT:     scf.for
// CHECK:         llvm.store %x, %{{.*}} {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
// CHECK:         llvm.store %y, %{{.*}} {alignment = 8 : i64} : !llvm.ptr, !llvm.ptr
// CHECK:         %[[SPAN:.*]] = arith.subi %n, %{{.*}} : index
// CHECK:         %[[TRIPS:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK:         %[[TASK:.*]] = llvm.mlir.addressof @scale_par0 : !llvm.ptr
// CHECK:         %[[BIG:.*]] = arith.cmpi sge, %[[TRIPS]], %{{.*}} : i64
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    scf.if %[[BIG]] {
// CHECK-NEXT:      func.call @aotk_parallel_for(%[[TASK]], %[[CTX]], %[[TRIPS]])
// CHECK-NEXT:    } else {
// CHECK-NEXT:      func.call @scale_par0(%[[CTX]], %[[ZERO]], %[[TRIPS]])
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @scale_par0(
// CHECK-SAME:      %[[C:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64) {
// CHECK:         %[[XP:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK:         %[[YP:.*]] = llvm.load %{{.*}} {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    func.call @scale_par0_body(%[[XP]], %[[YP]], %[[BEGIN]], %[[END]])
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @scale_par0_body(
// CHECK-SAME:      %[[X:.*]]: !llvm.ptr, %[[Y:.*]]: !llvm.ptr, %[[FROM:.*]]: i64, %[[TO:.*]]: i64) {
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         arith.index_cast %[[FROM]] : i64 to index
// CHECK:         %[[LO:.*]] = arith.addi %[[C0]], %{{.*}} : index
// CHECK:         arith.index_cast %[[TO]] : i64 to index
// CHECK:         %[[HI:.*]] = arith.addi %[[C0]], %{{.*}} : index
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[LO]] to %[[HI]] step %[[C1]] {
// CHECK:           llvm.getelementptr inbounds %[[X]][
// CHECK:           arith.mulf %{{.*}}, %[[TWO]] : f32
// CHECK:           llvm.getelementptr inbounds %[[Y]][
// CHECK:         }
// CHECK-NEXT:    func.return
func.func @scale(%x: !llvm.ptr, %y: !llvm.ptr, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %c4 = arith.constant 4 : index
    %off = arith.muli %i, %c4 : index
    %off64 = arith.index_cast %off : index to i64
    %p = llvm.getelementptr inbounds %x[%off64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %v = llvm.load %p : !llvm.ptr -> f32
    %w = arith.mulf %v, %two : f32
    %q = llvm.getelementptr inbounds %y[%off64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %w, %q : f32, !llvm.ptr
  } {aotk.parallel = 4 : i64}
  func.return
}

// -----

// Nested marks: the outer loop is outlined first, so the inner one is launched from the
// outer task, with its context on that task's stack. A threshold of 1 always launches.
// CHECK-LABEL: func.func @nested(
// CHECK:         func.call @aotk_parallel_for(%{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-NOT:     scf.if
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @nested_par0(
// CHECK-NEXT:    arith.constant 2 : i64
// CHECK-NEXT:    llvm.alloca
// CHECK:         scf.for
// CHECK:           llvm.mlir.addressof @nested_par0_par0
// CHECK:           scf.if
// CHECK:             func.call @aotk_parallel_for
// CHECK:             func.call @nested_par0_par0
// CHECK-LABEL: func.func private @nested_par0_par0(
// CHECK:         scf.for
// CHECK:           llvm.store
func.func @nested(%out: !llvm.ptr, %rows: index, %cols: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %rows step %c1 {
    %row = arith.muli %i, %cols : index
    scf.for %j = %c0 to %cols step %c1 {
      %at = arith.addi %row, %j : index
      %at64 = arith.index_cast %at : index to i64
      %p = llvm.getelementptr inbounds %out[%at64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %zero, %p : f32, !llvm.ptr
    } {aotk.parallel = 8 : i64}
  } {aotk.parallel = 1 : i64}
  func.return
}

// -----

// Pointers that may overlap where the loop is (aotk.may_alias of the enclosing function:
// a variable and its update) may overlap in the iterations too: then nothing is gained
// by a function of the iterations, and the task runs them itself.
// CHECK-LABEL: func.func private @update_par0(
// CHECK-NOT:     func.call
// CHECK:         scf.for
// CHECK-NOT:   func.func private @update_par0_body(
func.func @update(%w: !llvm.ptr, %w_new: !llvm.ptr, %n: index) attributes {aotk.may_alias = array<i64: 0, 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr inbounds %w[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %q = llvm.getelementptr inbounds %w_new[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %v, %q : f32, !llvm.ptr
  } {aotk.parallel = 4 : i64}
  func.return
}

// -----

// A task's name is one whose function of the iterations is free too: @twice_par0_body is
// taken here, so the task is @twice_par1, and it calls @twice_par1_body.
// CHECK-LABEL: func.func @twice(
// CHECK:         llvm.mlir.addressof @twice_par1 : !llvm.ptr
// CHECK-LABEL: func.func private @twice_par1(
// CHECK:         func.call @twice_par1_body(
// CHECK-LABEL: func.func private @twice_par1_body(
// CHECK-LABEL: func.func @twice_par0_body(
// CHECK-NEXT:    func.return
func.func @twice(%x: !llvm.ptr, %y: !llvm.ptr, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %c4 = arith.constant 4 : index
    %off = arith.muli %i, %c4 : index
    %off64 = arith.index_cast %off : index to i64
    %p = llvm.getelementptr inbounds %x[%off64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %v = llvm.load %p : !llvm.ptr -> f32
    %w = arith.mulf %v, %two : f32
    %q = llvm.getelementptr inbounds %y[%off64] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %w, %q : f32, !llvm.ptr
  } {aotk.parallel = 4 : i64}
  func.return
}
func.func @twice_par0_body() {
  func.return
}
