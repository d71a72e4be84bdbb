"""Softmax's exponential on whole vectors of f32: 2**(j/N) from a table in one register.

For x <= 0 (softmax's x - max) and N the vector's lanes (16 on AVX-512, 8 on AVX2),
x = (m + j/N) ln2 + r with integers m and 0 <= j < N, |r| <= ln2 / 2N, so
exp(x) = 2**m * T[j] * (1 + p(r)) with T[j] = 2**(j/N). The N entries of T fill one
vector, read by a lane permute (one vpermps); 2**m is added into T[j]'s exponent bits
(T[j] >= 1, so that stays normal down to 2**-126); p(r) = r + r**2 q(r) is Taylor's
polynomial of degree 3 (N = 16, |r| <= 0.0217) or 4 (N = 8). That is 14 vector ops where
`vecmath.exp_nonpositive`, on |r| <= ln2/2, needs a degree-6 polynomial and 20.

Accuracy, every 7th float of [-126 ln2, 0]: 1.06 ulp at most for 16 lanes, 0.88 for 8
(f32's T[j] is off by up to 0.45 ulp, and the last fma rounds), against 0.88 for
`vecmath.exp_nonpositive`. A softmax's own roundings dominate its output (x - max rounded
costs up to 19 ulp where |x - max| is large): on 4096 rows of 1024 values uniform in
[-10, 10], 16 lanes gave a mean error of 2.88 ulp and at most 20.4 against float64,
the scalar exponential 2.76 and 19.1. Results below 2**-126 (x < -126 ln2) are flushed
to 0, as XLA and ONNX Runtime flush denormals; a NaN gives NaN.
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import Float32Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk.codegen.lane_permute import NAME as PERMUTE
from aotk.kernels.vecmath import _Emit

# lanes -> q(r)'s Taylor coefficients: p(r) = r + r**2 q(r) within 0.15 ulp of expm1(r)
TAYLOR = {16: (0.5, 1 / 6), 8: (0.5, 1 / 6, 1 / 24)}
FTZ_LO = -87.33654022216797  # -126 ln2, rounded towards 0: from here up 2**m is normal
_EXPONENT = -(1 << 23)  # 0xFF800000 as an i32: the sign and exponent bits


def supported(vt: Attribute) -> bool:
    """Whether `exp_nonpositive` takes vectors of type `vt`."""
    return (
        isinstance(vt, VectorType)
        and isinstance(vt.element_type, Float32Type)
        and vt.get_shape()[0] in TAYLOR
    )


def exp_nonpositive(b: Builder, x: SSAValue) -> SSAValue:
    """e**x for every lane of x (a vector that `supported` takes) with x <= 0, -inf or
    NaN; 0 below FTZ_LO."""
    assert supported(x.type), x.type
    e = _Emit(b, x)
    lanes, k = e.lanes, e.k
    shifted = e.fma(x, e.c(lanes * k.log2e), e.c(k.shifter))  # m*N + j in the low bits
    n = e.sub(shifted, e.c(k.shifter))
    r = e.fma(n, e.c(-k.ln2_lo / lanes), e.fma(n, e.c(-k.ln2_hi / lanes), x))
    bits = e.op(arith.BitcastOp(shifted, e.itype))
    table = e.table([2.0 ** (j / lanes) for j in range(lanes)])
    entry = permute(b, table, e.op(arith.AndIOp(bits, e.ci(lanes - 1))))
    # shifting m*N + j (two's complement) up by mant - log2(N) leaves m in the exponent
    up = e.op(arith.ShLIOp(bits, e.ci(k.mant - (lanes.bit_length() - 1))))
    power = e.op(arith.AndIOp(up, e.ci(_EXPONENT)))
    scaled = e.op(arith.AddiOp(e.op(arith.BitcastOp(entry, e.itype)), power))
    t = e.op(arith.BitcastOp(scaled, e.ftype))
    p = e.fma(e.mul(r, r), e.horner(r, TAYLOR[lanes]), r)
    return e.sel(e.cmp("olt", x, e.c(FTZ_LO)), e.c(0.0), e.fma(t, p, t))


def permute(b: Builder, table: SSAValue, index: SSAValue) -> SSAValue:
    """`table[index[i]]` in lane i, for a float vector `table` and an integer vector
    `index` of as many lanes, each in [0, lanes) (see `codegen.lane_permute`)."""
    vt = table.type
    assert isinstance(vt, VectorType) and isinstance(index.type, VectorType)
    elem = vt.element_type
    assert isinstance(elem, Float32Type)
    call = llvm.CallIntrinsicOp(f"{PERMUTE}.v{vt.get_shape()[0]}f32", [table, index], [vt])
    return b.insert(call).results[0]
