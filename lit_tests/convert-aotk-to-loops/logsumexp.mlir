// RUN: aotk-opt %s --aotk-tile-for=avx2 -p convert-aotk-to-loops | filecheck %s

// The fused row logsumexp: one parallel loop over the rows, and in it two passes over a
// row: its maximum (in vectors, as softmax's), then the sum of exp(x - shift), where the
// shift is the maximum if it is finite and 0 otherwise; the row's result is
// log(sum) + shift. The exponentials are softmax's (four vectors of 8 lanes a step, a
// table of 2**(j/8) read by a lane permute), of x - shift capped at 0, so a row whose
// maximum is +inf sums exponentials of at most 1: its result is set apart, +inf (or NaN
// if the sum is NaN, as 0 * sum is then). Nothing but the results is written. As in
// softmax, each step of the exponentials prefetches x's lines 8 KB on (or from the
// last row's start): to be read, and only x's (two lines of 64 bytes a step here).
// CHECK-LABEL: func.func @logsumexp_rows(
// CHECK-DAG:     %[[AHEAD:.*]] = arith.constant 2048 : index
// CHECK-DAG:     %[[LINE:.*]] = arith.constant 16 : index
// CHECK:         scf.for %[[ROW:.*]] = %{{.*}} to %[[ROWS:.*]] step %[[ONE:.*]] {
// CHECK-NEXT:      %[[START:.*]] = arith.muli %[[ROW]], %[[WIDTH:.*]] : index
// CHECK-NEXT:      %[[BEFORE_LAST:.*]] = arith.subi %[[ROWS]], %[[ONE]] : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.muli %[[BEFORE_LAST]], %[[WIDTH]] : index
// CHECK-NEXT:      %[[ON:.*]] = arith.addi %[[START]], %[[AHEAD]] : index
// CHECK-NEXT:      %[[FROM:.*]] = arith.minsi %[[ON]], %[[LAST]] : index
// CHECK:           %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:           %[[MAX:.*]] = vector.reduction <maxnumf>, %{{.*}} : vector<8xf32> into f32
// CHECK:           %[[ABS:.*]] = math.absf %[[MAX]] : f32
// CHECK:           %[[FINITE:.*]] = arith.cmpf olt, %[[ABS]], %{{.*}} : f32
// CHECK:           %[[SHIFT:.*]] = arith.select %[[FINITE]], %[[MAX]], %{{.*}} : f32
// CHECK-NEXT:      %[[TOP:.*]] = vector.broadcast %[[SHIFT]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[NEGINF:.*]] = arith.constant 0xff800000 : f32
// CHECK-NEXT:      %{{.*}} = vector.broadcast %[[NEGINF]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[Z0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[ZERO:.*]] = vector.broadcast %[[Z0]] : f32 to vector<8xf32>
// CHECK-NEXT:      %[[SUM:.*]] = scf.for %[[I:[^ ]+]] = {{.*}} iter_args(%[[S:.*]] = %[[ZERO]]) -> (vector<8xf32>) {
// CHECK:             %[[AT:.*]] = arith.addi %[[FROM]], %[[I]] : index
// CHECK-NEXT:        %[[XP:.*]] = ptr_xdsl.to_ptr %x
// CHECK-NEXT:        %[[BYTES:.*]] = arith.muli %[[AT]], %{{.*}} : index
// CHECK-NEXT:        %[[XL:.*]] = ptr_xdsl.ptradd %[[XP]], %[[BYTES]]
// CHECK-NEXT:        %[[READ:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:        %[[L2:.*]] = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:        %[[DATA:.*]] = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:        llvm.call_intrinsic "llvm.prefetch.p0"(%[[XL]], %[[READ]], %[[L2]], %[[DATA]])
// CHECK-NEXT:        %[[AT2:.*]] = arith.addi %[[AT]], %[[LINE]] : index
// CHECK-NEXT:        %[[BYTES2:.*]] = arith.muli %[[AT2]], %{{.*}} : index
// CHECK-NEXT:        %[[XL2:.*]] = ptr_xdsl.ptradd %[[XP]], %[[BYTES2]]
// CHECK-NEXT:        %[[READ2:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:        %{{.*}} = llvm.mlir.constant(2 : i32) : i32
// CHECK-NEXT:        %{{.*}} = llvm.mlir.constant(1 : i32) : i32
// CHECK-NEXT:        llvm.call_intrinsic "llvm.prefetch.p0"(%[[XL2]], %[[READ2]],
// CHECK-NOT:         llvm.call_intrinsic "llvm.prefetch.p0"
// CHECK-COUNT-4:     %{{.*}} = vector.load %x[{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:        %[[D:.*]] = arith.subf %{{.*}}, %[[TOP]] : vector<8xf32>
// CHECK-NEXT:        %[[POS:.*]] = arith.cmpf ogt, %[[D]], %[[ZERO]] : vector<8xf32>
// CHECK-NEXT:        %{{.*}} = arith.select %[[POS]], %[[ZERO]], %[[D]] : vector<8xf32>
// CHECK:             llvm.call_intrinsic "llvm.aotk.lane_permute.v8f32"
// CHECK-NOT:         vector.store
// CHECK:             %{{.*}} = arith.addf %[[S]], %{{.*}} fastmath<reassoc> : vector<8xf32>
// CHECK:             scf.yield
// CHECK:           %[[TOTAL:.*]] = vector.reduction <add>, %[[SUM]] fastmath<reassoc> : vector<8xf32> into f32
// CHECK:           %[[R:.*]] = arith.addf %{{.*}}, %[[SHIFT]] : f32
// CHECK-NEXT:      %[[PLUS_INF:.*]] = arith.constant 0x7f800000 : f32
// CHECK-NEXT:      %[[INF:.*]] = arith.cmpf oeq, %[[MAX]], %[[PLUS_INF]] : f32
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[NZ:.*]] = arith.mulf %[[Z]], %[[TOTAL]] : f32
// CHECK-NEXT:      %[[OVER:.*]] = arith.addf %[[MAX]], %[[NZ]] : f32
// CHECK-NEXT:      %[[RES:.*]] = arith.select %[[INF]], %[[OVER]], %[[R]] : f32
// CHECK-NEXT:      memref.store %[[RES]], %out0[%[[ROW]]] : memref<?xf32>
// CHECK:         } {aotk.parallel = {{[0-9]+}} : i64}
func.func @logsumexp_rows(%x: tensor<?x1024xf32>) -> tensor<?xf32> {
  %y = "aotk.logsumexp"(%x) : (tensor<?x1024xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
