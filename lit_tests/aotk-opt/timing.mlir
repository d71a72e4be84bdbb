// --timing reports every pass, in pipeline order, with its seconds and the op count of
// the IR it leaves (on stderr; the IR goes to -o). The traced module has 5 ops: the
// module, the function, two aotk ops and the return.
// RUN: aotk-opt %s --aotk-stage=loops --timing -o %t 2>&1 | filecheck %s
// RUN: filecheck %s --input-file=%t --check-prefix=IR

// CHECK:      aotk-timing: pass  aotk-simplify {{ +}}{{[0-9.]+}} s {{ +}}5 ops
// CHECK:      aotk-timing: pass  aotk-fuse
// CHECK:      aotk-timing: pass  convert-aotk-to-loops {{ +}}{{[0-9.]+}} s {{ +}}{{[0-9]+}} ops
// CHECK:      aotk-timing: pass  aotk-check-stage
// CHECK-NOT:  aotk-timing
// IR:         func.func @neg_exp(
func.func @neg_exp(%x: tensor<?xf32>) -> tensor<?xf32> {
  %n = "aotk.neg"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %y = "aotk.exp"(%n) : (tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
