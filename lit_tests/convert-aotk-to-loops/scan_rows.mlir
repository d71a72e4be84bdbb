// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops,aotk-cse,aotk-canonicalize | filecheck %s

// Every row of an LSTM-like step depends on its own row of the state and of the input
// alone: the 10 rows run as 2 blocks of 6 (the AVX2 register tile's rows), each block
// through all 3 steps, in one parallel loop. A block's rows start 6 * b rows into each
// buffer and number min(6, 10 - 6 * b); the step's prepacked matmul, the bias add and
// the gates all take them from the block's buffers.
// CHECK-LABEL: func.func @rows(
// CHECK-DAG:     %[[TEN:.*]] = arith.constant 10 : index
// CHECK-DAG:     %[[SIX:.*]] = arith.constant 6 : index
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[THREE:.*]] = arith.constant 3 : index
// CHECK:         func.call @aotk_uk_pack_rhs_float32(
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %[[TWO]] step
// CHECK-NEXT:      %[[R0:.*]] = arith.muli %[[B]], %[[SIX]] : index
// CHECK-NEXT:      %[[LEFT:.*]] = arith.subi %[[TEN]], %[[R0]] : index
// CHECK-NEXT:      %[[ROWS:.*]] = arith.minsi %[[SIX]], %[[LEFT]] : index
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[THREE]] step
// CHECK:             %[[M:.*]] = arith.index_cast %[[ROWS]] : index to i64
// CHECK:             func.call @aotk_uk_matmul_float32_prepacked_add(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[M]],
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-LABEL: func.func @rows_workspace_size(
func.func @rows(%xw: tensor<3x10x8xf32>, %h0: tensor<10x4xf32>, %u: tensor<4x8xf32>, %bias: tensor<8xf32>) -> tensor<10x4xf32> {
  %hn = aotk.scan seqs(%x = %xw) carries(%h = %h0) : (tensor<3x10x8xf32>, tensor<10x4xf32>) -> (tensor<10x4xf32>) {
    %p = "aotk.matmul"(%h, %u) : (tensor<10x4xf32>, tensor<4x8xf32>) -> tensor<10x8xf32>
    %z = "aotk.add"(%x, %p) : (tensor<10x8xf32>, tensor<10x8xf32>) -> tensor<10x8xf32>
    %zb = "aotk.add"(%z, %bias) : (tensor<10x8xf32>, tensor<8xf32>) -> tensor<10x8xf32>
    %a = "aotk.slice"(%zb) <{start = array<i64: 0, 0>, stop = array<i64: 9223372036854775807, 4>, step = array<i64: 1, 1>}> : (tensor<10x8xf32>) -> tensor<10x4xf32>
    %b = "aotk.slice"(%zb) <{start = array<i64: 0, 4>, stop = array<i64: 9223372036854775807, 9223372036854775807>, step = array<i64: 1, 1>}> : (tensor<10x8xf32>) -> tensor<10x4xf32>
    %n = aotk.fused(%ea = %a, %eb = %b) : (tensor<10x4xf32>, tensor<10x4xf32>) -> (tensor<10x4xf32>) {
      %t = "aotk.tanh"(%ea) : (tensor<f32>) -> tensor<f32>
      %m = "aotk.mul"(%t, %eb) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      aotk.yield %m : tensor<f32>
    }
    aotk.yield %n : tensor<10x4xf32>
  }
  func.return %hn : tensor<10x4xf32>
}

// A step that mixes rows (h times its Gram matrix h^T h) keeps all rows together: no
// loop over blocks of rows around the steps.
// CHECK-LABEL: func.func @mixed(
// CHECK-NOT:     aotk.parallel = 2
// CHECK-LABEL: func.func @mixed_workspace_size(
func.func @mixed(%xs: tensor<3x10x4xf32>, %h0: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %hn = aotk.scan seqs(%x = %xs) carries(%h = %h0) : (tensor<3x10x4xf32>, tensor<10x4xf32>) -> (tensor<10x4xf32>) {
    %g = "aotk.matmul"(%h, %h) <{transpose_lhs = true}> : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<4x4xf32>
    %p = "aotk.matmul"(%h, %g) : (tensor<10x4xf32>, tensor<4x4xf32>) -> tensor<10x4xf32>
    %n = "aotk.add"(%x, %p) : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
    aotk.yield %n : tensor<10x4xf32>
  }
  func.return %hn : tensor<10x4xf32>
}

// Rows known only at the call (%dim0 of the steps, %dim1 of the state): whole tiles
// per block, at most 8 blocks; the blocks split only where the steps and the state
// have as many rows, else one block runs each buffer's own rows.
// CHECK-LABEL: func.func @at_call(
// CHECK-DAG:     %[[ROWS:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK-DAG:     %[[STATE:.*]] = arith.index_cast %dim1 : i64 to index
// CHECK:         %[[UP:.*]] = arith.addi %[[ROWS]], %{{.*}} : index
// CHECK-NEXT:    %[[EIGHTH:.*]] = arith.divui %[[UP]], %{{.*}} : index
// CHECK-NEXT:    %{{.*}} = arith.maxsi %[[EIGHTH]], %{{.*}} : index
// CHECK:         %[[PER:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[SAME:.*]] = arith.cmpi eq, %[[ROWS]], %[[STATE]] : index
// CHECK:         %[[BLOCKS:.*]] = arith.divui %{{.*}}, %[[PER]] : index
// CHECK-NEXT:    %[[COUNT:.*]] = arith.select %[[SAME]], %[[BLOCKS]], %{{.*}} : index
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %[[COUNT]] step
// CHECK-NEXT:      %[[R0:.*]] = arith.muli %[[B]], %[[PER]] : index
// CHECK-NEXT:      %[[LEFT:.*]] = arith.subi %[[ROWS]], %[[R0]] : index
// CHECK-NEXT:      %[[SIZE:.*]] = arith.minsi %[[PER]], %[[LEFT]] : index
// CHECK:           %{{.*}} = arith.select %[[SAME]], %[[SIZE]], %[[STATE]] : index
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-LABEL: func.func @at_call_workspace_size(
func.func @at_call(%xw: tensor<3x?x8xf32>, %h0: tensor<?x8xf32>, %u: tensor<8x8xf32>) -> tensor<?x8xf32> {
  %hn = aotk.scan seqs(%x = %xw) carries(%h = %h0) : (tensor<3x?x8xf32>, tensor<?x8xf32>) -> (tensor<?x8xf32>) {
    %p = "aotk.matmul"(%h, %u) : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    %z = "aotk.add"(%x, %p) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
    %n = "aotk.tanh"(%z) : (tensor<?x8xf32>) -> tensor<?x8xf32>
    aotk.yield %n : tensor<?x8xf32>
  }
  func.return %hn : tensor<?x8xf32>
}

// A value from outside the steps with their rows (a dropout mask made once): each
// block reads its own rows of it, 4 * b * 6 elements in, through one view made before
// its steps.
// CHECK-LABEL: func.func @outside(
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %[[TWO]] step
// CHECK-NEXT:      %[[R0:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK:           %[[AT:.*]] = arith.muli %[[R0]], %{{.*}} : index
// CHECK-NEXT:      %[[KEEP:.*]] = ptr_xdsl.to_ptr %keep
// CHECK-NEXT:      %[[BYTES:.*]] = arith.muli %[[AT]], %{{.*}} : index
// CHECK-NEXT:      %[[MOVED:.*]] = ptr_xdsl.ptradd %[[KEEP]], %[[BYTES]]
// CHECK-NEXT:      %[[ROWS:.*]] = ptr_xdsl.from_ptr %[[MOVED]]
// CHECK:           scf.for
// CHECK:               memref.load %[[ROWS]][
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-LABEL: func.func @outside_workspace_size(
func.func @outside(%xs: tensor<3x10x4xf32>, %h0: tensor<10x4xf32>, %u: tensor<4x4xf32>, %keep: tensor<10x4xf32>) -> tensor<10x4xf32> {
  %hn = aotk.scan seqs(%x = %xs) carries(%h = %h0) : (tensor<3x10x4xf32>, tensor<10x4xf32>) -> (tensor<10x4xf32>) {
    %dropped = "aotk.mul"(%h, %keep) : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
    %p = "aotk.matmul"(%dropped, %u) : (tensor<10x4xf32>, tensor<4x4xf32>) -> tensor<10x4xf32>
    %n = "aotk.add"(%x, %p) : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
    aotk.yield %n : tensor<10x4xf32>
  }
  func.return %hn : tensor<10x4xf32>
}

// K.rnn's mask: each step's (rows,) booleans, reshaped to (rows, 1), keep the new state
// or the old. The reshape keeps the rows: the block's booleans start b * 6 in, and the
// select reads them by the block's row.
// CHECK-LABEL: func.func @masked(
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         scf.for %[[B:.*]] = %{{.*}} to %[[TWO]] step
// CHECK-NEXT:      %[[R0:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK:           scf.for
// CHECK:             %[[MS:.*]] = ptr_xdsl.to_ptr %ms
// CHECK-NEXT:        %[[STEP:.*]] = ptr_xdsl.ptradd %[[MS]], %{{.*}}
// CHECK-NEXT:        %[[FIRST:.*]] = ptr_xdsl.ptradd %[[STEP]], %[[R0]]
// CHECK-NEXT:        %[[KEEP:.*]] = ptr_xdsl.from_ptr %[[FIRST]]
// CHECK:             scf.for %[[ROW:.*]] = %{{.*}} to
// CHECK-NEXT:          scf.for
// CHECK-NEXT:            memref.load %[[KEEP]][%[[ROW]]]
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-LABEL: func.func @masked_workspace_size(
func.func @masked(%xs: tensor<3x10x4xf32>, %ms: tensor<3x10xi1>, %h0: tensor<10x4xf32>, %u: tensor<4x4xf32>) -> tensor<10x4xf32> {
  %hn = aotk.scan seqs(%x = %xs, %m = %ms) carries(%h = %h0) : (tensor<3x10x4xf32>, tensor<3x10xi1>, tensor<10x4xf32>) -> (tensor<10x4xf32>) {
    %p = "aotk.matmul"(%h, %u) : (tensor<10x4xf32>, tensor<4x4xf32>) -> tensor<10x4xf32>
    %n = "aotk.add"(%x, %p) : (tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
    %keep = "aotk.reshape"(%m) <{shape = array<i64: 10, 1>}> : (tensor<10xi1>) -> tensor<10x1xi1>
    %new = "aotk.select"(%keep, %n, %h) : (tensor<10x1xi1>, tensor<10x4xf32>, tensor<10x4xf32>) -> tensor<10x4xf32>
    aotk.yield %new : tensor<10x4xf32>
  }
  func.return %hn : tensor<10x4xf32>
}
