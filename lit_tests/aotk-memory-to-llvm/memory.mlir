// RUN: aotk-opt %s --split-input-file -p aotk-memory-to-llvm | filecheck %s

// Memrefs and ptr_xdsl pointers become !llvm.ptr, in signatures too. A load or store is
// an element-typed inbounds GEP and an llvm access: an index value is cast to i64 once
// for all its uses, a constant index is folded into the GEP (and its constant erased), a
// view (from_ptr) vanishes, a byte offset (ptradd) is an i8 GEP, type_offset a constant.
// CHECK-LABEL: func.func @views(
// CHECK-SAME:      %src: !llvm.ptr, %ws: !llvm.ptr, %i: index) -> index
// CHECK-NEXT:    %[[I:.*]] = arith.index_cast %i : index to i64
// CHECK-NEXT:    %[[A:.*]] = llvm.getelementptr inbounds %src[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %v = llvm.load %[[A]] : !llvm.ptr -> f32
// CHECK-NEXT:    %[[B:.*]] = llvm.getelementptr inbounds %src[3] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:    %w = llvm.load %[[B]] : !llvm.ptr -> f32
// CHECK-NEXT:    %p = llvm.getelementptr inbounds %ws[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[C:.*]] = llvm.getelementptr inbounds %p[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %v, %[[C]] : f32, !llvm.ptr
// CHECK-NEXT:    %splat = vector.broadcast %w : f32 to vector<4xf32>
// CHECK-NEXT:    %[[D:.*]] = llvm.getelementptr inbounds %p[3] : (!llvm.ptr) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %splat, %[[D]] : vector<4xf32>, !llvm.ptr
// CHECK-NEXT:    %size = arith.constant 8 : index
// CHECK-NEXT:    func.return %size : index
func.func @views(%src: memref<?xf32>, %ws: !ptr_xdsl.ptr, %i: index) -> index {
  %c3 = arith.constant 3 : index
  %v = memref.load %src[%i] : memref<?xf32>
  %w = memref.load %src[%c3] : memref<?xf32>
  %p = ptr_xdsl.ptradd %ws, %i : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %t = ptr_xdsl.from_ptr %p : !ptr_xdsl.ptr -> memref<8xf32>
  memref.store %v, %t[%i] : memref<8xf32>
  %splat = vector.broadcast %w : f32 to vector<4xf32>
  vector.store %splat, %t[%c3] : memref<8xf32>, vector<4xf32>
  %size = ptr_xdsl.type_offset f64 : index
  func.return %size : index
}

// -----

// A memref of higher rank is addressed by its strides (and offset), row-major by default;
// a rank-0 memref is its pointer. A pointer nothing loads from is dropped, with its offset.
// CHECK-LABEL: func.func @strided(
// CHECK-SAME:      %m: !llvm.ptr, %n: !llvm.ptr, %s: !llvm.ptr, %ws: !llvm.ptr, %i: index, %j: index) -> f64
// CHECK-NEXT:    %[[FIVE:.*]] = arith.constant 5 : index
// CHECK-NEXT:    %[[ROW:.*]] = arith.muli %i, %[[FIVE]] : index
// CHECK-NEXT:    %[[AT:.*]] = arith.addi %[[ROW]], %j : index
// CHECK-NEXT:    %[[AT64:.*]] = arith.index_cast %[[AT]] : index to i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %m[%[[AT64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT:    %v = llvm.load %[[P]] : !llvm.ptr -> f64
// CHECK-NEXT:    %[[TWO:.*]] = arith.constant 2 : index
// CHECK-NEXT:    %[[COL:.*]] = arith.muli %j, %[[TWO]] : index
// CHECK-NEXT:    %[[OFF:.*]] = arith.constant 1 : index
// CHECK-NEXT:    %[[AT2:.*]] = arith.addi %[[COL]], %[[OFF]] : index
// CHECK-NEXT:    %[[AT2_64:.*]] = arith.index_cast %[[AT2]] : index to i64
// CHECK-NEXT:    %[[Q:.*]] = llvm.getelementptr inbounds %n[%[[AT2_64]]] : (!llvm.ptr, i64) -> !llvm.ptr, f64
// CHECK-NEXT:    %u = llvm.load %[[Q]] : !llvm.ptr -> f64
// CHECK-NEXT:    llvm.store %u, %s : f64, !llvm.ptr
// CHECK-NEXT:    func.return %v : f64
func.func @strided(%m: memref<4x5xf64>, %n: memref<5xf64, strided<[2], offset: 1>>, %s: memref<f64>, %ws: !ptr_xdsl.ptr, %i: index, %j: index) -> f64 {
  %v = memref.load %m[%i, %j] : memref<4x5xf64>
  %c16 = arith.constant 16 : index
  %unused = ptr_xdsl.ptradd %ws, %c16 : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %u = memref.load %n[%j] : memref<5xf64, strided<[2], offset: 1>>
  memref.store %u, %s[] : memref<f64>
  func.return %v : f64
}

// -----

// A masked load or store is LLVM's masked intrinsic at the element's GEP, aligned to one
// element: the lanes off in the mask are neither read nor written.
// CHECK-LABEL: func.func @masked_edge(
// CHECK-SAME:      %t: !llvm.ptr, %i: index, %m: vector<16xi1>
// CHECK:         %[[I:.*]] = arith.index_cast %i : index to i64
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds %t[%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[A:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK-NEXT:    %[[V:.*]] = llvm.call_intrinsic "llvm.masked.load.v16f32.p0"(%[[P]], %[[A]], %m, %zero)
// CHECK:         llvm.call_intrinsic "llvm.masked.store.v16f32.p0"(%[[V]], %{{.*}}, %{{.*}}, %m)
// CHECK-NOT:     vector.masked
func.func @masked_edge(%t: memref<?xf32>, %i: index, %m: vector<16xi1>, %zero: vector<16xf32>) {
  %v = vector.maskedload %t[%i], %m, %zero : memref<?xf32>, vector<16xi1>, vector<16xf32> into vector<16xf32>
  vector.maskedstore %t[%i], %m, %v : memref<?xf32>, vector<16xi1>, vector<16xf32>
  func.return
}
