// RUN: aotk-opt %s --split-input-file -p aotk-simplify | filecheck %s

// CHECK-LABEL: func.func @add_zero
// CHECK-NOT:     aotk.add
// CHECK-NOT:     aotk.sub
// CHECK:         func.return %x : tensor<4xf32>
func.func @add_zero(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %a = "aotk.add"(%z, %x) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %b = "aotk.add"(%a, %z) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %c = "aotk.sub"(%b, %z) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @add_two
// CHECK-NEXT:    %two = "aotk.constant"()
// CHECK-NEXT:    %y = "aotk.add"(%x, %two)
// CHECK-NEXT:    func.return %y
func.func @add_two(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = "aotk.constant"() <{value = 2.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %y = "aotk.add"(%x, %two) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @mul_one
// CHECK-NOT:     aotk.mul
// CHECK:         func.return %x : tensor<?xf32>
func.func @mul_one(%x: tensor<?xf32>) -> tensor<?xf32> {
  %one = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %a = "aotk.mul"(%x, %one) : (tensor<?xf32>, tensor<f32>) -> tensor<?xf32>
  %b = "aotk.mul"(%one, %a) : (tensor<f32>, tensor<?xf32>) -> tensor<?xf32>
  func.return %b : tensor<?xf32>
}

// -----

// CHECK-LABEL: func.func @neg_double
// CHECK-NOT:     aotk.neg
// CHECK:         func.return %x
func.func @neg_double(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = "aotk.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "aotk.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %b : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @cast_noop
// CHECK-NOT:     aotk.cast
// CHECK:         func.return %x
func.func @cast_noop(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "aotk.cast"(%x) <{dtype = f32}> : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_chain
// CHECK-NEXT:    %[[R:.*]] = "aotk.reshape"(%x) <{shape = array<i64: 6, 2>}> : (tensor<3x4xf32>) -> tensor<6x2xf32>
// CHECK-NEXT:    func.return %[[R]]
func.func @reshape_chain(%x: tensor<3x4xf32>) -> tensor<6x2xf32> {
  %a = "aotk.reshape"(%x) <{shape = array<i64: 12>}> : (tensor<3x4xf32>) -> tensor<12xf32>
  %b = "aotk.reshape"(%a) <{shape = array<i64: 6, 2>}> : (tensor<12xf32>) -> tensor<6x2xf32>
  func.return %b : tensor<6x2xf32>
}

// -----

// CHECK-LABEL: func.func @transpose_identity
// CHECK-NOT:     aotk.transpose
// CHECK:         func.return %x
func.func @transpose_identity(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %y = "aotk.transpose"(%x) <{perm = array<i64: 0, 1>}> : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// The identity permutation reading an axis back to front is a reversal: it stays.
// CHECK-LABEL: func.func @transpose_identity_reversing
// CHECK-NEXT:    "aotk.transpose"(%x) <{perm = array<i64: 0, 1>, reverse = array<i64: 0>}>
func.func @transpose_identity_reversing(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %y = "aotk.transpose"(%x) <{perm = array<i64: 0, 1>, reverse = array<i64: 0>}> : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// -----

// The transpose of K.reverse(x, (0, 1)) reads x back to front itself: no reversed copy.
// A slice taking part of an axis is no reversal and stays.
// CHECK-LABEL: func.func @reverse_into_transpose
// CHECK-NEXT:    %[[T:.*]] = "aotk.transpose"(%x) <{perm = array<i64: 0, 1, 3, 2>, reverse = array<i64: 0, 1>}> : (tensor<3x3x5x4xf32>) -> tensor<3x3x4x5xf32>
// CHECK-NEXT:    %[[S:.*]] = "aotk.slice"(%x)
// CHECK-NEXT:    %[[U:.*]] = "aotk.transpose"(%[[S]]) <{perm = array<i64: 0, 1, 3, 2>}>
// CHECK-NEXT:    func.return %[[T]], %[[U]]
func.func @reverse_into_transpose(%x: tensor<3x3x5x4xf32>) -> (tensor<3x3x4x5xf32>, tensor<2x3x4x5xf32>) {
  %r = "aotk.slice"(%x) <{start = array<i64: -1, -1, 0, 0>, stop = array<i64: -4611686018427387904, -4611686018427387904, 9223372036854775807, 9223372036854775807>, step = array<i64: -1, -1, 1, 1>}> : (tensor<3x3x5x4xf32>) -> tensor<3x3x5x4xf32>
  %t = "aotk.transpose"(%r) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<3x3x5x4xf32>) -> tensor<3x3x4x5xf32>
  %s = "aotk.slice"(%x) <{start = array<i64: -1, -1, 0, 0>, stop = array<i64: 0, -4611686018427387904, 9223372036854775807, 9223372036854775807>, step = array<i64: -1, -1, 1, 1>}> : (tensor<3x3x5x4xf32>) -> tensor<2x3x5x4xf32>
  %u = "aotk.transpose"(%s) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<2x3x5x4xf32>) -> tensor<2x3x4x5xf32>
  func.return %t, %u : tensor<3x3x4x5xf32>, tensor<2x3x4x5xf32>
}

// -----

// The gradient of four column slices of one value (an LSTM's gates), as autodiff writes
// it: a sum of unslices whose windows tile axis 1. It is their concatenation.
// CHECK-LABEL: func.func @unslices_tiling_an_axis
// CHECK-NOT:     aotk.unslice
// CHECK:         %{{.*}} = "aotk.concat"(%a, %b, %c, %d) <{axis = 1 : i64}> : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x16xf32>
// CHECK-NOT:     aotk.add
func.func @unslices_tiling_an_axis(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>, %c: tensor<2x4xf32>, %d: tensor<2x4xf32>, %z: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %uc = "aotk.unslice"(%c, %z) <{start = array<i64: 0, 8>, stop = array<i64: 9223372036854775807, 12>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ua = "aotk.unslice"(%a, %z) <{start = array<i64: 0, 0>, stop = array<i64: 9223372036854775807, 4>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ud = "aotk.unslice"(%d, %z) <{start = array<i64: 0, 12>, stop = array<i64: 9223372036854775807, 9223372036854775807>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ub = "aotk.unslice"(%b, %z) <{start = array<i64: 0, 4>, stop = array<i64: 2, 8>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %s1 = "aotk.add"(%uc, %ua) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %s2 = "aotk.add"(%ud, %ub) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %s = "aotk.add"(%s1, %s2) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %s : tensor<2x16xf32>
}

// -----

// Windows with a gap (columns 4..8 are left zero), or a partial sum read elsewhere,
// keep the unslices.
// CHECK-LABEL: func.func @unslices_not_tiling
// CHECK-NOT:     aotk.concat
// CHECK:         func.return
func.func @unslices_not_tiling(%a: tensor<2x4xf32>, %b: tensor<2x8xf32>, %z: tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>) {
  %ua = "aotk.unslice"(%a, %z) <{start = array<i64: 0, 0>, stop = array<i64: 2, 4>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ub = "aotk.unslice"(%b, %z) <{start = array<i64: 0, 8>, stop = array<i64: 2, 16>, step = array<i64: 1, 1>}> : (tensor<2x8xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %gap = "aotk.add"(%ua, %ub) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ua2 = "aotk.unslice"(%a, %z) <{start = array<i64: 0, 0>, stop = array<i64: 2, 4>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ub2 = "aotk.unslice"(%b, %z) <{start = array<i64: 0, 4>, stop = array<i64: 2, 12>, step = array<i64: 1, 1>}> : (tensor<2x8xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %half = "aotk.add"(%ua2, %ub2) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %ua3 = "aotk.unslice"(%a, %z) <{start = array<i64: 0, 12>, stop = array<i64: 2, 16>, step = array<i64: 1, 1>}> : (tensor<2x4xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %all = "aotk.add"(%half, %ua3) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %out = "aotk.add"(%gap, %half) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  func.return %all, %out : tensor<2x16xf32>, tensor<2x16xf32>
}

// -----

// relu then a max pool: the pool reads x and relu runs on the pooled quarter. An average
// pool of the same relu keeps its order.
// CHECK-LABEL: func.func @relu_max_pool
// CHECK:         %[[POOLED:.*]] = aotk.pool %x window [2, 2] strides [2, 2] padding valid mode max
// CHECK-NEXT:    %[[RELU:.*]] = "aotk.maximum"(%[[POOLED]], %zero) : (tensor<?x2x2x3xf32>, tensor<f32>) -> tensor<?x2x2x3xf32>
// CHECK:         %[[R:.*]] = "aotk.maximum"(%y, %zero)
// CHECK-NEXT:    %{{.*}} = aotk.pool %[[R]] window [2, 2] strides [2, 2] padding valid mode avg
func.func @relu_max_pool(%x: tensor<?x4x4x3xf32>, %y: tensor<?x4x4x3xf32>) -> (tensor<?x2x2x3xf32>, tensor<?x2x2x3xf32>) {
  %zero = "aotk.constant"() <{value = 0.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %r = "aotk.maximum"(%x, %zero) : (tensor<?x4x4x3xf32>, tensor<f32>) -> tensor<?x4x4x3xf32>
  %p = aotk.pool %r window [2, 2] strides [2, 2] padding valid mode max : (tensor<?x4x4x3xf32>) -> tensor<?x2x2x3xf32>
  %s = "aotk.maximum"(%y, %zero) : (tensor<?x4x4x3xf32>, tensor<f32>) -> tensor<?x4x4x3xf32>
  %q = aotk.pool %s window [2, 2] strides [2, 2] padding valid mode avg : (tensor<?x4x4x3xf32>) -> tensor<?x2x2x3xf32>
  func.return %p, %q : tensor<?x2x2x3xf32>, tensor<?x2x2x3xf32>
}

// -----

// K.rnn's last output, outputs[-1:], when the step yields its output as its new state:
// the scan's final carry, reshaped (the two reshapes then cancel). The stacked outputs
// are unread (the scan still lists them here; aotk-scan-accumulations drops them).
// CHECK-LABEL: func.func @rnn_last_output
// CHECK:         %h, %hs = aotk.scan
// CHECK-NOT:     aotk.slice
// CHECK-NOT:     aotk.reshape
// CHECK:         func.return %h : tensor<?x2xf32>
func.func @rnn_last_output(%x: tensor<3x?x2xf32>, %h0: tensor<?x2xf32>) -> tensor<?x2xf32> {
  %h, %hs = aotk.scan seqs(%xt = %x) carries(%c = %h0) : (tensor<3x?x2xf32>, tensor<?x2xf32>) -> (tensor<?x2xf32>, tensor<3x?x2xf32>) {
    %s = "aotk.add"(%xt, %c) : (tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<?x2xf32>
    %t = "aotk.tanh"(%s) : (tensor<?x2xf32>) -> tensor<?x2xf32>
    aotk.yield %t, %t : tensor<?x2xf32>, tensor<?x2xf32>
  }
  %last = "aotk.slice"(%hs) <{start = array<i64: -1, 0, 0>, stop = array<i64: 9223372036854775807, 9223372036854775807, 9223372036854775807>, step = array<i64: 1, 1, 1>}> : (tensor<3x?x2xf32>) -> tensor<1x?x2xf32>
  %y = "aotk.reshape"(%last) <{shape = array<i64: -1, 2>}> : (tensor<1x?x2xf32>) -> tensor<?x2xf32>
  func.return %y : tensor<?x2xf32>
}

// -----

// The call checked that %g has %like's shape: the check leaves no op; the mul stays.
// CHECK-LABEL: func.func @same_shape
// CHECK-NOT:     aotk.same_shape
// CHECK:         %y = "aotk.mul"(%g, %g)
// CHECK-NEXT:    func.return %y : tensor<?x3xf32>
func.func @same_shape(%g: tensor<?x3xf32>, %like: tensor<?x3xf64>) -> tensor<?x3xf32> {
  %s = "aotk.same_shape"(%g, %like) : (tensor<?x3xf32>, tensor<?x3xf64>) -> tensor<?x3xf32>
  %y = "aotk.mul"(%s, %s) : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  func.return %y : tensor<?x3xf32>
}
