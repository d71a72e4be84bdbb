// The matmul micro-kernels that read an operand transposed (`aotk.matmul` with
// transpose_rhs / transpose_lhs), as `aotk kernels --print` shows them.
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed_tb | filecheck %s --check-prefix=TB
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed_ta | filecheck %s --check-prefix=TA

// B stored [N, K]: squares of 8 of its rows (8 columns of a packed sliver) by 8 of K
// are loaded as rows, transposed in registers by three rounds of shuffles (blocks of 4,
// then 2, then 1 trade places) and stored as 8 rows of the sliver, threads splitting
// the columns; the K left over is moved element by element. The register tiles then
// run on the packed block as for an untransposed B. The last columns (fewer than a
// sliver) are gathered from B's last rows into scratch rows a sliver wide, and tiled
// over all of K like an untransposed B's. The rows left over are dot products
// of rows of A and B, four columns at a time, their multiply-adds free to contract and
// their sums to reassociate (LLVM vectorizes them).
// TB-LABEL: func.func @aotk_uk_matmul_float32_packed_tb(
// TB-DAG:     %[[B:.*]] = ptr_xdsl.from_ptr %b : !ptr_xdsl.ptr -> memref<?xf32>
// TB-DAG:     %[[S:.*]] = ptr_xdsl.from_ptr %scratch : !ptr_xdsl.ptr -> memref<?xf32>
// TB:         } else {
// TB:           scf.for %[[KK:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// TB-COUNT-8:     vector.load %[[B]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// TB-NEXT:        %[[R0:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11] : vector<8xf32>, vector<8xf32>
// TB-NEXT:        vector.shuffle %{{.*}}, %{{.*}} [4, 5, 6, 7, 12, 13, 14, 15]
// TB-COUNT-6:     vector.shuffle
// TB-NEXT:        vector.shuffle %[[R0]], %{{.*}} [0, 1, 8, 9, 4, 5, 12, 13]
// TB-COUNT-7:     vector.shuffle
// TB-NEXT:        %[[C0:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 8, 2, 10, 4, 12, 6, 14]
// TB-COUNT-7:     vector.shuffle
// TB:             vector.store %[[C0]], %[[S]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// TB-COUNT-7:     vector.store {{.*}}, %[[S]]
// TB-NEXT:      }
// TB-NEXT:      scf.for
// TB-COUNT-8:     memref.store
// TB:         } {aotk.parallel =
// TB:         vector.fma
// TB:         scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32) {
// TB:           arith.mulf {{.*}} fastmath<contract> : f32
// TB:           arith.addf {{.*}} fastmath<reassoc,contract> : f32
// TB:         func.return

// A stored [K, M]: per K block, threads split the tiles of rows, and each tile's sliver
// is written in order: its mr (6 on AVX2) elements are adjacent in a row of A^T and in
// the sliver, so one vector copies them per K row. A tile's broadcasts then read
// consecutive scratch instead of rows M apart.
// TA-LABEL: func.func @aotk_uk_matmul_float32_packed_ta(
// TA-DAG:     %[[A:.*]] = ptr_xdsl.from_ptr %a : !ptr_xdsl.ptr -> memref<?xf32>
// TA-DAG:     %[[S:.*]] = ptr_xdsl.from_ptr %scratch : !ptr_xdsl.ptr -> memref<?xf32>
// TA:         } else {
// TA:         %[[V:.*]] = vector.load %[[A]][%{{.*}}] : memref<?xf32>, vector<6xf32>
// TA-NEXT:    %{{.*}} = arith.muli %{{.*}} : index
// TA-NEXT:    %{{.*}} = arith.addi %{{.*}} : index
// TA-NEXT:    vector.store %[[V]], %[[S]][%{{.*}}] : memref<?xf32>, vector<6xf32>
// TA-NEXT:    }
// TA-NEXT:    }
// TA-NEXT:    } {aotk.parallel =
// TA:         vector.fma
// TA:         func.return
