// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// A 'same' 3x3 conv on 8x10 images is cut into 14 lines per image: 8 rows over the
// interior columns, 2 border columns down the interior rows, and 4 corners. Threads
// split (image, line) pairs in one parallel loop. Every line's taps inside the input
// are a box of tap ranges, so one body of 5 positions x 2 vectors (10 accumulators)
// and one of a single position serve interior and borders alike, with no per-tap
// checks; the 3 input channels are unrolled (3 x 10 and 3 x 2 FMAs).
// CHECK-LABEL: func.func @conv_same(
// CHECK-NOT:     scf.if
// CHECK-DAG:     %[[LINES:.*]] = arith.constant 14 : index
// CHECK:         %[[TASKS:.*]] = arith.muli %{{.*}}, %[[LINES]] : index
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[TASKS]]
// CHECK:           arith.divui %[[I]], %[[LINES]] : index
// CHECK:           arith.remui %[[I]], %[[LINES]] : index
// CHECK:           scf.for {{.*}} -> ({{(vector<8xf32>, ){9}vector<8xf32>}}) {
// CHECK-NEXT:        scf.for {{.*}} iter_args(
// CHECK-COUNT-30:      vector.fma
// CHECK-NOT:           vector.fma
// CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK-NEXT:        scf.for {{.*}} iter_args(
// CHECK-COUNT-6:       vector.fma
// CHECK-NOT:         vector.fma
// CHECK:         } {aotk.parallel = 2 : i64}
// CHECK-NOT:     vector.fma
// CHECK:         func.return
func.func @conv_same(%x: tensor<?x8x10x3xf32>, %w: tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32> {
  %y = aotk.conv %x, %w strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0] padding same groups 1 : (tensor<?x8x10x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x10x16xf32>
  func.return %y : tensor<?x8x10x16xf32>
}
