// RUN: aotk-opt %s --aotk-stage=llvm -t llvm | filecheck %s

// Through the whole pipeline: the flat loop of a large elementwise kernel runs in chunks
// of 4096 elements, handed to the thread pool from 4 chunks on; a small one stays inline.
// Each kernel is a function of its own (aotk-outline-kernels), never inlined back.
// CHECK:       declare void @"aotk_parallel_for"(ptr noalias {{.*}}, ptr noalias {{.*}}, i64 {{.*}})
// CHECK-LABEL: define void @"big"(
// CHECK:         call {{.*}}@"big_k0"(
// CHECK-LABEL: define void @"big_k0"({{.*}}) noinline
// CHECK:         call {{.*}}@"aotk_parallel_for"({{.*}}@"big_k0_par0", ptr
// CHECK:         call {{.*}}@"big_k0_par0"(ptr
// CHECK-LABEL: define void @"big_k0_par0"(ptr noalias {{.*}}, i64 {{.*}}, i64 {{.*}}) noinline
// CHECK:         call {{.*}}@"big_k0_par0_body"(i64 {{.*}}, ptr {{.*}}, ptr {{.*}}, i64 {{.*}}, i64 {{.*}})
// The iterations take the kernel's input and output as `noalias` again, so LLVM's
// vectorizer need not check at run time that they do not overlap.
// CHECK-LABEL: define void @"big_k0_par0_body"(i64 {{.*}}, ptr noalias {{.*}}, ptr noalias {{.*}}, i64 {{.*}}, i64 {{.*}}) noinline
// CHECK:         fmul float
// CHECK-LABEL: define void @"small"(
// CHECK:         call {{.*}}@"small_k0"(
// CHECK-LABEL: define void @"small_k0"(
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
