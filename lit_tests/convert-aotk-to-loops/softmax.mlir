// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s
// RUN: aotk-opt %s --aotk-tile-for=avx2 --aotk-stage=llvm | filecheck %s --check-prefix=LLVM

// At the llvm stage the row maximum's vector compares and selects are marker calls
// (`codegen.markers`): the llvm dialect verifies llvm.fcmp and llvm.select on scalars.
// LLVM-LABEL: llvm.func @softmax_rows_k0_par0(
// LLVM:         %[[GT:.*]] = llvm.call_intrinsic "llvm.aotk.fcmp.ogt.v8f32"
// LLVM-NEXT:    llvm.call_intrinsic "llvm.aotk.select.v8f32"(%[[GT]],

// The fused row softmax: one parallel loop over the rows, and in it three passes over a
// row (which stays in cache): its maximum, exp(x - max) stored and summed, and a scale
// by 1 / sum. The input is read from memory once, the output written once. The maximum
// reads four vectors a step, each kept by `x > m ? x : m` (one vmaxps); 1024 is a whole
// number of steps, so no scalar rest follows. The exponentials go four vectors a step
// (AVX2's 8 lanes here), all loaded before the first is stored: 2**(j/8) is read from a
// table of 8 held in one vector by a lane permute (a vpermps once LLVM sees it) and
// scaled by 2**m in its exponent bits, then times 1 + p(r) for a polynomial of degree 4
// on |r| <= ln2/16. Each step of the exponentials first prefetches the same lines 8 KB
// (2048 elements) on, or from the last row's start if that is nearer: of x to be read
// (0) and of the output to be written (1), into L2 (2), each line of 16 elements (64
// bytes) once; a step covers two here.
// CHECK-LABEL: func.func @softmax_rows(
// CHECK-DAG:     %[[AHEAD:.*]] = arith.constant 2048 : index
// CHECK-DAG:     %[[LINE:.*]] = arith.constant 16 : index
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %[[ROWS:.*]] step %[[ONE:.*]] {
// CHECK-NEXT:      %[[START:.*]] = arith.muli %[[ROW]], %[[WIDTH:.*]] : index
// CHECK-NEXT:      %[[BEFORE_LAST:.*]] = arith.subi %[[ROWS]], %[[ONE]] : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.muli %[[BEFORE_LAST]], %[[WIDTH]] : index
// CHECK-NEXT:      %[[ON:.*]] = arith.addi %[[START]], %[[AHEAD]] : index
// CHECK-NEXT:      %[[FROM:.*]] = arith.minsi %[[ON]], %[[LAST]] : index
// CHECK:           %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK-COUNT-4:       %{{.*}} = vector.load %x[{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:          %[[GT:.*]] = arith.cmpf ogt, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT:          %{{.*}} = arith.select %[[GT]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:           %[[MAX:.*]] = vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK-NEXT:      %[[TOP:.*]] = vector.broadcast %[[MAX]] : f32 to vector<8xf32>
// CHECK-NOT:       memref.load
// CHECK:           %[[SUM:.*]] = scf.for %[[I:[^ ]+]] = {{.*}} iter_args(%[[S:.*]] = %{{.*}}) -> (vector<8xf32>) {
// CHECK:             %[[AT:.*]] = arith.addi %[[FROM]], %[[I]] : index
// CHECK-NEXT:        %[[XP:.*]] = ptr_xdsl.to_ptr %x
// CHECK-NEXT:        %[[BYTES:.*]] = arith.muli %[[AT]], %{{.*}} : index
// CHECK-NEXT:        %[[XL:.*]] = ptr_xdsl.ptradd %[[XP]], %[[BYTES]]
// CHECK-NEXT:        %[[READ:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:        %[[L2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:        %[[DATA:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:        llvm.call_intrinsic "llvm.prefetch.p0"(%[[XL]], %[[READ]], %[[L2]], %[[DATA]])
// CHECK-NEXT:        %[[OP:.*]] = ptr_xdsl.to_ptr %out0
// CHECK-NEXT:        %[[OL:.*]] = ptr_xdsl.ptradd %[[OP]], %[[BYTES]]
// CHECK-NEXT:        %[[WRITE:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:        %[[L2W:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:        %[[DATAW:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:        llvm.call_intrinsic "llvm.prefetch.p0"(%[[OL]], %[[WRITE]], %[[L2W]], %[[DATAW]])
// CHECK-NEXT:        %[[AT2:.*]] = arith.addi %[[AT]], %[[LINE]] : index
// CHECK-NEXT:        %[[BYTES2:.*]] = arith.muli %[[AT2]], %{{.*}} : index
// CHECK-NEXT:        ptr_xdsl.ptradd %[[XP]], %[[BYTES2]]
// CHECK-COUNT-2:     llvm.call_intrinsic "llvm.prefetch.p0"
// CHECK-NOT:         llvm.call_intrinsic "llvm.prefetch.p0"
// CHECK-COUNT-4:     %{{.*}} = vector.load %x[{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:        %[[D:.*]] = arith.subf %{{.*}}, %[[TOP]] : vector<8xf32>
// CHECK:             %[[MN:.*]] = math.fma %[[D]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:             %[[BITS:.*]] = arith.bitcast %[[MN]] : vector<8xf32> to vector<8xi32>
// CHECK-NEXT:        %[[TABLE:.*]] = arith.constant dense<[1.000000e+00, 1.09050775, {{.*}}, 1.8340081]> : vector<8xf32>
// CHECK-NEXT:        %[[SEVEN:.*]] = arith.constant dense<7> : vector<8xi32>
// CHECK-NEXT:        %[[J:.*]] = arith.andi %[[BITS]], %[[SEVEN]] : vector<8xi32>
// CHECK-NEXT:        %{{.*}} = llvm.call_intrinsic "llvm.aotk.lane_permute.v8f32"(%[[TABLE]], %[[J]]) : (vector<8xf32>, vector<8xi32>) -> vector<8xf32>
// CHECK:             %[[BELOW:.*]] = arith.cmpf olt, %[[D]], %{{.*}} : vector<8xf32>
// CHECK:             %[[E:.*]] = arith.select %[[BELOW]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NOT:         vector.load
// CHECK:             vector.store %[[E]], %out0[
// CHECK-COUNT-3:     vector.store %{{.*}}, %out0[
// CHECK-NEXT:        %[[S2:.*]] = arith.addf %[[S]], %[[E]] fastmath<reassoc> : vector<8xf32>
// CHECK-COUNT-3:     arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : vector<8xf32>
// CHECK-NEXT:        scf.yield %{{.*}} : vector<8xf32>
// CHECK:           %[[TOTAL:.*]] = vector.reduction <add>, %[[SUM]] fastmath<reassoc> : vector<8xf32> into f32
// CHECK:           %[[SCALE:.*]] = arith.divf %{{.*}}, %[[TOTAL]] : f32
// CHECK:           scf.for
// CHECK:             %[[Y:.*]] = memref.load %out0[
// CHECK-NEXT:        %[[Z:.*]] = arith.mulf %[[Y]], %[[SCALE]] : f32
// CHECK-NEXT:        memref.store %[[Z]], %out0[
// CHECK:         } {aotk.parallel = {{[0-9]+}} : i64}
// CHECK-NOT:     memref.load %x[
func.func @softmax_rows(%x: tensor<?x1024xf32>) -> tensor<?x1024xf32> {
  %y = "aotk.softmax"(%x) : (tensor<?x1024xf32>) -> tensor<?x1024xf32>
  func.return %y : tensor<?x1024xf32>
}

// A row of 70: the maximum takes two steps of 32, then the last 6 elements one by one;
// the exponentials two steps of four vectors, then one vector of 6 lanes, the others
// read as -inf (whose exponential, 0, adds nothing to the sum).
// CHECK-LABEL: func.func @softmax_rest(
// CHECK:           vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK-NEXT:      %{{.*}} = scf.for %{{.*}} = %[[FROM:.*]] to %{{.*}} step %{{.*}} iter_args(%[[M:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %x[
// CHECK-NEXT:        %[[GT:.*]] = arith.cmpf ogt, %[[X]], %[[M]] : f32
// CHECK-NEXT:        %[[M2:.*]] = arith.select %[[GT]], %[[X]], %[[M]] : f32
// CHECK-NEXT:        scf.yield %[[M2]] : f32
// CHECK:           %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %[[ABSENT:.*]] = vector.broadcast %[[NEGINF]] : f32 to vector<8xf32>
// CHECK:           %[[WHOLE:.*]] = scf.for %{{.*}} = %{{.*}} to %[[END:.*]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8xf32>) {
// CHECK:             vector.load %x[
// CHECK:           %[[MASK:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK-NEXT:      %{{.*}} = scf.for %{{.*}} = %[[END]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[WHOLE]]) -> (vector<8xf32>) {
// CHECK:             %{{.*}} = vector.maskedload %x[%{{.*}}], %[[MASK]], %[[ABSENT]] : memref<?xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK:             vector.maskedstore %out0[%{{.*}}], %[[MASK]], %{{.*}} : memref<?xf32>, vector<8xi1>, vector<8xf32>
func.func @softmax_rest(%x: tensor<?x70xf32>) -> tensor<?x70xf32> {
  %y = "aotk.softmax"(%x) : (tensor<?x70xf32>) -> tensor<?x70xf32>
  func.return %y : tensor<?x70xf32>
}
