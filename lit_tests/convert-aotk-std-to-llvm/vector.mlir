// RUN: aotk-opt %s --split-input-file -p convert-aotk-std-to-llvm | filecheck %s

// vector.broadcast becomes insertelement + a zero shuffle, vector.fma (a sum's step)
// llvm.fmuladd, fused where the target has FMA,
// and vector loads/stores get element alignment (their address may be any element's).
// CHECK-LABEL: llvm.func @axpy_vector(
// CHECK:         %[[V:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
// CHECK:         %[[U:.*]] = llvm.mlir.undef : vector<8xf32>
// CHECK-NEXT:    %[[L0:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    %[[I:.*]] = llvm.insertelement %a, %[[U]][%[[L0]] : i32] : vector<8xf32>
// CHECK-NEXT:    %[[S:.*]] = llvm.shufflevector %[[I]], %[[U]] [0, 0, 0, 0, 0, 0, 0, 0] : vector<8xf32>
// CHECK-NEXT:    %[[F:.*]] = llvm.call_intrinsic "llvm.fmuladd.v8f32"(%[[S]], %[[V]], %[[V]])
// CHECK-NEXT:    llvm.store %[[F]], %{{.*}} {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
// CHECK-NOT:     vector.
func.func @axpy_vector(%x: !llvm.ptr, %out0: !llvm.ptr, %a: f32) {
  %v = llvm.load %x : !llvm.ptr -> vector<8xf32>
  %s = vector.broadcast %a : f32 to vector<8xf32>
  %f = vector.fma %s, %v, %v : vector<8xf32>
  llvm.store %f, %out0 : vector<8xf32>, !llvm.ptr
  func.return
}

// -----

// vector.reduction <maxnumf> becomes LLVM's horizontal fmax (softmax's row maximum).
// CHECK-LABEL: llvm.func @row_peak(
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fmax.v8f32"(%v) : (vector<8xf32>) -> f32
// CHECK-NEXT:    llvm.return %[[M]] : f32
func.func @row_peak(%v: vector<8xf32>) -> f32 {
  %m = vector.reduction <maxnumf>, %v : vector<8xf32> into f32
  func.return %m : f32
}

// -----

// vector.reduction <add> with reassoc (softmax's row sum) adds halves until one lane is
// left, which LLVM's ordered reduction from -0.0 returns as it is.
// CHECK-LABEL: llvm.func @row_sum(
// CHECK-NEXT:    %[[LO:.*]] = llvm.shufflevector %v, %v [0, 1, 2, 3] : vector<8xf32>
// CHECK-NEXT:    %[[HI:.*]] = llvm.shufflevector %v, %v [4, 5, 6, 7] : vector<8xf32>
// CHECK-NEXT:    %[[S4:.*]] = llvm.fadd %[[LO]], %[[HI]] : vector<4xf32>
// CHECK:         %[[S2:.*]] = llvm.fadd %{{.*}}, %{{.*}} : vector<2xf32>
// CHECK:         %[[S1:.*]] = llvm.fadd %{{.*}}, %{{.*}} : vector<1xf32>
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(-0.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[S:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fadd.v1f32"(%[[Z]], %[[S1]]) : (f32, vector<1xf32>) -> f32
// CHECK-NEXT:    llvm.return %[[S]] : f32
func.func @row_sum(%v: vector<8xf32>) -> f32 {
  %s = vector.reduction <add>, %v fastmath<reassoc> : vector<8xf32> into f32
  func.return %s : f32
}

// -----

// Without reassoc the lanes are added in order, by LLVM's ordered reduction.
// CHECK-LABEL: llvm.func @ordered_sum(
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(-0.000000e+00 : f64) : f64
// CHECK-NEXT:    %[[S:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fadd.v4f64"(%[[Z]], %v) : (f64, vector<4xf64>) -> f64
// CHECK-NEXT:    llvm.return %[[S]] : f64
func.func @ordered_sum(%v: vector<4xf64>) -> f64 {
  %s = vector.reduction <add>, %v : vector<4xf64> into f64
  func.return %s : f64
}

// -----

// vector.reduction <minnumf> becomes LLVM's horizontal fmin (argmin's row minimum).
// CHECK-LABEL: llvm.func @row_floor(
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.vector.reduce.fmin.v4f64"(%v) : (vector<4xf64>) -> f64
// CHECK-NEXT:    llvm.return %[[M]] : f64
func.func @row_floor(%v: vector<4xf64>) -> f64 {
  %m = vector.reduction <minnumf>, %v : vector<4xf64> into f64
  func.return %m : f64
}

// -----

// vector.create_mask %n becomes LLVM's active lane mask from 0: lane i is on when i < n
// (a matmul's last columns, fewer than a vector).
// CHECK-LABEL: llvm.func @edge_mask(
// CHECK-NEXT:    %[[Z:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[M:.*]] = llvm.call_intrinsic "llvm.get.active.lane.mask.v16i1.i64"(%[[Z]], %n) : (i64, i64) -> vector<16xi1>
// CHECK-NEXT:    llvm.return %[[M]] : vector<16xi1>
func.func @edge_mask(%n: index) -> vector<16xi1> {
  %m = vector.create_mask %n : vector<16xi1>
  func.return %m : vector<16xi1>
}

// -----

// vector.shuffle becomes llvm.shufflevector with the same mask (a matmul packing a
// transposed B transposes squares of it in registers).
// CHECK-LABEL: llvm.func @trade_halves(
// CHECK-NEXT:    %[[S:.*]] = llvm.shufflevector %a, %b [0, 1, 4, 5] : vector<4xf32>
// CHECK-NEXT:    llvm.return %[[S]] : vector<4xf32>
func.func @trade_halves(%a: vector<4xf32>, %b: vector<4xf32>) -> vector<4xf32> {
  %s = vector.shuffle %a, %b [0, 1, 4, 5] : vector<4xf32>, vector<4xf32>
  func.return %s : vector<4xf32>
}

// -----

// Compares and selects on vectors become marker calls (`codegen.markers`), which the
// llvm dialect verifies (its llvm.fcmp, llvm.icmp and llvm.select take scalars only) and
// the LLVM IR gets as fcmp, icmp and select on vectors; on scalars they stay llvm ops.
// CHECK-LABEL: llvm.func @lane_choices(
// CHECK-NEXT:    %[[LT:.*]] = llvm.call_intrinsic "llvm.aotk.fcmp.olt.v8f32"(%u, %v) : (vector<8xf32>, vector<8xf32>) -> vector<8xi1>
// CHECK-NEXT:    %[[LOW:.*]] = llvm.call_intrinsic "llvm.aotk.select.v8f32"(%[[LT]], %u, %v) : (vector<8xi1>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NEXT:    %[[GT:.*]] = llvm.call_intrinsic "llvm.aotk.icmp.sgt.v8i32"(%i, %j) : (vector<8xi32>, vector<8xi32>) -> vector<8xi1>
// CHECK-NEXT:    %[[TOP:.*]] = llvm.call_intrinsic "llvm.aotk.select.v8i32"(%[[GT]], %i, %j) : (vector<8xi1>, vector<8xi32>, vector<8xi32>) -> vector<8xi32>
// CHECK-NEXT:    %[[SLT:.*]] = llvm.fcmp "olt" %a, %b : f32
// CHECK-NEXT:    %{{.*}} = llvm.select %[[SLT]], %a, %b : i1, f32
func.func @lane_choices(%u: vector<8xf32>, %v: vector<8xf32>, %i: vector<8xi32>, %j: vector<8xi32>, %a: f32, %b: f32, %out: !llvm.ptr) {
  %lt = arith.cmpf olt, %u, %v : vector<8xf32>
  %low = arith.select %lt, %u, %v : vector<8xf32>
  %top = arith.maxsi %i, %j : vector<8xi32>
  %slt = arith.cmpf olt, %a, %b : f32
  %s = arith.select %slt, %a, %b : f32
  llvm.store %low, %out : vector<8xf32>, !llvm.ptr
  llvm.store %top, %out : vector<8xi32>, !llvm.ptr
  llvm.store %s, %out : f32, !llvm.ptr
  func.return
}
