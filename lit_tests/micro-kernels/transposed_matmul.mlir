// The matmul micro-kernels that read an operand transposed (`aotk.matmul` with
// transpose_rhs / transpose_lhs), as `aotk kernels --print` shows them.
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed_tb | filecheck %s --check-prefix=TB
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed_ta | filecheck %s --check-prefix=TA

// B stored [N, K]: each of its rows (one column of a packed sliver) is read contiguously
// at j * K + kk and scattered into the scratch sliver, threads splitting the columns;
// the register tiles then run on the packed block as for an untransposed B. The rows
// left over are dot products of rows of A and B, four columns at a time, their
// multiply-adds free to contract and their sums to reassociate (LLVM vectorizes them).
// TB-LABEL: func.func @aotk_uk_matmul_float32_packed_tb(
// TB-DAG:     %[[K:.*]] = arith.index_cast %k : i64 to index
// TB-DAG:     %[[B:.*]] = ptr_xdsl.from_ptr %b : !ptr_xdsl.ptr -> memref<?xf32>
// TB-DAG:     %[[S:.*]] = ptr_xdsl.from_ptr %scratch : !ptr_xdsl.ptr -> memref<?xf32>
// TB:         } else {
// TB:           %[[ROW:.*]] = arith.muli %{{.*}}, %[[K]] : index
// TB:           scf.for %[[KK:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// TB-NEXT:        %[[AT:.*]] = arith.addi %[[ROW]], %[[KK]] : index
// TB-NEXT:        %[[V:.*]] = memref.load %[[B]][%[[AT]]] : memref<?xf32>
// TB:             memref.store %[[V]], %[[S]][%{{.*}}] : memref<?xf32>
// TB:         } {aotk.parallel =
// TB:         vector.fma
// TB:         scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
// TB:           arith.mulf {{.*}} fastmath<contract> : f32
// TB:           arith.addf {{.*}} fastmath<reassoc,contract> : f32
// TB:         func.return

// A stored [K, M]: per K block, each row of A^T is read contiguously and its elements
// placed in the sliver of their tile of rows, so a tile's broadcasts read consecutive
// scratch instead of rows M apart.
// TA-LABEL: func.func @aotk_uk_matmul_float32_packed_ta(
// TA-DAG:     %[[M:.*]] = arith.index_cast %m : i64 to index
// TA-DAG:     %[[A:.*]] = ptr_xdsl.from_ptr %a : !ptr_xdsl.ptr -> memref<?xf32>
// TA-DAG:     %[[S:.*]] = ptr_xdsl.from_ptr %scratch : !ptr_xdsl.ptr -> memref<?xf32>
// TA:         } else {
// TA:         %[[ROW:.*]] = arith.muli %{{.*}}, %[[M]] : index
// TA:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// TA:           %[[AT:.*]] = arith.addi %[[ROW]], %[[I]] : index
// TA-NEXT:      %[[V:.*]] = memref.load %[[A]][%[[AT]]] : memref<?xf32>
// TA-NEXT:      memref.store %[[V]], %[[S]][%{{.*}}] : memref<?xf32>
// TA:         } {aotk.parallel =
// TA:         vector.fma
// TA:         func.return
