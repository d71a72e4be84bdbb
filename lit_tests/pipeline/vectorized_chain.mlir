// The acceptance chain tanh(x*a + b) * sigmoid(x) + x*x after LLVM's O3 for the host CPU:
// one fused loop whose exp and tanh are plain arith, so LLVM vectorizes all of it
// (<8 x float> and ymm on AVX2; AVX-512 hosts may pick other widths and zmm).
// REQUIRES: avx2
// RUN: aotk-opt %s --aotk-stage=llvm -o %t.mlir
// RUN: aotk-opt %t.mlir -t llvm-opt | filecheck %s --check-prefix=IR
// RUN: aotk-opt %t.mlir -t asm | filecheck %s --check-prefix=ASM
// RUN: aotk-opt %t.mlir -t 'asm{cpu=sapphirerapids features="+avx2,+fma,+avx512f,+avx512vl,+avx512bw,+avx512dq"}' | filecheck %s --check-prefix=ZMM

// The dynamic version loads with gathers (a dim of 1 broadcasts, so strides are run-time
// values); the static one has contiguous vector loads and stores.
// IR-LABEL: define void @chain_dynamic(
// IR-NOT:     call {{.*}}@{{(expf|tanhf|llvm\.exp\.|llvm\.tanh\.)}}
// IR:         fmul {{.*}}{{<[0-9]+ x float>}}
// IR-NOT:     call {{.*}}@{{(expf|tanhf|llvm\.exp\.|llvm\.tanh\.)}}
// IR-LABEL: define void @chain_static(
// IR-NOT:     call {{.*}}@{{(expf|tanhf|llvm\.exp\.|llvm\.tanh\.)}}
// IR:         load {{<[0-9]+ x float>}}, ptr
// IR:         fmul {{.*}}{{<[0-9]+ x float>}}
// IR:         store {{<[0-9]+ x float>}}
// IR-NOT:     call {{.*}}@{{(expf|tanhf|llvm\.exp\.|llvm\.tanh\.)}}

// K.sigmoid traces to aotk.sigmoid, whose polynomial exp of -|x| needs one clamp and
// one power of two: the same contiguous vector loop, no libm call.
// IR-LABEL: define void @chain_sigmoid_op(
// IR-NOT:     call {{.*}}@{{(expf|tanhf|llvm\.exp\.|llvm\.tanh\.)}}
// IR:         load {{<[0-9]+ x float>}}, ptr
// IR:         fdiv {{.*}}{{<[0-9]+ x float>}}
// IR:         store {{<[0-9]+ x float>}}
// IR-NOT:     call {{.*}}@{{(expf|tanhf|llvm\.exp\.|llvm\.tanh\.)}}

// ASM-LABEL: chain_dynamic:
// ASM:         {{%[yz]mm[0-9]+}}
// ASM-LABEL: chain_static:
// ASM:         {{%[yz]mm[0-9]+}}

// On an AVX-512 target LLVM's vectorizer is let to use zmm (its tuning for Intel's
// AVX-512 CPUs caps it at 256 bits): the loop's FMAs and stores are 16 floats wide.
// ZMM-LABEL: chain_static:
// ZMM:         vfmadd{{[0-9]+}}ps {{.*}}%zmm
// ZMM:         vmovups %zmm{{[0-9]+}}, (
func.func @chain_dynamic(%x: tensor<?xf32>, %a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %xa = "aotk.mul"(%x, %a) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %xab = "aotk.add"(%xa, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %t = "aotk.tanh"(%xab) : (tensor<?xf32>) -> tensor<?xf32>
  %one = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %nx = "aotk.neg"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %e = "aotk.exp"(%nx) : (tensor<?xf32>) -> tensor<?xf32>
  %den = "aotk.add"(%one, %e) : (tensor<f32>, tensor<?xf32>) -> tensor<?xf32>
  %sig = "aotk.div"(%one, %den) : (tensor<f32>, tensor<?xf32>) -> tensor<?xf32>
  %ts = "aotk.mul"(%t, %sig) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %xx = "aotk.mul"(%x, %x) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  %y = "aotk.add"(%ts, %xx) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}

func.func @chain_static(%x: tensor<4194304xf32>, %a: tensor<4194304xf32>, %b: tensor<4194304xf32>) -> tensor<4194304xf32> {
  %xa = "aotk.mul"(%x, %a) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %xab = "aotk.add"(%xa, %b) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %t = "aotk.tanh"(%xab) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %one = "aotk.constant"() <{value = 1.000000e+00 : f64, dtype = f32}> : () -> tensor<f32>
  %nx = "aotk.neg"(%x) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %e = "aotk.exp"(%nx) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %den = "aotk.add"(%one, %e) : (tensor<f32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %sig = "aotk.div"(%one, %den) : (tensor<f32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %ts = "aotk.mul"(%t, %sig) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %xx = "aotk.mul"(%x, %x) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  %y = "aotk.add"(%ts, %xx) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  func.return %y : tensor<4194304xf32>
}

func.func @chain_sigmoid_op(%x: tensor<4194304xf32>) -> tensor<4194304xf32> {
  %t = "aotk.tanh"(%x) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %sig = "aotk.sigmoid"(%x) : (tensor<4194304xf32>) -> tensor<4194304xf32>
  %ts = "aotk.mul"(%t, %sig) : (tensor<4194304xf32>, tensor<4194304xf32>) -> tensor<4194304xf32>
  func.return %ts : tensor<4194304xf32>
}
