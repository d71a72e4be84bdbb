// RUN: not aotk-opt %s -p convert-aotk-std-to-llvm 2>&1 | filecheck %s

// Only the reduction kinds aotk emits are lowered; another is refused at its place.
// CHECK: convert-aotk-std-to-llvm: {{.*}}unsupported_reduction.mlir:[[# @LINE + 3]]:3: vector.reduction supports add, maxnumf, minnumf without an accumulator, got mul
// CHECK-NOT: Traceback
func.func @product(%v: vector<8xf32>) -> f32 {
  %s = vector.reduction <mul>, %v : vector<8xf32> into f32
  func.return %s : f32
}
