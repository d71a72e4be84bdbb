// RUN: not aotk-opt %s -p aotk-memory-to-llvm 2>&1 | filecheck %s

// A layout whose strides are only known at run time is refused, at the op's place.
// CHECK: aotk-memory-to-llvm: {{.*}}unsupported.mlir:[[# @LINE + 3]]:3: memref.load: expected a memref with static strides and offset
// CHECK-SAME: got memref<?x?xf32>
func.func @dynamic_rows(%m: memref<?x?xf32>, %i: index) -> f32 {
  %v = memref.load %m[%i, %i] : memref<?x?xf32>
  func.return %v : f32
}
