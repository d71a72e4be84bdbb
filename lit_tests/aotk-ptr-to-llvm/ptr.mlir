// RUN: aotk-opt %s -p aotk-ptradd-to-gep,aotk-ptr-to-llvm,aotk-reconcile-casts | filecheck %s

// Pointer loads and stores become llvm ones, and every pointer (values and the signature)
// becomes !llvm.ptr.
// CHECK-LABEL: func.func @store_load_copy(
// CHECK-SAME:      %src: !llvm.ptr, %dst: !llvm.ptr, %n: index)
// CHECK-NOT:     ptr_xdsl
// CHECK:         %[[OFF:.*]] = arith.index_cast %n : index to i64
// CHECK:         %[[P:.*]] = llvm.getelementptr inbounds %src[%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK:         %[[V:.*]] = llvm.load %[[P]] : !llvm.ptr -> f32
// CHECK:         llvm.store %[[V]], %dst : f32, !llvm.ptr
// CHECK-NOT:     ptr_xdsl
func.func @store_load_copy(%src: !ptr_xdsl.ptr, %dst: !ptr_xdsl.ptr, %n: index) {
  %p = ptr_xdsl.ptradd %src, %n : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %v = ptr_xdsl.load %p : !ptr_xdsl.ptr -> f32
  ptr_xdsl.store %v, %dst : f32, !ptr_xdsl.ptr
  func.return
}
