// RUN: aotk-opt %s -p convert-aotk-to-loops | filecheck %s

// 2x2 max pooling with stride 2 on 4x6 images: the windows tile the image, so the
// gradient is one pass that stores every element once, with no zeroing first. Threads
// split (image, pooled row) items; per pooled position, a loop over the channels in
// vectors of 8 (then one masked vector for the last 3) holds the four taps unrolled: each
// compares x with the pooled value, stores the cotangent left (or 0) and passes on 0
// after a hit.
// CHECK-LABEL: func.func @max_covered(
// CHECK-NOT:     memref.store
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-4:       vector.store
// CHECK-NOT:           vector.store
// CHECK:             }
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:               vector.create_mask
// CHECK-COUNT-4:       vector.maskedstore
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
// CHECK:               %[[SHARE:.*]] = arith.divf {{.*}} : vector<8xf32>
// CHECK-COUNT-4:       vector.store %[[SHARE]], %out0
// CHECK:             }
// CHECK:         } {aotk.parallel =
// CHECK:         func.return
func.func @avg_gaps(%g: tensor<?x2x2x19xf32>, %x: tensor<?x5x7x19xf32>) -> tensor<?x5x7x19xf32> {
  %0 = aotk.pool_grad %g, %x, %g window [2, 2] strides [3, 4] padding valid mode avg : (tensor<?x2x2x19xf32>, tensor<?x5x7x19xf32>, tensor<?x2x2x19xf32>) -> tensor<?x5x7x19xf32>
  func.return %0 : tensor<?x5x7x19xf32>
}

// Overlapping windows (stride 1): the gradient is zeroed, then threads split the images
// (whose windows overlap) and each window adds its four taps' shares, in vectors of
// channels as above; a tap in the padding (none here) would add 0.
// CHECK-LABEL: func.func @max_overlapping(
// CHECK:         scf.for
// CHECK:           memref.store
// CHECK:         } {aotk.parallel =
// CHECK:         scf.for
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-COUNT-4:       arith.cmpf oeq, {{.*}} : vector<8xf32>
// CHECK-NOT:           arith.cmpf
// CHECK:             }
// CHECK:         func.return
func.func @max_overlapping(%g: tensor<?x3x5x19xf32>, %x: tensor<?x4x6x19xf32>, %y: tensor<?x3x5x19xf32>) -> tensor<?x4x6x19xf32> {
  %0 = aotk.pool_grad %g, %x, %y window [2, 2] strides [1, 1] padding valid mode max : (tensor<?x3x5x19xf32>, tensor<?x4x6x19xf32>, tensor<?x3x5x19xf32>) -> tensor<?x4x6x19xf32>
  func.return %0 : tensor<?x4x6x19xf32>
}
