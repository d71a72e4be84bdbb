// RUN: aotk-opt %s --split-input-file -p aotk-merge-scans | filecheck %s

// A later scan over the same operands whose body yields the earlier one's values first
// (what a gradient's state-saving scan is) replaces it: it moves up, the earlier scan's
// results become its first results, and the steps run once.
// CHECK-LABEL: func.func @twin(
// CHECK-NEXT:    %h2, %ys2, %saved = aotk.scan seqs(%{{.*}} = %xs) carries(%{{.*}} = %h0)
// CHECK:           aotk.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    %e = "aotk.exp"(%h2)
// CHECK-NOT:     aotk.scan
// CHECK:         func.return %e, %ys2, %saved
func.func @twin(%xs: tensor<5x3xf32>, %h0: tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>, tensor<5x3xf32>) {
  %h, %ys = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
    %n = "aotk.add"(%x, %s) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    aotk.yield %n, %n : tensor<3xf32>, tensor<3xf32>
  }
  %e = "aotk.exp"(%h) : (tensor<3xf32>) -> tensor<3xf32>
  %h2, %ys2, %saved = aotk.scan seqs(%x2 = %xs) carries(%s2 = %h0) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>, tensor<5x3xf32>) {
    %n2 = "aotk.add"(%x2, %s2) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    aotk.yield %n2, %n2, %s2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
  }
  func.return %e, %ys, %saved : tensor<3xf32>, tensor<5x3xf32>, tensor<5x3xf32>
}

// -----

// A constant the later body took from the code after the earlier scan is made again
// before it, so the merged scan uses only values defined above it.
// CHECK-LABEL: func.func @late_constant(
// CHECK-NEXT:    %[[C:.*]] = "aotk.constant"() <{value = 2.000000e+00 : f64, dtype = f32}>
// CHECK-NEXT:    %{{.*}}, %{{.*}} = aotk.scan
// CHECK-NEXT:      "aotk.mul"(%{{.*}}, %[[C]])
// CHECK-NOT:     aotk.scan
func.func @late_constant(%xs: tensor<5x3xf32>, %h0: tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
  %h, %ys = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
    %two = "aotk.constant"() <{value = 2.0 : f64, dtype = f32}> : () -> tensor<f32>
    %n = "aotk.mul"(%s, %two) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    aotk.yield %n, %s : tensor<3xf32>, tensor<3xf32>
  }
  %c = "aotk.constant"() <{value = 2.0 : f64, dtype = f32}> : () -> tensor<f32>
  %h2, %ys2 = aotk.scan seqs(%x2 = %xs) carries(%s2 = %h0) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
    %n2 = "aotk.mul"(%s2, %c) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    aotk.yield %n2, %s2 : tensor<3xf32>, tensor<3xf32>
  }
  func.return %h, %ys2 : tensor<3xf32>, tensor<5x3xf32>
}

// -----

// Different operands (another initial state) or another body: both scans stay.
// CHECK-LABEL: func.func @not_twins(
// CHECK:         aotk.scan
// CHECK:         aotk.scan
// CHECK:         aotk.scan
func.func @not_twins(%xs: tensor<5x3xf32>, %h0: tensor<3xf32>, %h1: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  %a, %ay = aotk.scan seqs(%x = %xs) carries(%s = %h0) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
    %n = "aotk.add"(%x, %s) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    aotk.yield %n, %n : tensor<3xf32>, tensor<3xf32>
  }
  %b, %by = aotk.scan seqs(%x2 = %xs) carries(%s2 = %h1) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
    %n2 = "aotk.add"(%x2, %s2) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    aotk.yield %n2, %n2 : tensor<3xf32>, tensor<3xf32>
  }
  %c, %cy = aotk.scan seqs(%x3 = %xs) carries(%s3 = %h0) : (tensor<5x3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<5x3xf32>) {
    %n3 = "aotk.sub"(%x3, %s3) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    aotk.yield %n3, %n3 : tensor<3xf32>, tensor<3xf32>
  }
  func.return %a, %b, %c : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
}
