// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// 2x2 max pooling with stride 2 on 4x6 images: the windows tile the image, so the
// gradient is one pass that stores every element once, with no zeroing first. Threads
// split (image, pooled row) items; per pooled position, the channel loop holds the four
// taps unrolled: each compares x with the pooled value, stores the cotangent left (or 0)
// and passes on 0 after a hit.
// CHECK-LABEL: func.func @max_covered(
// CHECK-NOT:     memref.store
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-4:       arith.cmpf oeq
// CHECK-NOT:           arith.cmpf
// CHECK:             }
// CHECK:         } {aotk.parallel =
// CHECK-NOT:     scf.for
// CHECK:         func.return
func.func @max_covered(%g: tensor<?x2x3x19xf32>, %x: tensor<?x4x6x19xf32>, %y: tensor<?x2x3x19xf32>) -> tensor<?x4x6x19xf32> {
  %0 = aotk.pool_grad %g, %x, %y window [2, 2] strides [2, 2] padding valid mode max : (tensor<?x2x3x19xf32>, tensor<?x4x6x19xf32>, tensor<?x2x3x19xf32>) -> tensor<?x4x6x19xf32>
  func.return %0 : tensor<?x4x6x19xf32>
}

// Strides past the window leave rows and columns under no window: they are zeroed
// first, then each window's four elements take a quarter of its cotangent.
// CHECK-LABEL: func.func @avg_gaps(
// CHECK:         scf.for
// CHECK:           memref.store
// CHECK:         } {aotk.parallel =
// CHECK:         scf.for
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               %[[SHARE:.*]] = arith.divf
// CHECK-COUNT-4:       memref.store %[[SHARE]], %out0
// CHECK:             }
// CHECK:         } {aotk.parallel =
// CHECK:         func.return
func.func @avg_gaps(%g: tensor<?x2x2x19xf32>, %x: tensor<?x5x7x19xf32>) -> tensor<?x5x7x19xf32> {
  %0 = aotk.pool_grad %g, %x, %g window [2, 2] strides [3, 4] padding valid mode avg : (tensor<?x2x2x19xf32>, tensor<?x5x7x19xf32>, tensor<?x2x2x19xf32>) -> tensor<?x5x7x19xf32>
  func.return %0 : tensor<?x5x7x19xf32>
}

// Overlapping windows (stride 1) add each window's share into a zeroed gradient, a
// flag carried through the window's taps marking the first maximum found.
// CHECK-LABEL: func.func @max_overlapping(
// CHECK:         scf.for
// CHECK:           memref.store
// CHECK:         scf.for {{.*}} iter_args({{.*}}) -> (i1)
// CHECK:           arith.cmpf oeq
// CHECK:           arith.addf
// CHECK:         func.return
func.func @max_overlapping(%g: tensor<?x3x5x19xf32>, %x: tensor<?x4x6x19xf32>, %y: tensor<?x3x5x19xf32>) -> tensor<?x4x6x19xf32> {
  %0 = aotk.pool_grad %g, %x, %y window [2, 2] strides [1, 1] padding valid mode max : (tensor<?x3x5x19xf32>, tensor<?x4x6x19xf32>, tensor<?x3x5x19xf32>) -> tensor<?x4x6x19xf32>
  func.return %0 : tensor<?x4x6x19xf32>
}
