// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of gather, gather_grad and iota: printed, parsed back and printed
// again, each op keeps its properties and types.

// aotk.gather takes x's slices along `axis` at `indices` (the first `batch_dims` dims of x
// and indices match); aotk.gather_grad scatters g back into zeros like x; aotk.iota counts.

// CHECK-LABEL: func.func @gather(%x: tensor<?x3xf32>, %i: tensor<?xi32>, %m: tensor<2x5x3xi1>, %j: tensor<2x4xi64>) -> (tensor<?x3xf32>, tensor<2x2x4x3xi1>) {
// CHECK-NEXT:    %y = "aotk.gather"(%x, %i) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %z = "aotk.gather"(%m, %j) <{axis = 1 : i64, batch_dims = 0 : i64}> : (tensor<2x5x3xi1>, tensor<2x4xi64>) -> tensor<2x2x4x3xi1>
// CHECK-NEXT:    func.return %y, %z : tensor<?x3xf32>, tensor<2x2x4x3xi1>
// CHECK-NEXT:  }
func.func @gather(%x: tensor<?x3xf32>, %i: tensor<?xi32>, %m: tensor<2x5x3xi1>, %j: tensor<2x4xi64>) -> (tensor<?x3xf32>, tensor<2x2x4x3xi1>) {
  %y = "aotk.gather"(%x, %i) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<?x3xf32>
  %z = "aotk.gather"(%m, %j) <{axis = 1 : i64, batch_dims = 0 : i64}> : (tensor<2x5x3xi1>, tensor<2x4xi64>) -> tensor<2x2x4x3xi1>
  func.return %y, %z : tensor<?x3xf32>, tensor<2x2x4x3xi1>
}

// CHECK-LABEL: func.func @gather_batch_dims(%x: tensor<?x6xi16>, %i: tensor<?xi32>, %s: tensor<5x2xf64>, %k: tensor<i32>) -> (tensor<?xi16>, tensor<2xf64>) {
// CHECK-NEXT:    %y = "aotk.gather"(%x, %i) <{axis = 1 : i64, batch_dims = 1 : i64}> : (tensor<?x6xi16>, tensor<?xi32>) -> tensor<?xi16>
// CHECK-NEXT:    %z = "aotk.gather"(%s, %k) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<5x2xf64>, tensor<i32>) -> tensor<2xf64>
// CHECK-NEXT:    func.return %y, %z : tensor<?xi16>, tensor<2xf64>
// CHECK-NEXT:  }
func.func @gather_batch_dims(%x: tensor<?x6xi16>, %i: tensor<?xi32>, %s: tensor<5x2xf64>, %k: tensor<i32>) -> (tensor<?xi16>, tensor<2xf64>) {
  %y = "aotk.gather"(%x, %i) <{axis = 1 : i64, batch_dims = 1 : i64}> : (tensor<?x6xi16>, tensor<?xi32>) -> tensor<?xi16>
  %z = "aotk.gather"(%s, %k) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<5x2xf64>, tensor<i32>) -> tensor<2xf64>
  func.return %y, %z : tensor<?xi16>, tensor<2xf64>
}

// CHECK-LABEL: func.func @gather_grad(%g: tensor<?x3xf32>, %i: tensor<?xi32>, %x: tensor<?x3xf32>, %gb: tensor<?xf16>, %ib: tensor<?xi64>, %xb: tensor<?x6xf16>) -> (tensor<?x3xf32>, tensor<?x6xf16>) {
// CHECK-NEXT:    %y = "aotk.gather_grad"(%g, %i, %x) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<?x3xf32>, tensor<?xi32>, tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %z = "aotk.gather_grad"(%gb, %ib, %xb) <{axis = 1 : i64, batch_dims = 1 : i64}> : (tensor<?xf16>, tensor<?xi64>, tensor<?x6xf16>) -> tensor<?x6xf16>
// CHECK-NEXT:    func.return %y, %z : tensor<?x3xf32>, tensor<?x6xf16>
// CHECK-NEXT:  }
func.func @gather_grad(%g: tensor<?x3xf32>, %i: tensor<?xi32>, %x: tensor<?x3xf32>, %gb: tensor<?xf16>, %ib: tensor<?xi64>, %xb: tensor<?x6xf16>) -> (tensor<?x3xf32>, tensor<?x6xf16>) {
  %y = "aotk.gather_grad"(%g, %i, %x) <{axis = 0 : i64, batch_dims = 0 : i64}> : (tensor<?x3xf32>, tensor<?xi32>, tensor<?x3xf32>) -> tensor<?x3xf32>
  %z = "aotk.gather_grad"(%gb, %ib, %xb) <{axis = 1 : i64, batch_dims = 1 : i64}> : (tensor<?xf16>, tensor<?xi64>, tensor<?x6xf16>) -> tensor<?x6xf16>
  func.return %y, %z : tensor<?x3xf32>, tensor<?x6xf16>
}

// CHECK-LABEL: func.func @iota() -> (tensor<6xf32>, tensor<5xi64>, tensor<0xf64>) {
// CHECK-NEXT:    %a = "aotk.iota"() <{start = -3.000000e+00 : f64, step = 2.000000e+00 : f64, size = 6 : i64, dtype = f32}> : () -> tensor<6xf32>
// CHECK-NEXT:    %b = "aotk.iota"() <{start = 4.000000e+00 : f64, step = -1.000000e+00 : f64, size = 5 : i64, dtype = i64}> : () -> tensor<5xi64>
// CHECK-NEXT:    %c = "aotk.iota"() <{start = 5.000000e-01 : f64, step = 2.500000e-01 : f64, size = 0 : i64, dtype = f64}> : () -> tensor<0xf64>
// CHECK-NEXT:    func.return %a, %b, %c : tensor<6xf32>, tensor<5xi64>, tensor<0xf64>
// CHECK-NEXT:  }
func.func @iota() -> (tensor<6xf32>, tensor<5xi64>, tensor<0xf64>) {
  %a = "aotk.iota"() <{start = -3.000000e+00 : f64, step = 2.000000e+00 : f64, size = 6 : i64, dtype = f32}> : () -> tensor<6xf32>
  %b = "aotk.iota"() <{start = 4.000000e+00 : f64, step = -1.000000e+00 : f64, size = 5 : i64, dtype = i64}> : () -> tensor<5xi64>
  %c = "aotk.iota"() <{start = 5.000000e-01 : f64, step = 2.500000e-01 : f64, size = 0 : i64, dtype = f64}> : () -> tensor<0xf64>
  func.return %a, %b, %c : tensor<6xf32>, tensor<5xi64>, tensor<0xf64>
}
