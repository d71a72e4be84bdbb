// RUN: aotk-opt %s --aotk-stage=graph --print-between-passes | filecheck %s --check-prefix=PRINT
// RUN: not aotk-opt %s -t llvm-opt 2>&1 | filecheck %s --check-prefix=TARGET

// --print-between-passes shows the IR after each pass but the last, whose IR is the output.
// PRINT:       IR after aotk-simplify:
// PRINT-NEXT:  builtin.module {
// PRINT-NEXT:    func.func @neg_exp
// PRINT-NEXT:      %n = "aotk.neg"(%x)
// PRINT:       IR after aotk-fuse:
// PRINT-NEXT:  builtin.module {
// PRINT-NEXT:    func.func @neg_exp
// PRINT-NEXT:      %y = aotk.fused(%{{.*}} = %x)

// TARGET:      error: -t llvm-opt: 'func.func' is not in the llvm dialect; lower it first (e.g. --aotk-stage=llvm)
func.func @neg_exp(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = "aotk.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %y = "aotk.exp"(%n) : (tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
