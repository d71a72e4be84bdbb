// RUN: aotk-opt %s --aotk-stage=llvm -t llvm | filecheck %s

// Through the whole pipeline: the flat loop of a large elementwise kernel runs in chunks
// of 4096 elements, handed to the thread pool from 4 chunks on; a small one stays inline.
// CHECK:       declare void @"aotk_parallel_for"(ptr noalias {{.*}}, ptr noalias {{.*}}, i64 {{.*}})
// CHECK-LABEL: define void @"big"(
// CHECK:         call {{.*}}@"aotk_parallel_for"({{.*}}@"big_par0", ptr
// CHECK:         call {{.*}}@"big_par0"(ptr
// CHECK-LABEL: define void @"big_par0"(ptr noalias {{.*}}, i64 {{.*}}, i64 {{.*}})
// CHECK:         fmul float
// CHECK-LABEL: define void @"small"(
// CHECK-NOT:     aotk_parallel_for
// CHECK:         ret void
func.func @big(%x: tensor<?x512xf32>) -> tensor<?x512xf32> {
  %y = "aotk.mul"(%x, %x) : (tensor<?x512xf32>, tensor<?x512xf32>) -> tensor<?x512xf32>
  func.return %y : tensor<?x512xf32>
}

func.func @small(%x: tensor<4x512xf32>) -> tensor<4x512xf32> {
  %y = "aotk.mul"(%x, %x) : (tensor<4x512xf32>, tensor<4x512xf32>) -> tensor<4x512xf32>
  func.return %y : tensor<4x512xf32>
}
