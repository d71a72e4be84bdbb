// RUN: aotk-opt %s --split-input-file -p convert-aotk-to-loops | filecheck %s

// A reshape moves no data: the neg reads %x directly, over dim0 * 4 elements (in chunks
// that threads may share).
// CHECK-LABEL: func.func @reshape_flatten(
// CHECK:         %[[N:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK:         %[[TOTAL:.*]] = arith.muli %[[N]], %{{.*}} : index
// CHECK:         scf.for
// CHECK:           %[[END:.*]] = arith.minsi %{{.*}}, %[[TOTAL]] : index
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %[[END]] step
// CHECK-NEXT:        %[[V:.*]] = memref.load %x[%[[I]]] : memref<?xf32>
// CHECK-NEXT:        %[[NEG:.*]] = arith.negf %[[V]] : f32
// CHECK-NEXT:        memref.store %[[NEG]], %out0[%[[I]]] : memref<?xf32>
func.func @reshape_flatten(%x: tensor<?x4xf32>) -> tensor<?xf32> {
  %r = "aotk.reshape"(%x) <{shape = array<i64: -1>}> : (tensor<?x4xf32>) -> tensor<?xf32>
  %y = "aotk.neg"(%r) : (tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

// -----

// The transpose (a 2-D one: the 32-bit transpose micro-kernel, with batch 1, dim0 rows
// and 3 columns, reversing nothing) writes a 64-byte aligned slice of the workspace, which the neg reads;
// the workspace size is 3 * dim0 * 4 bytes rounded up to 64.
// CHECK-LABEL: func.func @transpose_then_neg(
// CHECK:         %[[N:.*]] = arith.index_cast %dim0 : i64 to index
// CHECK:         %[[P:.*]] = ptr_xdsl.ptradd %workspace, %{{.*}} : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
// CHECK-NEXT:    %[[T:.*]] = ptr_xdsl.from_ptr %[[P]] : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-DAG:     %[[DST:.*]] = ptr_xdsl.to_ptr %[[T]]
// CHECK-DAG:     %[[SRC:.*]] = ptr_xdsl.to_ptr %w
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[ROWS:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-DAG:     %[[COLS:.*]] = arith.constant 3 : i64
// CHECK-DAG:     %[[FORWARD:.*]] = arith.constant 0 : i64
// CHECK:         func.call @aotk_uk_transpose_32bit(%[[DST]], %[[SRC]], %[[ONE]], %[[ROWS]], %[[COLS]], %[[FORWARD]])
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK-NEXT:        memref.load %[[T]][
// CHECK-NEXT:        arith.negf
// CHECK-NEXT:        memref.store %{{.*}}, %out0[
// The size is 64-byte aligned (3 * n * 4 + 63) / 64 * 64, and each run-time product and
// sum is checked against 2**56 (products by division: 3 * n past it when n > 2**56 / 3):
// at dims that overflow, the function returns -1 instead of a wrapped-around size.
// CHECK-LABEL: func.func @transpose_then_neg_workspace_size(
// CHECK-DAG:     %[[LIMIT3:.*]] = arith.constant 24019198012642645 : index
// CHECK-DAG:     arith.constant 63 : index
// CHECK-DAG:     %[[N:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK:         arith.muli %{{.*}}, %[[N]] : index
// CHECK-NEXT:    arith.cmpi sgt, %[[N]], %[[LIMIT3]] : index
// CHECK:         arith.divui
// CHECK:         %[[SIZE:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT:    %[[MINUS1:.*]] = arith.constant -1 : i64
// CHECK-NEXT:    %[[OUT:.*]] = arith.select %{{.*}}, %[[MINUS1]], %[[SIZE]] : i64
// CHECK-NEXT:    func.return %[[OUT]] : i64
func.func @transpose_then_neg(%w: tensor<?x3xf32>) -> tensor<3x?xf32> {
  %t = "aotk.transpose"(%w) <{perm = array<i64: 1, 0>}> : (tensor<?x3xf32>) -> tensor<3x?xf32>
  %y = "aotk.neg"(%t) : (tensor<3x?xf32>) -> tensor<3x?xf32>
  func.return %y : tensor<3x?xf32>
}

// -----

// A conv kernel's transpose for its input gradient, taps read back to front: one call
// of the micro-kernel over the 9 taps' 5 x 4 matrices, reading them last to first.
// CHECK-LABEL: func.func @transposed_conv_kernel(
// CHECK-DAG:     %[[TAPS:.*]] = arith.constant 9 : i64
// CHECK-DAG:     %[[ROWS:.*]] = arith.constant 5 : i64
// CHECK-DAG:     %[[COLS:.*]] = arith.constant 4 : i64
// CHECK-DAG:     %[[BACKWARD:.*]] = arith.constant 1 : i64
// CHECK:         func.call @aotk_uk_transpose_32bit(%{{.*}}, %{{.*}}, %[[TAPS]], %[[ROWS]], %[[COLS]], %[[BACKWARD]])
// CHECK-NOT:     scf.for
func.func @transposed_conv_kernel(%w: tensor<3x3x5x4xf32>) -> tensor<3x3x4x5xf32> {
  %t = "aotk.transpose"(%w) <{perm = array<i64: 0, 1, 3, 2>, reverse = array<i64: 0, 1>}> : (tensor<3x3x5x4xf32>) -> tensor<3x3x4x5xf32>
  func.return %t : tensor<3x3x4x5xf32>
}

// -----

// Reversing an axis of the matrices themselves is no batch of 2-D transposes: a nest
// reading x[i, 4 - k, j] for out[i, j, k].
// CHECK-LABEL: func.func @transpose_reversing_a_matrix_axis(
// CHECK-NOT:     func.call
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         scf.for
// CHECK-NEXT:      scf.for
// CHECK-NEXT:        scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:          arith.subi %[[FOUR]], %[[K]] : index
func.func @transpose_reversing_a_matrix_axis(%x: tensor<2x5x3xf32>) -> tensor<2x3x5xf32> {
  %t = "aotk.transpose"(%x) <{perm = array<i64: 0, 2, 1>, reverse = array<i64: 1>}> : (tensor<2x5x3xf32>) -> tensor<2x3x5xf32>
  func.return %t : tensor<2x3x5xf32>
}

// -----

// Swapping the two outer axes of a (batch, time, features) sequence, as `K.rnn` does,
// is no batch of 2-D transposes either: a nest copying rows of 512, threads splitting
// its outer loop (it ran on one thread, at half the speed two reach).
// CHECK-LABEL: func.func @swap_outer_axes(
// CHECK-NOT:     func.call
// CHECK:         scf.for
// CHECK-NEXT:      scf.for
// CHECK-NEXT:        scf.for
// CHECK:               memref.load %x[
// CHECK:               memref.store %{{.*}}, %out0[
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:  } {aotk.parallel = 2 : i64}
func.func @swap_outer_axes(%x: tensor<32x?x512xf32>) -> tensor<?x32x512xf32> {
  %t = "aotk.transpose"(%x) <{perm = array<i64: 1, 0, 2>}> : (tensor<32x?x512xf32>) -> tensor<?x32x512xf32>
  func.return %t : tensor<?x32x512xf32>
}

// -----

// Concatenation copies each input into its slab of the output; %b's rows start at 4.
// CHECK-LABEL: func.func @concat_rows(
// CHECK-SAME:      %a: memref<12xf32>, %b: memref<6xf32>, %out0: memref<18xf32>
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             %[[A:.*]] = memref.load %a[
// CHECK:             memref.store %[[A]], %out0[
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for
// CHECK:             %[[ROW:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK:             %[[B:.*]] = memref.load %b[
// CHECK:             arith.muli %[[ROW]]
// CHECK:             memref.store %[[B]], %out0[
func.func @concat_rows(%a: tensor<4x3xf32>, %b: tensor<2x3xf32>) -> tensor<6x3xf32> {
  %y = "aotk.concat"(%a, %b) <{axis = 0 : i64}> : (tensor<4x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
  func.return %y : tensor<6x3xf32>
}

// -----

// w[1:3, ::2]: source row 1 + i, column 2 * j. Index constants are made once, at the top.
// CHECK-LABEL: func.func @slice_strided(
// CHECK-SAME:      %w: memref<12xf32>, %out0: memref<4xf32>
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:        %[[ROW:.*]] = arith.addi %[[ONE]], %[[I]] : index
// CHECK-NEXT:        %[[COL:.*]] = arith.muli %[[J]], %[[TWO]] : index
// CHECK:             %[[V:.*]] = memref.load %w[
// CHECK:             memref.store %[[V]], %out0[
func.func @slice_strided(%w: tensor<4x3xf32>) -> tensor<2x2xf32> {
  %y = "aotk.slice"(%w) <{start = array<i64: 1, 0>, stop = array<i64: 3, 9223372036854775807>, step = array<i64: 1, 2>}> : (tensor<4x3xf32>) -> tensor<2x2xf32>
  func.return %y : tensor<2x2xf32>
}

// -----

// Copies that move megabytes split their outer loop across threads (from as many rows
// as repay a task): each input's slab of a concatenation.
// CHECK-LABEL: func.func @concat_large(
// CHECK:         scf.for
// CHECK:           memref.load %a[
// CHECK:         } {aotk.parallel =
// CHECK:         scf.for
// CHECK:           memref.load %b[
// CHECK:         } {aotk.parallel =
func.func @concat_large(%a: tensor<?x1024xf32>, %b: tensor<?x1024xf32>) -> tensor<?x2048xf32> {
  %y = "aotk.concat"(%a, %b) <{axis = 1 : i64}> : (tensor<?x1024xf32>, tensor<?x1024xf32>) -> tensor<?x2048xf32>
  func.return %y : tensor<?x2048xf32>
}

// -----

// A pad fills the output, then copies x into it: both loops split across threads, the
// fill from 262144 elements.
// CHECK-LABEL: func.func @pad_images(
// CHECK:         scf.for
// CHECK-NEXT:      memref.store
// CHECK-NEXT:    } {aotk.parallel = 262144 : i64}
// CHECK:         scf.for
// CHECK:           memref.load %x[
// CHECK:         } {aotk.parallel =
func.func @pad_images(%x: tensor<?x32x32x16xf32>) -> tensor<?x34x34x16xf32> {
  %y = "aotk.pad"(%x) <{before = array<i64: 0, 1, 1, 0>, after = array<i64: 0, 1, 1, 0>, value = 0.000000e+00 : f64}> : (tensor<?x32x32x16xf32>) -> tensor<?x34x34x16xf32>
  func.return %y : tensor<?x34x34x16xf32>
}

// -----

// A gather copies each picked row (or zeros, for an index out of range) to its own
// place: threads split the indices. (Its gradient adds rows into the table, where
// indices repeat, and stays on one thread.)
// CHECK-LABEL: func.func @embedding_rows(
// CHECK:         scf.for
// CHECK-NEXT:      scf.for
// CHECK:             memref.load %ids[
// CHECK:             scf.if
// CHECK:               memref.load %table[
// CHECK-NEXT:          memref.store %{{.*}}, %out0[
// CHECK:         } {aotk.parallel =
func.func @embedding_rows(%table: tensor<20000x256xf32>, %ids: tensor<?x64xi32>) -> tensor<?x64x256xf32> {
  %y = "aotk.gather"(%table, %ids) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<20000x256xf32>, tensor<?x64xi32>) -> tensor<?x64x256xf32>
  func.return %y : tensor<?x64x256xf32>
}

// -----

// Its gradient zeroes the table on every thread. Indices may repeat, so threads do not
// split them: with enough work, each thread scans them all and adds into its own range
// [lo, hi) of the table's rows, skipping the others; else one adds them all, inline.
// CHECK-LABEL: func.func @embedding_rows_grad(
// CHECK:         scf.for
// CHECK-NEXT:      memref.store
// CHECK-NEXT:    } {aotk.parallel = 262144 : i64}
// CHECK:         func.call @aotk_parallel_width()
// CHECK:         %[[PARTS:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[SPLIT:.*]] = arith.cmpi ugt, %[[PARTS]], %{{.*}} : index
// CHECK-NEXT:    scf.if %[[SPLIT]] {
// CHECK-NEXT:      scf.for %{{.*}} = %{{.*}} to %[[PARTS]] step
// CHECK:             %[[LO:.*]] = arith.divui %{{.*}}, %[[PARTS]] : index
// CHECK:             %[[HI:.*]] = arith.divui %{{.*}}, %[[PARTS]] : index
// CHECK:                 memref.load %ids[
// CHECK:                 %[[OFF:.*]] = arith.subi %{{.*}}, %[[LO]] : index
// CHECK-NEXT:            %[[SPAN:.*]] = arith.subi %[[HI]], %[[LO]] : index
// CHECK-NEXT:            %[[MINE:.*]] = arith.cmpi ult, %[[OFF]], %[[SPAN]] : index
// CHECK:                 scf.if %[[MINE]] {
// CHECK:                     memref.load %out0[
// CHECK:                     memref.load %g[
// CHECK:           } {aotk.parallel = 2 : i64}
// CHECK-NEXT:    } else {
// CHECK:             memref.load %ids[
// CHECK:                   memref.load %out0[
// CHECK-NOT:     aotk.parallel
// CHECK:         func.return
func.func @embedding_rows_grad(%g: tensor<?x64x256xf32>, %ids: tensor<?x64xi32>, %table: tensor<20000x256xf32>) -> tensor<20000x256xf32> {
  %y = "aotk.gather_grad"(%g, %ids, %table) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<?x64x256xf32>, tensor<?x64xi32>, tensor<20000x256xf32>) -> tensor<20000x256xf32>
  func.return %y : tensor<20000x256xf32>
}
