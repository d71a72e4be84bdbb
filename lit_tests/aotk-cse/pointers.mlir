// RUN: aotk-opt %s -p aotk-cse | filecheck %s

// Moving a pointer touches no memory: a second ptradd of the same pointer and offset is
// the first, even across a store, and an unused one goes. (xDSL's ptr.ptradd declares no
// effects, so its cse keeps both; the lowering makes one per workspace slice.)
// CHECK-LABEL: func.func @pointers(
// CHECK-NEXT:    %a = ptr_xdsl.ptradd %p, %n : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
// CHECK-NEXT:    %va = ptr_xdsl.from_ptr %a : !ptr_xdsl.ptr -> memref<?xf32>
// CHECK-NEXT:    memref.store %x, %va[%n] : memref<?xf32>
// CHECK-NEXT:    memref.store %x, %va[%m] : memref<?xf32>
// CHECK-NEXT:    func.return
func.func @pointers(%p: !ptr_xdsl.ptr, %n: index, %m: index, %x: f32) {
  %a = ptr_xdsl.ptradd %p, %n : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %va = ptr_xdsl.from_ptr %a : !ptr_xdsl.ptr -> memref<?xf32>
  memref.store %x, %va[%n] : memref<?xf32>
  %b = ptr_xdsl.ptradd %p, %n : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %vb = ptr_xdsl.from_ptr %b : !ptr_xdsl.ptr -> memref<?xf32>
  memref.store %x, %vb[%m] : memref<?xf32>
  %unused = ptr_xdsl.ptradd %a, %m : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  func.return
}
