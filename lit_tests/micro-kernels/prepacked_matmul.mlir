// The micro-kernels a scan's recurrent weight runs on, as `aotk kernels --print` shows
// them, tiled for AVX2 (this file is only the test: the kernels are generated).
// RUN: aotk kernels --tile-for avx2 --print pack_rhs_float32 | filecheck %s --check-prefix=PACK
// RUN: aotk kernels --tile-for avx2 --print pack_rhs_float32_tb | filecheck %s --check-prefix=PACKT
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_prepacked_add | filecheck %s --check-prefix=ADD
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed | filecheck %s --check-prefix=ALIAS

// The packer: N rounded up to whole slivers of 16 columns times K elements; threads split
// B's rows; whole vectors are copied, then the last sliver's rest is read masked (zeros
// in the padding), each vector to sliver j / 16 at j / 16 * 16 * K + kk * 16 + j % 16.
// PACK-LABEL: func.func @aotk_uk_pack_rhs_float32(
// PACK-SAME:      %packed: !ptr_xdsl.ptr, %b: !ptr_xdsl.ptr, %n: i64, %k: i64)
// PACK:         %[[W:.*]] = arith.constant 16 : index
// PACK:         scf.for %[[KK:.*]] = %{{.*}} to %{{.*}} step
// PACK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// PACK-NEXT:        %[[LANE:.*]] = arith.remui %[[J]], %[[W]] : index
// PACK:             %[[V:.*]] = vector.load
// PACK-NEXT:        vector.store %[[V]],
// PACK:           }
// PACK:           scf.for
// PACK:             vector.create_mask
// PACK:             vector.maskedload
// PACK:             vector.store
// PACK:         } {aotk.parallel =

// The packer from a B stored [N, K]: threads split squares' rows; a square is 8 rows of
// B by 8 of K, loaded as 8 vectors, transposed by 3 rounds of 8 shuffles and stored as
// 8 sliver rows; the K left over goes element by element, as do, after the parallel
// loop, the rows left over and the padding columns (a select puts zeros there).
// PACKT-LABEL: func.func @aotk_uk_pack_rhs_float32_tb(
// PACKT:         %[[L:.*]] = arith.constant 8 : index
// PACKT:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[L]] {
// PACKT:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[L]] {
// PACKT-COUNT-8:     vector.load {{.*}} vector<8xf32>
// PACKT-COUNT-24:    vector.shuffle
// PACKT-COUNT-8:     vector.store {{.*}} vector<8xf32>
// PACKT-NEXT:      }
// PACKT-NEXT:      scf.for
// PACKT-COUNT-8:     memref.store
// PACKT:         } {aotk.parallel =
// PACKT:         scf.for
// PACKT:           arith.cmpi slt
// PACKT:           scf.for
// PACKT:             %[[V:.*]] = memref.load
// PACKT:             %[[Z:.*]] = arith.select %{{.*}}, %[[V]], %{{.*}} : f32
// PACKT-NEXT:        memref.store %[[Z]],
// PACKT:         func.return

// The product from packed slivers with an addend: each (sliver, row tile) pair is one
// item of a parallel loop; a whole 6 x 2-vector tile starts its 12 accumulators from X
// (not zero, and not C), runs over all of K reading the sliver contiguously (row kk at
// kk * 16), and stores C once. A tile cut short by the last sliver is the same tile
// as few vectors wide as the columns need, its last vector read from X and stored to C
// masked (the sliver's padding is zeros): here one vector, the 6 rows' masked loads, a
// loop over all of K, the 6 masked stores.
// ADD-LABEL: func.func @aotk_uk_matmul_float32_prepacked_add(
// ADD-SAME:      %c: !ptr_xdsl.ptr, %a: !ptr_xdsl.ptr, %packed: !ptr_xdsl.ptr, %x: !ptr_xdsl.ptr, %m: i64, %n: i64, %k: i64)
// ADD:         %[[C:.*]] = ptr_xdsl.from_ptr %c
// ADD:         %[[P:.*]] = ptr_xdsl.from_ptr %packed
// ADD-NEXT:    %[[X:.*]] = ptr_xdsl.from_ptr %x
// ADD:         scf.for
// ADD:           scf.if
// ADD-COUNT-12:    vector.load %[[X]][
// ADD-NEXT:        scf.for {{.*}} iter_args(
// ADD:               vector.load %[[P]][
// ADD-NEXT:          arith.addi
// ADD-NEXT:          vector.load %[[P]][
// ADD:               vector.fma
// ADD:             }
// ADD-COUNT-12:    vector.store %{{.*}}, %[[C]][
// ADD:           } else {
// ADD:             scf.if
// ADD:               %[[MASK:.*]] = vector.create_mask
// ADD-COUNT-6:       vector.maskedload %[[X]][{{.*}}], %[[MASK]]
// ADD:               scf.for
// ADD-COUNT-6:       vector.maskedstore %[[C]][{{.*}}], %[[MASK]]
// ADD:         } {aotk.parallel =

// The packed kernel's row threshold: 64 rows, or 24 (4 row tiles) when B's rows alias:
// the largest power of two dividing the row's bytes (n * 4 & -(n * 4)) is at least
// 2048, K times it exceeds 2 MiB, and so does a thread's share of B (K x row bytes over
// the pool's width, asked of the runtime).
// ALIAS-LABEL: func.func @aotk_uk_matmul_float32_packed(
// ALIAS-DAG:     %[[FOUR_TILES:.*]] = arith.constant 24 : index
// ALIAS-DAG:     %[[L2:.*]] = arith.constant 2097152 : index
// ALIAS-DAG:     %[[ALIASED:.*]] = arith.constant 2048 : index
// ALIAS-DAG:     %[[MIN:.*]] = arith.constant 64 : index
// ALIAS:         %[[POW:.*]] = arith.andi %[[ROW:.*]], %{{.*}} : index
// ALIAS-NEXT:    %[[WIDE:.*]] = arith.cmpi sge, %[[POW]], %[[ALIASED]] : index
// ALIAS-NEXT:    %[[SPAN:.*]] = arith.muli %[[K:.*]], %[[POW]] : index
// ALIAS-NEXT:    %[[SPILL:.*]] = arith.cmpi sgt, %[[SPAN]], %[[L2]] : index
// ALIAS-NEXT:    %[[BYTES:.*]] = arith.muli %[[K]], %[[ROW]] : index
// ALIAS-NEXT:    %[[WIDTH:.*]] = func.call @aotk_parallel_width() : () -> i64
// ALIAS-NEXT:    %[[THREADS:.*]] = arith.index_cast %[[WIDTH]] : i64 to index
// ALIAS-NEXT:    %[[SHARE:.*]] = arith.divui %[[BYTES]], %[[THREADS]] : index
// ALIAS-NEXT:    %[[OVER:.*]] = arith.cmpi sgt, %[[SHARE]], %[[L2]] : index
// ALIAS-NEXT:    %[[SETS:.*]] = arith.andi %[[WIDE]], %[[SPILL]] : i1
// ALIAS-NEXT:    %[[BOTH:.*]] = arith.andi %[[SETS]], %[[OVER]] : i1
// ALIAS-NEXT:    %[[ROWS:.*]] = arith.select %[[BOTH]], %[[FOUR_TILES]], %[[MIN]] : index
// ALIAS-NEXT:    arith.cmpi sge, %{{.*}}, %[[ROWS]] : index
