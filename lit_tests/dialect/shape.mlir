// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the shape ops (reshape, transpose, concat, slice, unslice, shape_of,
// dim_size) and the views (expand_dims, reshape_like, reshape_dims): printed, parsed back
// and printed again, each op keeps its properties and types.

// -1 in a reshape's shape is inferred; 9223372036854775807 (int64 max) as a slice's start
// or stop is an omitted bound, as in Python's x[1::2] or x[::-1].

// CHECK-LABEL: func.func @reshape(%x: tensor<?x3x4xf32>, %s: tensor<i8>) -> (tensor<?x12xf32>, tensor<1x1xi8>) {
// CHECK-NEXT:    %y = "aotk.reshape"(%x) <{shape = array<i64: -1, 12>}> : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
// CHECK-NEXT:    %z = "aotk.reshape"(%s) <{shape = array<i64: 1, 1>}> : (tensor<i8>) -> tensor<1x1xi8>
// CHECK-NEXT:    func.return %y, %z : tensor<?x12xf32>, tensor<1x1xi8>
// CHECK-NEXT:  }
func.func @reshape(%x: tensor<?x3x4xf32>, %s: tensor<i8>) -> (tensor<?x12xf32>, tensor<1x1xi8>) {
  %y = "aotk.reshape"(%x) <{shape = array<i64: -1, 12>}> : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
  %z = "aotk.reshape"(%s) <{shape = array<i64: 1, 1>}> : (tensor<i8>) -> tensor<1x1xi8>
  func.return %y, %z : tensor<?x12xf32>, tensor<1x1xi8>
}

// CHECK-LABEL: func.func @transpose(%x: tensor<?x3x4xi1>, %s: tensor<f64>) -> (tensor<4x?x3xi1>, tensor<f64>) {
// CHECK-NEXT:    %y = "aotk.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<?x3x4xi1>) -> tensor<4x?x3xi1>
// CHECK-NEXT:    %z = "aotk.transpose"(%s) <{perm = array<i64>}> : (tensor<f64>) -> tensor<f64>
// CHECK-NEXT:    func.return %y, %z : tensor<4x?x3xi1>, tensor<f64>
// CHECK-NEXT:  }
func.func @transpose(%x: tensor<?x3x4xi1>, %s: tensor<f64>) -> (tensor<4x?x3xi1>, tensor<f64>) {
  %y = "aotk.transpose"(%x) <{perm = array<i64: 2, 0, 1>}> : (tensor<?x3x4xi1>) -> tensor<4x?x3xi1>
  %z = "aotk.transpose"(%s) <{perm = array<i64>}> : (tensor<f64>) -> tensor<f64>
  func.return %y, %z : tensor<4x?x3xi1>, tensor<f64>
}

// CHECK-LABEL: func.func @concat(%a: tensor<?x2xf16>, %b: tensor<?x3xf16>, %c: tensor<?x1xf16>) -> tensor<?x6xf16> {
// CHECK-NEXT:    %y = "aotk.concat"(%a, %b, %c) <{axis = 1 : i64}> : (tensor<?x2xf16>, tensor<?x3xf16>, tensor<?x1xf16>) -> tensor<?x6xf16>
// CHECK-NEXT:    func.return %y : tensor<?x6xf16>
// CHECK-NEXT:  }
func.func @concat(%a: tensor<?x2xf16>, %b: tensor<?x3xf16>, %c: tensor<?x1xf16>) -> tensor<?x6xf16> {
  %y = "aotk.concat"(%a, %b, %c) <{axis = 1 : i64}> : (tensor<?x2xf16>, tensor<?x3xf16>, tensor<?x1xf16>) -> tensor<?x6xf16>
  func.return %y : tensor<?x6xf16>
}

// CHECK-LABEL: func.func @slice(%x: tensor<5x6xi32>, %d: tensor<?xf32>) -> (tensor<3x3xi32>, tensor<?xf32>) {
// CHECK-NEXT:    %y = "aotk.slice"(%x) <{start = array<i64: -2, 1>, stop = array<i64: -5, 9223372036854775807>, step = array<i64: -1, 2>}> : (tensor<5x6xi32>) -> tensor<3x3xi32>
// CHECK-NEXT:    %z = "aotk.slice"(%d) <{start = array<i64: -1>, stop = array<i64: 9223372036854775807>, step = array<i64: -1>}> : (tensor<?xf32>) -> tensor<?xf32>
// CHECK-NEXT:    func.return %y, %z : tensor<3x3xi32>, tensor<?xf32>
// CHECK-NEXT:  }
func.func @slice(%x: tensor<5x6xi32>, %d: tensor<?xf32>) -> (tensor<3x3xi32>, tensor<?xf32>) {
  %y = "aotk.slice"(%x) <{start = array<i64: -2, 1>, stop = array<i64: -5, 9223372036854775807>, step = array<i64: -1, 2>}> : (tensor<5x6xi32>) -> tensor<3x3xi32>
  %z = "aotk.slice"(%d) <{start = array<i64: -1>, stop = array<i64: 9223372036854775807>, step = array<i64: -1>}> : (tensor<?xf32>) -> tensor<?xf32>
  func.return %y, %z : tensor<3x3xi32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @unslice(%g: tensor<3xf32>, %like: tensor<7xf32>) -> tensor<7xf32> {
// CHECK-NEXT:    %y = "aotk.unslice"(%g, %like) <{start = array<i64: 1>, stop = array<i64: 6>, step = array<i64: 2>}> : (tensor<3xf32>, tensor<7xf32>) -> tensor<7xf32>
// CHECK-NEXT:    func.return %y : tensor<7xf32>
// CHECK-NEXT:  }
func.func @unslice(%g: tensor<3xf32>, %like: tensor<7xf32>) -> tensor<7xf32> {
  %y = "aotk.unslice"(%g, %like) <{start = array<i64: 1>, stop = array<i64: 6>, step = array<i64: 2>}> : (tensor<3xf32>, tensor<7xf32>) -> tensor<7xf32>
  func.return %y : tensor<7xf32>
}

// CHECK-LABEL: func.func @shape_of(%x: tensor<?x3x?xui8>) -> tensor<3xi32> {
// CHECK-NEXT:    %y = "aotk.shape_of"(%x) : (tensor<?x3x?xui8>) -> tensor<3xi32>
// CHECK-NEXT:    func.return %y : tensor<3xi32>
// CHECK-NEXT:  }
func.func @shape_of(%x: tensor<?x3x?xui8>) -> tensor<3xi32> {
  %y = "aotk.shape_of"(%x) : (tensor<?x3x?xui8>) -> tensor<3xi32>
  func.return %y : tensor<3xi32>
}

// CHECK-LABEL: func.func @dim_size(%x: tensor<?x3x?xf32>) -> (tensor<f16>, tensor<i64>) {
// CHECK-NEXT:    %n = "aotk.dim_size"(%x) <{axes = array<i64: 0, 2>, dtype = f16}> : (tensor<?x3x?xf32>) -> tensor<f16>
// CHECK-NEXT:    %one = "aotk.dim_size"(%x) <{axes = array<i64>, dtype = i64}> : (tensor<?x3x?xf32>) -> tensor<i64>
// CHECK-NEXT:    func.return %n, %one : tensor<f16>, tensor<i64>
// CHECK-NEXT:  }
func.func @dim_size(%x: tensor<?x3x?xf32>) -> (tensor<f16>, tensor<i64>) {
  %n = "aotk.dim_size"(%x) <{axes = array<i64: 0, 2>, dtype = f16}> : (tensor<?x3x?xf32>) -> tensor<f16>
  %one = "aotk.dim_size"(%x) <{axes = array<i64>, dtype = i64}> : (tensor<?x3x?xf32>) -> tensor<i64>
  func.return %n, %one : tensor<f16>, tensor<i64>
}

// CHECK-LABEL: func.func @expand_dims(%x: tensor<?x3xf32>) -> tensor<1x?x1x3xf32> {
// CHECK-NEXT:    %y = "aotk.expand_dims"(%x) <{axes = array<i64: 0, 2>}> : (tensor<?x3xf32>) -> tensor<1x?x1x3xf32>
// CHECK-NEXT:    func.return %y : tensor<1x?x1x3xf32>
// CHECK-NEXT:  }
func.func @expand_dims(%x: tensor<?x3xf32>) -> tensor<1x?x1x3xf32> {
  %y = "aotk.expand_dims"(%x) <{axes = array<i64: 0, 2>}> : (tensor<?x3xf32>) -> tensor<1x?x1x3xf32>
  func.return %y : tensor<1x?x1x3xf32>
}

// CHECK-LABEL: func.func @reshape_like(%x: tensor<?x4xi64>, %like: tensor<?x2x2xi1>) -> tensor<?x2x2xi64> {
// CHECK-NEXT:    %y = "aotk.reshape_like"(%x, %like) : (tensor<?x4xi64>, tensor<?x2x2xi1>) -> tensor<?x2x2xi64>
// CHECK-NEXT:    func.return %y : tensor<?x2x2xi64>
// CHECK-NEXT:  }
func.func @reshape_like(%x: tensor<?x4xi64>, %like: tensor<?x2x2xi1>) -> tensor<?x2x2xi64> {
  %y = "aotk.reshape_like"(%x, %like) : (tensor<?x4xi64>, tensor<?x2x2xi1>) -> tensor<?x2x2xi64>
  func.return %y : tensor<?x2x2xi64>
}

// reshape_dims: -2 takes the next (operand, axis) pair of `taken`, here axis 1 of %x.
// CHECK-LABEL: func.func @reshape_dims(%y: tensor<?x5xf32>, %x: tensor<?x?x3xf32>) -> tensor<?x?x5xf32> {
// CHECK-NEXT:    %z = "aotk.reshape_dims"(%y, %x) <{shape = array<i64: -1, -2, 5>, taken = array<i64: 1, 1>}> : (tensor<?x5xf32>, tensor<?x?x3xf32>) -> tensor<?x?x5xf32>
// CHECK-NEXT:    func.return %z : tensor<?x?x5xf32>
// CHECK-NEXT:  }
func.func @reshape_dims(%y: tensor<?x5xf32>, %x: tensor<?x?x3xf32>) -> tensor<?x?x5xf32> {
  %z = "aotk.reshape_dims"(%y, %x) <{shape = array<i64: -1, -2, 5>, taken = array<i64: 1, 1>}> : (tensor<?x5xf32>, tensor<?x?x3xf32>) -> tensor<?x?x5xf32>
  func.return %z : tensor<?x?x5xf32>
}
