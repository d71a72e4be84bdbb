// RUN: aotk-opt %s -p aotk-memref-to-ptr | filecheck %s

// Memref arguments become pointers; a load indexes by element, scaled to bytes; a vector
// store and an element size (ptr_xdsl.type_offset) are lowered in the same pass.
// CHECK-LABEL: func.func @copy_scaled(
// CHECK-SAME:      %src: !ptr_xdsl.ptr, %dst: !ptr_xdsl.ptr, %i: index)
// CHECK-NOT:     memref.
// CHECK:         %[[SRC:.*]] = ptr_xdsl.to_ptr
// CHECK:         %[[FOUR:.*]] = arith.constant 4 : index
// CHECK:         %[[BYTES:.*]] = arith.muli %i, %[[FOUR]] : index
// CHECK:         %[[P:.*]] = ptr_xdsl.ptradd %[[SRC]], %[[BYTES]]
// CHECK:         %[[V:.*]] = ptr_xdsl.load %[[P]] : !ptr_xdsl.ptr -> f32
// CHECK:         ptr_xdsl.store %{{.*}}, %{{.*}} : vector<4xf32>, !ptr_xdsl.ptr
// CHECK:         %size = arith.constant 8 : index
// CHECK-NOT:     memref.
// CHECK-NOT:     vector.store
// CHECK-NOT:     type_offset
func.func @copy_scaled(%src: memref<?xf32>, %dst: memref<?xf32>, %i: index) -> index {
  %v = memref.load %src[%i] : memref<?xf32>
  %splat = vector.broadcast %v : f32 to vector<4xf32>
  vector.store %splat, %dst[%i] : memref<?xf32>, vector<4xf32>
  %size = ptr_xdsl.type_offset f64 : index
  func.return %size : index
}
