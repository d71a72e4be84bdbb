// RUN: aotk-opt %s -p aotk-outline-kernels | filecheck %s

// The pass runs on loops as convert-aotk-to-loops emits them: buffers are memrefs, and
// workspace slices `ptr_xdsl` views of one pointer. Two kernels that are the same code
// on other buffers become one function. An argument keeps noalias when nothing else the
// kernel is passed comes from the same entry argument or the same allocation in the
// workspace (a `ptradd` of the workspace pointer of the entry, `aotk.kernel`, marked
// `aotk.allocation`; %a, at the start, is the workspace pointer itself): k0 takes
// %x and one slice, k1 two slices (buffers live at once never overlap). Two views of one
// slice may overlap (k3: aotk.may_alias; k2 was k1 again).
// CHECK-LABEL: func.func @entry(
// CHECK-SAME:      %x: memref<8xf32>, %ws: !ptr_xdsl.ptr, %n: index)
// CHECK:         %[[A:.*]] = ptr_xdsl.from_ptr %ws : !ptr_xdsl.ptr -> memref<8xf32>
// CHECK:         %[[B:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<8xf32>
// CHECK:         %[[HALF:.*]] = ptr_xdsl.from_ptr %{{.*}} : !ptr_xdsl.ptr -> memref<4xf32>
// CHECK-NEXT:    func.call @entry_k0(%x, %[[A]]) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:    func.call @entry_k1(%[[A]], %[[B]]) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:    func.call @entry_k1(%[[B]], %[[A]]) : (memref<8xf32>, memref<8xf32>) -> ()
// CHECK-NEXT:    func.call @entry_k3(%[[B]], %[[HALF]]) : (memref<8xf32>, memref<4xf32>) -> ()
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @entry_k0(
// CHECK-SAME:      %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) {
// CHECK-LABEL: func.func private @entry_k1(
// CHECK-SAME:      %{{.*}}: memref<8xf32>, %{{.*}}: memref<8xf32>) {
// CHECK:         arith.constant 2.000000e+00 : f32
// CHECK-LABEL: func.func private @entry_k3(
// CHECK-SAME:      attributes {aotk.may_alias = array<i64: 0, 1>}
// CHECK-NOT:   func.func private @entry_k2(
func.func @entry(%x: memref<8xf32>, %ws: !ptr_xdsl.ptr, %n: index) attributes {aotk.kernel = array<i64: 1, 0>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %two = arith.constant 2.0 : f32
  %a = ptr_xdsl.from_ptr %ws : !ptr_xdsl.ptr -> memref<8xf32>
  %wsb = ptr_xdsl.ptradd %ws, %c32 {aotk.allocation} : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %b = ptr_xdsl.from_ptr %wsb : !ptr_xdsl.ptr -> memref<8xf32>
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %wsh = ptr_xdsl.ptradd %wsb, %c16 : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %half = ptr_xdsl.from_ptr %wsh : !ptr_xdsl.ptr -> memref<4xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %x[%i] : memref<8xf32>
    %u = arith.mulf %v, %v : f32
    memref.store %u, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %a[%i] : memref<8xf32>
    %u = arith.mulf %v, %two : f32
    memref.store %u, %b[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %v = memref.load %b[%i] : memref<8xf32>
    %u = arith.mulf %v, %two : f32
    memref.store %u, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c4 step %c1 {
    %v = memref.load %b[%i] : memref<8xf32>
    memref.store %v, %half[%i] : memref<4xf32>
  }
  func.return
}
