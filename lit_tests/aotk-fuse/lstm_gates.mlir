// RUN: aotk-opt %s -p aotk-fuse | filecheck %s

// An LSTM step after the graph passes hoisted x_t @ W out of the loop: z = xw_t + h @ U,
// sliced into the four gates. The gate math after the recurrent matmul is one kernel:
// c = f * c + i * g is yielded as the new cell state and read again by h = o * tanh(c),
// so the kernel stores both in one pass and h's part never reads c back.
// CHECK-LABEL: func.func @lstm(
// CHECK:         aotk.scan
// CHECK-NEXT:      %[[HU:.*]] = "aotk.matmul"(%h, %u)
// CHECK-NEXT:      %[[Z:.*]] = "aotk.add"(%xw, %[[HU]])
// CHECK-COUNT-4:   "aotk.slice"(%[[Z]])
// CHECK-NEXT:      %[[H:.*]], %[[C:.*]] = aotk.fused({{.*}}) : ({{.*}}) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
// CHECK-COUNT-2:     "aotk.tanh"
// CHECK:             "aotk.mul"
// CHECK-NEXT:        aotk.yield %{{[0-9]+}}, %{{[0-9]+}} : tensor<f32>, tensor<f32>
// CHECK-NEXT:      }
// CHECK-NEXT:      aotk.yield %[[H]], %[[C]], %[[H]]
// CHECK-NOT:     aotk.fused
func.func @lstm(%xws: tensor<5x2x16xf32>, %h0: tensor<2x4xf32>, %u: tensor<4x16xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<5x2x4xf32>) {
  %hn, %cn, %hs = aotk.scan seqs(%xw = %xws) carries(%h = %h0, %c = %h0) : (tensor<5x2x16xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<5x2x4xf32>) {
    %hu = "aotk.matmul"(%h, %u) : (tensor<2x4xf32>, tensor<4x16xf32>) -> tensor<2x16xf32>
    %z = "aotk.add"(%xw, %hu) : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
    %zi = "aotk.slice"(%z) <{start = array<i64: 0, 0>, stop = array<i64: 2, 4>, step = array<i64: 1, 1>}> : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %zf = "aotk.slice"(%z) <{start = array<i64: 0, 4>, stop = array<i64: 2, 8>, step = array<i64: 1, 1>}> : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %zo = "aotk.slice"(%z) <{start = array<i64: 0, 8>, stop = array<i64: 2, 12>, step = array<i64: 1, 1>}> : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %zg = "aotk.slice"(%z) <{start = array<i64: 0, 12>, stop = array<i64: 2, 16>, step = array<i64: 1, 1>}> : (tensor<2x16xf32>) -> tensor<2x4xf32>
    %one = "aotk.constant"() <{value = 1.0 : f64, dtype = f32}> : () -> tensor<f32>
    %ni = "aotk.neg"(%zi) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %ei = "aotk.exp"(%ni) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %di = "aotk.add"(%one, %ei) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %i = "aotk.div"(%one, %di) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %nf = "aotk.neg"(%zf) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %ef = "aotk.exp"(%nf) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %df = "aotk.add"(%one, %ef) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %f = "aotk.div"(%one, %df) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %no = "aotk.neg"(%zo) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %eo = "aotk.exp"(%no) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %do = "aotk.add"(%one, %eo) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %o = "aotk.div"(%one, %do) : (tensor<f32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %g = "aotk.tanh"(%zg) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %fc = "aotk.mul"(%f, %c) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %ig = "aotk.mul"(%i, %g) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %c2 = "aotk.add"(%fc, %ig) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %tc = "aotk.tanh"(%c2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %h2 = "aotk.mul"(%o, %tc) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    aotk.yield %h2, %c2, %h2 : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  }
  func.return %hn, %cn, %hs : tensor<2x4xf32>, tensor<2x4xf32>, tensor<5x2x4xf32>
}
