// RUN: aotk-opt %s --split-input-file --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// A float batch_matmul is a parallel loop over up to 8 slots, each running its share of
// the batch entries one after the other, one call of the packed micro-kernel per entry
// with the slot's own scratch. Transposed operands are read as stored (the _ta_tb
// kernel). 16 x 8 x 32 is 4096 multiply-adds an entry: side by side from 64 entries
// (2^18 in all), one slot below that; never one entry alone (from 2^24).
// CHECK-LABEL: func.func @entries_in_slots(
// CHECK-SAME:      %x: memref<?xf32>, %w: memref<?xf32>, %out0: memref<?xf32>, %workspace: !ptr_xdsl.ptr, %dim0: i64, %dim1: i64)
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[EIGHT:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[GRAIN:.*]] = arith.constant 262144 : index
// CHECK-DAG:     %[[WORK:.*]] = arith.constant 4096 : index
// CHECK-DAG:     %[[B:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK:         %[[ALL:.*]] = arith.muli %[[WORK]], %[[B]] : index
// CHECK-NEXT:    %[[ENOUGH:.*]] = arith.cmpi sge, %[[ALL]], %[[GRAIN]] : index
// CHECK-NEXT:    %[[FEW:.*]] = arith.minsi %[[B]], %[[EIGHT]] : index
// CHECK-NEXT:    %[[SOME:.*]] = arith.maxsi %[[FEW]], %[[ONE]] : index
// CHECK-NEXT:    %[[SLOTS:.*]] = arith.select %[[ENOUGH]], %[[SOME]], %[[ONE]] : index
// CHECK:         scf.for %[[SLOT:.*]] = %{{.*}} to %{{.*}} step %[[ONE]] {
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %[[ONE]] {
// CHECK:             func.call @aotk_uk_matmul_float32_packed_ta_tb(
// CHECK-NEXT:      }
// CHECK-NEXT:    } {aotk.parallel = 2 : i64}
// CHECK-NEXT:    func.return
func.func @entries_in_slots(%x: tensor<?x16x8xf32>, %w: tensor<?x32x16xf32>) -> tensor<?x8x32xf32> {
  %y = "aotk.batch_matmul"(%x, %w) <{transpose_lhs = true, transpose_rhs = true}> : (tensor<?x16x8xf32>, tensor<?x32x16xf32>) -> tensor<?x8x32xf32>
  func.return %y : tensor<?x8x32xf32>
}

// -----

// Entries of 2^24 multiply-adds or more run alone: one slot, whose micro-kernel call
// splits each entry across the threads itself.
// CHECK-LABEL: func.func @entries_alone(
// CHECK-NOT:     arith.minsi
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           func.call @aotk_uk_matmul_float32_packed(
func.func @entries_alone(%x: tensor<?x256x256xf32>, %w: tensor<?x256x256xf32>) -> tensor<?x256x256xf32> {
  %y = "aotk.batch_matmul"(%x, %w) : (tensor<?x256x256xf32>, tensor<?x256x256xf32>) -> tensor<?x256x256xf32>
  func.return %y : tensor<?x256x256xf32>
}
