// The float32 matmul micro-kernel, as `aotk kernels --print` shows it (this file is only
// the test: the kernel is generated, not read from here).
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed | filecheck %s --check-prefix=LOOPS
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed --stage llvm | filecheck %s --check-prefix=LLVM
// RUN: aotk kernels --tile-for avx2 --print matmul_float32 | filecheck %s --check-prefix=EDGE
// RUN: aotk kernels --tile-for avx2 --print matmul_float32_packed_update | filecheck %s --check-prefix=UPD

// Stage loops: pointers and i64 dims in, every dim dynamic; B packed into the scratch
// buffer, then register tiles of vector FMAs run over the packed block. Nothing zeroes
// all of C first: the tiles write it, and the panels zero only the part they add to.
// LOOPS-LABEL: func.func @aotk_uk_matmul_float32_packed(
// LOOPS-SAME:      %c: !ptr_xdsl.ptr, %a: !ptr_xdsl.ptr, %b: !ptr_xdsl.ptr, %scratch: !ptr_xdsl.ptr, %m: i64, %n: i64, %k: i64)
// LOOPS:         %[[C:.*]] = ptr_xdsl.from_ptr %c : !ptr_xdsl.ptr -> memref<?xf32>
// LOOPS:         %[[S:.*]] = ptr_xdsl.from_ptr %scratch : !ptr_xdsl.ptr -> memref<?xf32>
// A product of fewer multiply-adds than a grain (2^18) for each of two threads runs on
// the caller's thread: each parallel loop is one over slots, a slot per trip where
// %[[SHARE]] holds, else one slot running all the trips.
// LOOPS-NEXT:    %[[NK:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// LOOPS-NEXT:    %[[MNK:.*]] = arith.muli %{{.*}}, %[[NK]] : index
// LOOPS-NEXT:    %[[SHARE:.*]] = arith.cmpi sge, %[[MNK]], %{{.*}} : index
// A matrix-vector product (M <= 2) splits B's columns into one stripe per thread of the
// pool, whose size the runtime tells; each stripe zeroes its columns of C, then adds
// panels into them. Larger M splits rows of register tiles.
// LOOPS-NEXT:    %[[FEW:.*]] = arith.cmpi sle, %{{.*}}, %{{.*}} : index
// LOOPS-NEXT:    scf.if %[[FEW]] {
// LOOPS:           %{{.*}} = func.call @aotk_parallel_width() : () -> i64
// LOOPS:           %[[PER:.*]] = arith.select %[[SHARE]], %{{.*}}, %{{.*}} : index
// LOOPS:           scf.for %[[SLOT:.*]] = %{{.*}} to %{{.*}} step
// LOOPS-NEXT:        arith.muli %[[SLOT]], %[[PER]] : index
// LOOPS:             vector.store %{{.*}}, %[[C]][
// LOOPS:           } {aotk.parallel =
// LOOPS:         } else {
// LOOPS:         vector.store %{{.*}}, %[[S]][
// A tile's accumulators start at zero in the first K block, else from C.
// LOOPS:         %[[C0:.*]] = vector.load %[[C]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// LOOPS-NEXT:    arith.select %{{.*}}, %{{.*}}, %[[C0]] : vector<8xf32>
// Each k step first prefetches a line of B's next panel into L2 (a read, locality 2,
// data) for the pack that follows this panel's tiles (`matmul_prefetch`).
// LOOPS:         %[[LINE:.*]] = ptr_xdsl.ptradd
// LOOPS-NEXT:    %[[READ:.*]] = llvm.mlir.constant(0 : i32) : i32
// LOOPS-NEXT:    %[[INTO_L2:.*]] = llvm.mlir.constant(2 : i32) : i32
// LOOPS-NEXT:    %[[DATA:.*]] = llvm.mlir.constant(1 : i32) : i32
// LOOPS-NEXT:    llvm.call_intrinsic "llvm.prefetch.p0"(%[[LINE]], %[[READ]], %[[INTO_L2]], %[[DATA]])
// LOOPS:         vector.fma
// B's last columns (fewer than a sliver: N = 1024 leaves 16 on AVX-512) are copied,
// all K rows, into scratch rows one sliver wide, zero-padded by masked loads; then
// threads split the row tiles, whose accumulators stay in registers over all of K.
// LOOPS:         %[[EM:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// LOOPS:         scf.for
// LOOPS:           %[[E:.*]] = vector.maskedload %{{.*}}[%{{.*}}], %[[EM]], %{{.*}}
// LOOPS-NEXT:      vector.store %[[E]], %[[S]][
// LOOPS:         } {aotk.parallel =
// LOOPS:         scf.for {{.*}} -> ({{(vector<8xf32>, ){5}vector<8xf32>}}) {
// LOOPS:           vector.load %[[S]][
// LOOPS-COUNT-6:   vector.fma
// LOOPS:         } {aotk.parallel =
// LOOPS:         func.return
// LOOPS:       func.func private @aotk_parallel_width() -> i64
// LOOPS-NOT:   func.func

// Stage llvm: an exported function with noalias pointers, parallel loops outlined and
// handed to the thread pool.
// LLVM:        llvm.func @aotk_parallel_for(!llvm.ptr, !llvm.ptr, i64)
// LLVM-LABEL:  llvm.func @aotk_uk_matmul_float32_packed(%c: !llvm.ptr {llvm.noalias}, %a: !llvm.ptr {llvm.noalias}, %b: !llvm.ptr {llvm.noalias}, %scratch: !llvm.ptr {llvm.noalias}, %m: i64, %n: i64, %k: i64)
// LLVM:          llvm.call @aotk_parallel_for(
// LLVM:        llvm.func @aotk_uk_matmul_float32_packed_par0(

// Fewer columns than a sliver (a classifier's 10 outputs) and no scratch: threads split
// the row tiles, and each column of a tile stays in registers over all of K: 6
// accumulators of one vector, started at zero (C is written, never read), then for the
// last N mod 8 columns one masked vector of B per step and 6 masked stores. (Panels
// blocked over K had a parallel loop per K block.)
// EDGE-LABEL: func.func @aotk_uk_matmul_float32(
// EDGE:         } else {
// EDGE:           scf.for {{.*}} iter_args({{.*}}) -> ({{(vector<8xf32>, ){5}vector<8xf32>}}) {
// EDGE-COUNT-6:     vector.fma
// EDGE:           %[[MASK:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// EDGE-NOT:       vector.maskedload
// EDGE:           scf.for {{.*}} iter_args({{.*}}) -> ({{(vector<8xf32>, ){5}vector<8xf32>}}) {
// EDGE-NEXT:        arith.muli
// EDGE-NEXT:        arith.addi
// EDGE-NEXT:        vector.maskedload %{{.*}}[%{{.*}}], %[[MASK]]
// EDGE-COUNT-6:     vector.fma
// EDGE:           }
// EDGE-COUNT-6:   vector.maskedstore %{{.*}}[%{{.*}}], %[[MASK]], %{{.*}}
// EDGE-NEXT:    }
// EDGE-NEXT:  }
// EDGE-NEXT:  } {aotk.parallel =

// An update, C + alpha * A @ B (`aotk.matmul_update`): alpha is read once; a register
// tile's accumulators start at one value in every K block (zero: no select from C), and
// each is added to C, scaled by alpha, where it is stored: C is read once per tile.
// UPD-LABEL: func.func @aotk_uk_matmul_float32_packed_update(
// UPD-SAME:      %alpha: !ptr_xdsl.ptr, %m: i64, %n: i64, %k: i64)
// UPD:         %[[C:.*]] = ptr_xdsl.from_ptr %c : !ptr_xdsl.ptr -> memref<?xf32>
// UPD:         %[[AP:.*]] = ptr_xdsl.from_ptr %alpha : !ptr_xdsl.ptr -> memref<?xf32>
// UPD-NEXT:    %[[ALPHA:.*]] = memref.load %[[AP]][%{{.*}}] : memref<?xf32>
// UPD:         %[[ACC:[0-9]+]], {{.*}} = scf.for {{.*}} iter_args(%{{[0-9]+}} = %[[Z:[0-9]+]], %{{[0-9]+}} = %[[Z]], {{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// UPD:         scf.yield
// UPD-NEXT:    }
// UPD-NEXT:    %[[OLD:.*]] = vector.load %[[C]][%[[AT:.*]]] : memref<?xf32>, vector<8xf32>
// UPD-NEXT:    %[[SCALE:.*]] = vector.broadcast %[[ALPHA]] : f32 to vector<8xf32>
// UPD-NEXT:    %[[NEW:.*]] = vector.fma %[[SCALE]], %[[ACC]], %[[OLD]] : vector<8xf32>
// UPD-NEXT:    vector.store %[[NEW]], %[[C]][%[[AT]]] : memref<?xf32>, vector<8xf32>
