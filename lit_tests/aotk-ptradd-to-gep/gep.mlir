// RUN: aotk-opt %s -p aotk-ptradd-to-gep | filecheck %s

// A byte offset on a pointer becomes an inbounds i8 GEP (index offsets go through i64),
// wrapped in casts that aotk-reconcile-casts removes after aotk-ptr-to-llvm.
// CHECK-LABEL: func.func @ptradd_loop(
// CHECK-NOT:     ptr_xdsl.ptradd
// CHECK:         %[[OFF:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK-NEXT:    %[[BASE:.*]] = builtin.unrealized_conversion_cast %x : !ptr_xdsl.ptr to !llvm.ptr
// CHECK-NEXT:    %[[OFF64:.*]] = arith.index_cast %[[OFF]] : index to i64
// CHECK-NEXT:    %[[GEP:.*]] = llvm.getelementptr inbounds %[[BASE]][%[[OFF64]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[P:.*]] = builtin.unrealized_conversion_cast %[[GEP]] : !llvm.ptr to !ptr_xdsl.ptr
// CHECK-NEXT:    ptr_xdsl.load %[[P]] : !ptr_xdsl.ptr -> f32
// CHECK-NOT:     ptr_xdsl.ptradd
// CHECK:         llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NOT:     ptr_xdsl.ptradd
// CHECK:         func.return
func.func @ptradd_loop(%x: !ptr_xdsl.ptr, %out0: !ptr_xdsl.ptr, %dim0: i64) {
  %n = arith.index_cast %dim0 : i64 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %n step %c1 {
    %off = arith.muli %i, %c4 : index
    %p = ptr_xdsl.ptradd %x, %off : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
    %v = ptr_xdsl.load %p : !ptr_xdsl.ptr -> f32
    %q = ptr_xdsl.ptradd %out0, %off : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
    ptr_xdsl.store %v, %q : f32, !ptr_xdsl.ptr
  }
  func.return
}
