"""Scalar helpers of the CTC kernels: index arithmetic, selects, log-sum-exp, valued ifs.

The CTC kernels are control-heavy scalar code (dynamic programming, beam bookkeeping), so
these helpers keep them readable: index values compare signed (-1 means "none"), and
`if_values` is an `scf.if` that yields values, which `Kernel.if_else` does not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import Float64Type, IntegerType, f64, i64
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.kernels.kernel import INDEX, Buf, DimV, Kernel
from aotk.kernels.scalar import const, convert

NEG_INF = float("-inf")


def fcmp(k: Kernel, pred: str, a: SSAValue, c: SSAValue) -> SSAValue:
    return k.b.insert(arith.CmpfOp(a, c, pred)).result


def sel(k: Kernel, cond: SSAValue, a: SSAValue | DimV, c: SSAValue | DimV) -> SSAValue:
    return k.index(k.select(cond, a, c))


def imax(k: Kernel, a: DimV, c: DimV) -> SSAValue:
    return k.b.insert(arith.MaxSIOp(k.index(a), k.index(c))).result


def clamp(k: Kernel, v: DimV, lo: DimV, hi: DimV) -> SSAValue:
    """`v` limited to [lo, hi] (signed)."""
    return k.b.insert(arith.MinSIOp(imax(k, v, lo), k.index(hi))).result


def to_index(k: Kernel, v: SSAValue, elem: Attribute) -> SSAValue:
    """An integer scalar of element type `elem` (compute type) as an index."""
    wide = convert(k.b, v, elem, i64)
    return k.b.insert(arith.IndexCastOp(wide, INDEX)).result


def load_index(k: Kernel, buf: Buf, offset: DimV) -> SSAValue:
    """Element `offset` of an integer buffer, as an index."""
    return to_index(k, k.load_flat(buf, offset), buf.elem)


def fconst(k: Kernel, value: float, typ: Attribute) -> SSAValue:
    return const(k.b, value, typ)


def load_f64(k: Kernel, buf: Buf, offset: DimV) -> SSAValue:
    """Element `offset` of a float buffer, widened to f64."""
    v = k.load_flat(buf, offset)
    return convert(k.b, v, buf.elem, f64) if not isinstance(v.type, Float64Type) else v


def index_to_f64(k: Kernel, v: DimV) -> SSAValue:
    wide = k.b.insert(arith.IndexCastOp(k.index(v), i64)).result
    return k.b.insert(arith.SIToFPOp(wide, f64)).result


def f64_to_i64(k: Kernel, v: SSAValue) -> SSAValue:
    return k.b.insert(arith.FPToSIOp(v, i64)).result


def store_bits(k: Kernel, buf: Buf, offset: DimV, v: DimV) -> None:
    """Keep an index in an f64 scratch slot as its bit pattern (exact and free)."""
    wide = k.b.insert(arith.IndexCastOp(k.index(v), i64)).result
    k.store_flat(buf, offset, k.b.insert(arith.BitcastOp(wide, f64)).result)


def load_bits(k: Kernel, buf: Buf, offset: DimV) -> SSAValue:
    """Read back an index kept by `store_bits`."""
    raw = k.load_flat(buf, offset)
    wide = k.b.insert(arith.BitcastOp(raw, IntegerType(64))).result
    return k.b.insert(arith.IndexCastOp(wide, INDEX)).result


def fadd(k: Kernel, a: SSAValue, c: SSAValue) -> SSAValue:
    return k.b.insert(arith.AddfOp(a, c)).result


def fsub(k: Kernel, a: SSAValue, c: SSAValue) -> SSAValue:
    return k.b.insert(arith.SubfOp(a, c)).result


def fmul(k: Kernel, a: SSAValue, c: SSAValue) -> SSAValue:
    return k.b.insert(arith.MulfOp(a, c)).result


def lse(k: Kernel, a: SSAValue, c: SSAValue) -> SSAValue:
    """log(exp(a) + exp(c)) of two f64 values without overflow; -inf when both are -inf.

    libm's exp and log, not the vector kernels: this code is scalar and control-bound, and
    one call is one op where a polynomial kernel is dozens, which compile time pays for.
    """
    hi = k.b.insert(arith.MaximumfOp(a, c)).result
    lo = k.b.insert(arith.MinimumfOp(a, c)).result
    gap = fsub(k, lo, hi)  # <= 0; NaN only when both are -inf (guarded below) or NaN
    one = fconst(k, 1.0, f64)
    tail = k.b.insert(math.LogOp(fadd(k, one, k.b.insert(math.ExpOp(gap)).result))).result
    ninf = fconst(k, NEG_INF, f64)
    return sel(k, fcmp(k, "oeq", hi, ninf), ninf, fadd(k, hi, tail))


def if_values(
    k: Kernel,
    cond: SSAValue,
    then_fn: Callable[[], Sequence[SSAValue]],
    else_fn: Callable[[], Sequence[SSAValue]],
) -> list[SSAValue]:
    """An scf.if whose branches, built by `then_fn` and `else_fn`, yield the results."""
    blocks = (Block(), Block())
    yielded: list[Sequence[SSAValue]] = []
    outer = k.b
    for block, fn in zip(blocks, (then_fn, else_fn), strict=True):
        k.b = Builder(InsertPoint.at_end(block))
        try:
            values = list(fn())
            k.b.insert(scf.YieldOp(*values))
        finally:
            k.b = outer
        yielded.append(values)
    op = k.b.insert(
        scf.IfOp(cond, [v.type for v in yielded[0]], Region(blocks[0]), Region(blocks[1]))
    )
    return list(op.results)


def when(k: Kernel, cond: SSAValue, fn: Callable[[], None]) -> None:
    """Run `fn`'s code only where `cond` holds."""
    k.if_else(cond, fn, lambda: None)
