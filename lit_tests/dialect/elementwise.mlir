// RUN: aotk-opt %s | aotk-opt | filecheck %s

// The textual form of the elementwise ops (unary, arithmetic, compare and select, cast,
// constant, fill_like, stop_gradient): printed, parsed back and printed again, each op keeps
// its properties and types. Operands broadcast as in NumPy.

// CHECK-LABEL: func.func @unary_float(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
// CHECK-NEXT:    %neg = "aotk.neg"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %abs = "aotk.abs"(%neg) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %sign = "aotk.sign"(%abs) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %sqrt = "aotk.sqrt"(%sign) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %exp = "aotk.exp"(%sqrt) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %log = "aotk.log"(%exp) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %tanh = "aotk.tanh"(%log) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %sigmoid = "aotk.sigmoid"(%tanh) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %sin = "aotk.sin"(%sigmoid) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %cos = "aotk.cos"(%sin) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %log1p = "aotk.log1p"(%cos) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %expm1 = "aotk.expm1"(%log1p) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %round = "aotk.round"(%expm1) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    %stop = "aotk.stop_gradient"(%round) : (tensor<?x3xf32>) -> tensor<?x3xf32>
// CHECK-NEXT:    func.return %stop : tensor<?x3xf32>
// CHECK-NEXT:  }
func.func @unary_float(%x: tensor<?x3xf32>) -> tensor<?x3xf32> {
  %neg = "aotk.neg"(%x) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %abs = "aotk.abs"(%neg) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %sign = "aotk.sign"(%abs) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %sqrt = "aotk.sqrt"(%sign) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %exp = "aotk.exp"(%sqrt) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %log = "aotk.log"(%exp) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %tanh = "aotk.tanh"(%log) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %sigmoid = "aotk.sigmoid"(%tanh) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %sin = "aotk.sin"(%sigmoid) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %cos = "aotk.cos"(%sin) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %log1p = "aotk.log1p"(%cos) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %expm1 = "aotk.expm1"(%log1p) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %round = "aotk.round"(%expm1) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  %stop = "aotk.stop_gradient"(%round) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  func.return %stop : tensor<?x3xf32>
}

// CHECK-LABEL: func.func @unary_int(%i: tensor<5xi8>, %h: tensor<f16>) -> (tensor<5xi8>, tensor<f16>) {
// CHECK-NEXT:    %neg = "aotk.neg"(%i) : (tensor<5xi8>) -> tensor<5xi8>
// CHECK-NEXT:    %abs = "aotk.abs"(%neg) : (tensor<5xi8>) -> tensor<5xi8>
// CHECK-NEXT:    %sign = "aotk.sign"(%abs) : (tensor<5xi8>) -> tensor<5xi8>
// CHECK-NEXT:    %round = "aotk.round"(%sign) : (tensor<5xi8>) -> tensor<5xi8>
// CHECK-NEXT:    %sin = "aotk.sin"(%h) : (tensor<f16>) -> tensor<f16>
// CHECK-NEXT:    func.return %round, %sin : tensor<5xi8>, tensor<f16>
// CHECK-NEXT:  }
func.func @unary_int(%i: tensor<5xi8>, %h: tensor<f16>) -> (tensor<5xi8>, tensor<f16>) {
  %neg = "aotk.neg"(%i) : (tensor<5xi8>) -> tensor<5xi8>
  %abs = "aotk.abs"(%neg) : (tensor<5xi8>) -> tensor<5xi8>
  %sign = "aotk.sign"(%abs) : (tensor<5xi8>) -> tensor<5xi8>
  %round = "aotk.round"(%sign) : (tensor<5xi8>) -> tensor<5xi8>
  %sin = "aotk.sin"(%h) : (tensor<f16>) -> tensor<f16>
  func.return %round, %sin : tensor<5xi8>, tensor<f16>
}

// CHECK-LABEL: func.func @arithmetic(%a: tensor<?x1x4xf64>, %b: tensor<3x?xf64>) -> tensor<?x3x4xf64> {
// CHECK-NEXT:    %add = "aotk.add"(%a, %b) : (tensor<?x1x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
// CHECK-NEXT:    %sub = "aotk.sub"(%add, %b) : (tensor<?x3x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
// CHECK-NEXT:    %mul = "aotk.mul"(%sub, %a) : (tensor<?x3x4xf64>, tensor<?x1x4xf64>) -> tensor<?x3x4xf64>
// CHECK-NEXT:    %div = "aotk.div"(%mul, %b) : (tensor<?x3x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
// CHECK-NEXT:    %pow = "aotk.pow"(%div, %a) : (tensor<?x3x4xf64>, tensor<?x1x4xf64>) -> tensor<?x3x4xf64>
// CHECK-NEXT:    %max = "aotk.maximum"(%pow, %b) : (tensor<?x3x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
// CHECK-NEXT:    %min = "aotk.minimum"(%max, %a) : (tensor<?x3x4xf64>, tensor<?x1x4xf64>) -> tensor<?x3x4xf64>
// CHECK-NEXT:    func.return %min : tensor<?x3x4xf64>
// CHECK-NEXT:  }
func.func @arithmetic(%a: tensor<?x1x4xf64>, %b: tensor<3x?xf64>) -> tensor<?x3x4xf64> {
  %add = "aotk.add"(%a, %b) : (tensor<?x1x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
  %sub = "aotk.sub"(%add, %b) : (tensor<?x3x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
  %mul = "aotk.mul"(%sub, %a) : (tensor<?x3x4xf64>, tensor<?x1x4xf64>) -> tensor<?x3x4xf64>
  %div = "aotk.div"(%mul, %b) : (tensor<?x3x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
  %pow = "aotk.pow"(%div, %a) : (tensor<?x3x4xf64>, tensor<?x1x4xf64>) -> tensor<?x3x4xf64>
  %max = "aotk.maximum"(%pow, %b) : (tensor<?x3x4xf64>, tensor<3x?xf64>) -> tensor<?x3x4xf64>
  %min = "aotk.minimum"(%max, %a) : (tensor<?x3x4xf64>, tensor<?x1x4xf64>) -> tensor<?x3x4xf64>
  func.return %min : tensor<?x3x4xf64>
}

// CHECK-LABEL: func.func @arithmetic_int(%a: tensor<4xui8>, %s: tensor<ui8>, %p: tensor<2xi1>) -> (tensor<4xui8>, tensor<2xi1>) {
// CHECK-NEXT:    %add = "aotk.add"(%a, %s) : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
// CHECK-NEXT:    %max = "aotk.maximum"(%p, %p) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
// CHECK-NEXT:    func.return %add, %max : tensor<4xui8>, tensor<2xi1>
// CHECK-NEXT:  }
func.func @arithmetic_int(%a: tensor<4xui8>, %s: tensor<ui8>, %p: tensor<2xi1>) -> (tensor<4xui8>, tensor<2xi1>) {
  %add = "aotk.add"(%a, %s) : (tensor<4xui8>, tensor<ui8>) -> tensor<4xui8>
  %max = "aotk.maximum"(%p, %p) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  func.return %add, %max : tensor<4xui8>, tensor<2xi1>
}

// CHECK-LABEL: func.func @compare(%a: tensor<2x3xi32>, %b: tensor<3xi32>) -> tensor<2x3xi32> {
// CHECK-NEXT:    %eq = "aotk.equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %ne = "aotk.not_equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %gt = "aotk.greater"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %ge = "aotk.greater_equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %lt = "aotk.less"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %le = "aotk.less_equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %ne2 = "aotk.not_equal"(%eq, %ne) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %sel = "aotk.select"(%ne2, %a, %b) : (tensor<2x3xi1>, tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    func.return %sel : tensor<2x3xi32>
// CHECK-NEXT:  }
func.func @compare(%a: tensor<2x3xi32>, %b: tensor<3xi32>) -> tensor<2x3xi32> {
  %eq = "aotk.equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  %ne = "aotk.not_equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  %gt = "aotk.greater"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  %ge = "aotk.greater_equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  %lt = "aotk.less"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  %le = "aotk.less_equal"(%a, %b) : (tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi1>
  %ne2 = "aotk.not_equal"(%eq, %ne) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %sel = "aotk.select"(%ne2, %a, %b) : (tensor<2x3xi1>, tensor<2x3xi32>, tensor<3xi32>) -> tensor<2x3xi32>
  func.return %sel : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @select_broadcast(%c: tensor<i1>, %a: tensor<?x1xf16>, %b: tensor<4xf16>) -> tensor<?x4xf16> {
// CHECK-NEXT:    %sel = "aotk.select"(%c, %a, %b) : (tensor<i1>, tensor<?x1xf16>, tensor<4xf16>) -> tensor<?x4xf16>
// CHECK-NEXT:    func.return %sel : tensor<?x4xf16>
// CHECK-NEXT:  }
func.func @select_broadcast(%c: tensor<i1>, %a: tensor<?x1xf16>, %b: tensor<4xf16>) -> tensor<?x4xf16> {
  %sel = "aotk.select"(%c, %a, %b) : (tensor<i1>, tensor<?x1xf16>, tensor<4xf16>) -> tensor<?x4xf16>
  func.return %sel : tensor<?x4xf16>
}

// CHECK-LABEL: func.func @cast(%x: tensor<?x3xf32>) -> (tensor<?x3xi1>, tensor<?x3xui8>, tensor<?x3xf16>, tensor<?x3xi64>) {
// CHECK-NEXT:    %b = "aotk.cast"(%x) <{dtype = i1}> : (tensor<?x3xf32>) -> tensor<?x3xi1>
// CHECK-NEXT:    %u = "aotk.cast"(%b) <{dtype = ui8}> : (tensor<?x3xi1>) -> tensor<?x3xui8>
// CHECK-NEXT:    %h = "aotk.cast"(%u) <{dtype = f16}> : (tensor<?x3xui8>) -> tensor<?x3xf16>
// CHECK-NEXT:    %l = "aotk.cast"(%h) <{dtype = i64}> : (tensor<?x3xf16>) -> tensor<?x3xi64>
// CHECK-NEXT:    func.return %b, %u, %h, %l : tensor<?x3xi1>, tensor<?x3xui8>, tensor<?x3xf16>, tensor<?x3xi64>
// CHECK-NEXT:  }
func.func @cast(%x: tensor<?x3xf32>) -> (tensor<?x3xi1>, tensor<?x3xui8>, tensor<?x3xf16>, tensor<?x3xi64>) {
  %b = "aotk.cast"(%x) <{dtype = i1}> : (tensor<?x3xf32>) -> tensor<?x3xi1>
  %u = "aotk.cast"(%b) <{dtype = ui8}> : (tensor<?x3xi1>) -> tensor<?x3xui8>
  %h = "aotk.cast"(%u) <{dtype = f16}> : (tensor<?x3xui8>) -> tensor<?x3xf16>
  %l = "aotk.cast"(%h) <{dtype = i64}> : (tensor<?x3xf16>) -> tensor<?x3xi64>
  func.return %b, %u, %h, %l : tensor<?x3xi1>, tensor<?x3xui8>, tensor<?x3xf16>, tensor<?x3xi64>
}

// Special values print as the bits of their f64.
// CHECK-LABEL: func.func @constant() -> (tensor<f32>, tensor<f16>, tensor<f64>, tensor<i16>, tensor<i1>) {
// CHECK-NEXT:    %c = "aotk.constant"() <{value = 2.500000e+00 : f64, dtype = f32}> : () -> tensor<f32>
// CHECK-NEXT:    %inf = "aotk.constant"() <{value = 0xfff0000000000000 : f64, dtype = f16}> : () -> tensor<f16>
// CHECK-NEXT:    %nan = "aotk.constant"() <{value = 0x7ff8000000000000 : f64, dtype = f64}> : () -> tensor<f64>
// CHECK-NEXT:    %i = "aotk.constant"() <{value = -5.000000e+00 : f64, dtype = i16}> : () -> tensor<i16>
// CHECK-NEXT:    %t = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = i1}> : () -> tensor<i1>
// CHECK-NEXT:    func.return %c, %inf, %nan, %i, %t : tensor<f32>, tensor<f16>, tensor<f64>, tensor<i16>, tensor<i1>
// CHECK-NEXT:  }
func.func @constant() -> (tensor<f32>, tensor<f16>, tensor<f64>, tensor<i16>, tensor<i1>) {
  %c = "aotk.constant"() <{value = 2.500000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %inf = "aotk.constant"() <{value = 0xFFF0000000000000 : f64, dtype = f16}> : () -> tensor<f16>
  %nan = "aotk.constant"() <{value = 0x7FF8000000000000 : f64, dtype = f64}> : () -> tensor<f64>
  %i = "aotk.constant"() <{value = -5.000000e+00 : f64, dtype = i16}> : () -> tensor<i16>
  %t = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = i1}> : () -> tensor<i1>
  func.return %c, %inf, %nan, %i, %t : tensor<f32>, tensor<f16>, tensor<f64>, tensor<i16>, tensor<i1>
}

// CHECK-LABEL: func.func @fill_like(%x: tensor<?x3xi1>) -> (tensor<?x3xf32>, tensor<?x3xui8>) {
// CHECK-NEXT:    %f = "aotk.fill_like"(%x) <{value = 1.000000e-03 : f64, dtype = f32}> : (tensor<?x3xi1>) -> tensor<?x3xf32>
// CHECK-NEXT:    %u = "aotk.fill_like"(%x) <{value = 2.000000e+02 : f64, dtype = ui8}> : (tensor<?x3xi1>) -> tensor<?x3xui8>
// CHECK-NEXT:    func.return %f, %u : tensor<?x3xf32>, tensor<?x3xui8>
// CHECK-NEXT:  }
func.func @fill_like(%x: tensor<?x3xi1>) -> (tensor<?x3xf32>, tensor<?x3xui8>) {
  %f = "aotk.fill_like"(%x) <{value = 1.000000e-03 : f64, dtype = f32}> : (tensor<?x3xi1>) -> tensor<?x3xf32>
  %u = "aotk.fill_like"(%x) <{value = 2.000000e+02 : f64, dtype = ui8}> : (tensor<?x3xi1>) -> tensor<?x3xui8>
  func.return %f, %u : tensor<?x3xf32>, tensor<?x3xui8>
}
