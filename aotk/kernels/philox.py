"""Philox-4x32-10 and the maps from its random words to floats, as arith ops.

Philox (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) turns a
128-bit counter and a 64-bit key into 128 random bits, so every block of samples can be
computed from its own index, in any order. Everything here is branch-free i32/i64/float
arith that LLVM's loop vectorizer handles (the 32x32->64 products become vpmuludq). The
NumPy oracle in `aotk.dialect.random_numpy` computes the same functions.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.kernels import vecmath

ROUNDS = 10
TRUNCATE = 2.0  # truncated normals keep |z| < 2
MAX_REDRAWS = 31  # a value is rejected 32 times in a row with chance 0.0455**32 < 1e-42
MUL = (0xD2511F53, 0xCD9E8D57)
WEYL = (0x9E3779B9, 0xBB67AE85)

# Taylor coefficients of sin(x)/x - 1 and cos(x) - 1 in powers of x*x; on |x| <= pi/4 the
# truncation error is below 2e-9 (f32) and 5e-20 (f64)
SIN_COEFFS = {
    32: tuple((-1) ** k / pymath.factorial(2 * k + 1) for k in range(1, 5)),
    64: tuple((-1) ** k / pymath.factorial(2 * k + 1) for k in range(1, 9)),
}
COS_COEFFS = {
    32: tuple((-1) ** k / pymath.factorial(2 * k) for k in range(1, 6)),
    64: tuple((-1) ** k / pymath.factorial(2 * k) for k in range(1, 9)),
}


def per_block(dtype: str) -> int:
    """Samples drawn from one Philox block of four 32-bit words."""
    return 2 if dtype == "float64" else 4


def _ins(b: Builder, op: Operation) -> SSAValue:
    return b.insert(op).results[0]


def const_int(b: Builder, value: int, typ: IntegerType) -> SSAValue:
    """An integer constant given as its unsigned bits."""
    width = typ.width.data
    value &= (1 << width) - 1
    if value >= 1 << (width - 1):
        value -= 1 << width
    return _ins(b, arith.ConstantOp(IntegerAttr(value, typ)))


def const_float(b: Builder, value: float, typ: Attribute) -> SSAValue:
    assert isinstance(typ, AnyFloat)
    return _ins(b, arith.ConstantOp(FloatAttr(value, typ)))


def split64(b: Builder, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The low and high 32-bit words of an i64."""
    lo = _ins(b, arith.TruncIOp(x, i32))
    hi = _ins(b, arith.TruncIOp(_ins(b, arith.ShRUIOp(x, const_int(b, 32, i64))), i32))
    return lo, hi


def _mulhilo(b: Builder, factor: int, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    wide = _ins(b, arith.MuliOp(_ins(b, arith.ExtUIOp(x, i64)), const_int(b, factor, i64)))
    hi = _ins(b, arith.TruncIOp(_ins(b, arith.ShRUIOp(wide, const_int(b, 32, i64))), i32))
    return hi, _ins(b, arith.TruncIOp(wide, i32))


def _round(b: Builder, state: Sequence[SSAValue]) -> list[SSAValue]:
    """One Philox round on (c0, c1, c2, c3, k0, k1), then the key's Weyl step."""
    c0, c1, c2, c3, k0, k1 = state
    hi0, lo0 = _mulhilo(b, MUL[0], c0)
    hi1, lo1 = _mulhilo(b, MUL[1], c2)
    return [
        _ins(b, arith.XOrIOp(_ins(b, arith.XOrIOp(hi1, c1)), k0)),
        lo1,
        _ins(b, arith.XOrIOp(_ins(b, arith.XOrIOp(hi0, c3)), k1)),
        lo0,
        _ins(b, arith.AddiOp(k0, const_int(b, WEYL[0], i32))),
        _ins(b, arith.AddiOp(k1, const_int(b, WEYL[1], i32))),
    ]


def philox(
    b: Builder, ctr: Sequence[SSAValue], key: Sequence[SSAValue], unrolled: bool = False
) -> list[SSAValue]:
    """Philox-4x32-10: four random i32 words from four counter and two key words.

    `unrolled` writes the 10 rounds out, for a loop over samples that LLVM should
    vectorize: around the rounds' loop it stayed scalar (1M float32 uniforms took 6.1 ms
    on one thread, against 1.25 ms unrolled). The loop keeps the IR, and xDSL's pass
    times, small where samples are few (a tail, a re-draw)."""
    if unrolled:
        state = [*ctr, *key]
        for _ in range(ROUNDS):
            state = _round(b, state)
        return state[:4]
    body = Block(arg_types=[IndexType(), *[i32] * 6])
    inner = Builder(InsertPoint.at_end(body))
    inner.insert(scf.YieldOp(*_round(inner, body.args[1:])))
    lb, ub, step = (_ins(b, arith.ConstantOp(IntegerAttr(v, IndexType()))) for v in (0, ROUNDS, 1))
    loop = b.insert(scf.ForOp(lb, ub, step, [*ctr, *key], body))
    return list(loop.results[:4])


def unit_f32(b: Builder, word: SSAValue, bits: int = 23) -> SSAValue:
    """A float32 in [0, 1) from the low `bits` bits of an i32 word: [1, 2) by bits, minus 1."""
    mant = _ins(b, arith.AndIOp(word, const_int(b, (1 << bits) - 1, i32)))
    if bits < 23:
        mant = _ins(b, arith.ShLIOp(mant, const_int(b, 23 - bits, i32)))
    one_to_two = _ins(b, arith.OrIOp(mant, const_int(b, 0x3F800000, i32)))
    f = _ins(b, arith.BitcastOp(one_to_two, f32))
    return _ins(b, arith.SubfOp(f, const_float(b, 1.0, f32)))


def unit_f64(b: Builder, hi: SSAValue, lo: SSAValue) -> SSAValue:
    """A float64 in [0, 1) from the low 52 bits of two i32 words."""
    wide = _ins(
        b,
        arith.OrIOp(
            _ins(b, arith.ShLIOp(_ins(b, arith.ExtUIOp(hi, i64)), const_int(b, 32, i64))),
            _ins(b, arith.ExtUIOp(lo, i64)),
        ),
    )
    mant = _ins(b, arith.AndIOp(wide, const_int(b, (1 << 52) - 1, i64)))
    one_to_two = _ins(b, arith.OrIOp(mant, const_int(b, 0x3FF0000000000000, i64)))
    f = _ins(b, arith.BitcastOp(one_to_two, Float64Type()))
    return _ins(b, arith.SubfOp(f, const_float(b, 1.0, Float64Type())))


class _Float:
    """Float ops of one type, kept short so formulas stay readable."""

    def __init__(self, b: Builder, typ: Attribute) -> None:
        self.b, self.t = b, typ

    def c(self, value: float) -> SSAValue:
        return const_float(self.b, value, self.t)

    def add(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return _ins(self.b, arith.AddfOp(x, y))

    def sub(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return _ins(self.b, arith.SubfOp(x, y))

    def mul(self, x: SSAValue, y: SSAValue) -> SSAValue:
        return _ins(self.b, arith.MulfOp(x, y))

    def neg(self, x: SSAValue) -> SSAValue:
        return _ins(self.b, arith.NegfOp(x))

    def eq(self, x: SSAValue, value: float) -> SSAValue:
        return _ins(self.b, arith.CmpfOp(x, self.c(value), "oeq"))

    def sel(self, cond: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
        return _ins(self.b, arith.SelectOp(cond, x, y))

    def horner(self, t: SSAValue, coeffs: Sequence[float]) -> SSAValue:
        acc = self.c(coeffs[-1])
        for coeff in reversed(coeffs[:-1]):
            acc = self.add(self.mul(acc, t), self.c(coeff))
        return acc


def sincos_turns(b: Builder, t: SSAValue) -> tuple[SSAValue, SSAValue]:
    """(sin, cos) of 2*pi*t for t in [0, 1).

    t = q/4 + r with q = round(4t) and |r| <= 1/8 exactly, so only 2*pi*r is rounded; the
    quarter turns q then rotate (sin, cos) of the reduced angle.
    """
    f = _Float(b, t.type)
    width = 64 if isinstance(t.type, Float64Type) else 32
    q = _ins(b, math.FloorOp(f.add(f.mul(t, f.c(4.0)), f.c(0.5))))
    x = f.mul(f.sub(t, f.mul(q, f.c(0.25))), f.c(2 * pymath.pi))
    z = f.mul(x, x)
    s = f.add(x, f.mul(f.mul(x, z), f.horner(z, SIN_COEFFS[width])))
    c = f.add(f.c(1.0), f.mul(z, f.horner(z, COS_COEFFS[width])))
    is1, is2, is3 = f.eq(q, 1.0), f.eq(q, 2.0), f.eq(q, 3.0)
    odd = _ins(b, arith.OrIOp(is1, is3))
    sin_v, cos_v = f.sel(odd, c, s), f.sel(odd, s, c)
    sin_v = f.sel(_ins(b, arith.OrIOp(is2, is3)), f.neg(sin_v), sin_v)
    cos_v = f.sel(_ins(b, arith.OrIOp(is1, is2)), f.neg(cos_v), cos_v)
    return sin_v, cos_v


def box_muller(b: Builder, u1: SSAValue, u2: SSAValue) -> tuple[SSAValue, SSAValue]:
    """Two independent standard normals from two uniforms in [0, 1)."""
    f = _Float(b, u1.type)
    # 1 - u1 is exact and in (0, 1], so the log is finite
    radius = _ins(b, math.SqrtOp(f.mul(f.c(-2.0), vecmath.log(b, f.sub(f.c(1.0), u1)))))
    sin_v, cos_v = sincos_turns(b, u2)
    return f.mul(radius, cos_v), f.mul(radius, sin_v)
