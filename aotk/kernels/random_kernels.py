"""Random samples as micro-kernels: `random_uniform_<dtype>` and
`random_[truncated_]normal_<dtype>`, one per sampled dtype, built once per machine.

`aotk.random_uniform` and `aotk.random_normal` lower to one call each, passing the output,
the (seed, calls) state (read, and `calls` advanced, by the kernel), the element count
and their float attributes as the bits of a float64 (`float_bits`). Philox's 10 rounds
written out over a vectorized loop of blocks are a few hundred ops: built into every
graph that samples, they cost about half a second of its compile, here once.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    Float64Type,
    IntegerAttr,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from aotk import dtypes
from aotk.kernels import library, philox
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type

FLOATS = ("float16", "float32", "float64")
UNIFORM_ARGS = ("out", "state", "n", "lo", "scale", "low", "high")
NORMAL_ARGS = ("out", "state", "n", "mean", "stddev")


def uniform_name(dtype: str) -> str:
    return f"random_uniform_{dtype}"


def normal_name(dtype: str, truncated: bool) -> str:
    return f"random_{'truncated_' if truncated else ''}normal_{dtype}"


def float_bits(value: float) -> int:
    """A float64's bits as a signed i64, for a micro-kernel's integer parameter."""
    return struct.unpack("<q", struct.pack("<d", value))[0]


def _float_arg(k: Kernel, arg: SSAValue, ct: Attribute) -> SSAValue:
    """The float a parameter carries as float64 bits, in the compute type."""
    as_i64 = _ins(k.b, arith.IndexCastOp(arg, i64))
    wide = _ins(k.b, arith.BitcastOp(as_i64, Float64Type()))
    return wide if ct == Float64Type() else _ins(k.b, arith.TruncFOp(wide, ct))


def _bufs(k: Kernel, args: list[SSAValue], dtype: str) -> tuple[Buf, Buf, DimV]:
    """(out, state, n) of a random micro-kernel's first three parameters."""
    elem = dtypes.element_type(dtype)
    out = library.param_buf(k, args[0], (args[2],), elem)
    state = library.param_buf(k, args[1], (2,), i64)
    return out, state, args[2]


class Sampler:
    """Reads and advances the state once, then draws the raw sample of any element.

    Element i takes word i % m of Philox block i // m: one Philox call gives m elements
    (`block`), and threads split the blocks (`each`).
    """

    def __init__(self, k: Kernel, out: Buf, state: Buf, dtype: str, normal: bool) -> None:
        b = k.b
        seed, calls = k.load_flat(state, 0), k.load_flat(state, 1)
        k.store_flat(state, 1, _ins(b, arith.AddiOp(calls, philox.const_int(b, 1, i64))))
        self.k, self.dtype, self.normal = k, dtype, normal
        self.key, self.calls = philox.split64(b, seed), philox.split64(b, calls)
        self.m = philox.per_block(dtype)
        self.ct = compute_type(out.elem)

    def block(self, block: DimV, offset: DimV = 0, unrolled: bool = False) -> list[SSAValue]:
        """The m uniforms in [0, 1) or standard normals of `block` + offset, in order."""
        b = self.k.b
        index = _ins(b, arith.IndexCastOp(self.k.index(self.k.add(block, offset)), i64))
        w = philox.philox(b, [*philox.split64(b, index), *self.calls], self.key, unrolled)
        if self.dtype == "float64":
            units = [philox.unit_f64(b, w[0], w[1]), philox.unit_f64(b, w[2], w[3])]
            return list(philox.box_muller(b, *units)) if self.normal else units
        if not self.normal:
            return [philox.unit_f32(b, word, 10 if self.dtype == "float16" else 23) for word in w]
        units = [philox.unit_f32(b, word) for word in w]
        return [
            *philox.box_muller(b, units[0], units[1]),
            *philox.box_muller(b, units[2], units[3]),
        ]

    def draw(self, i: SSAValue, block_offset: DimV = 0) -> SSAValue:
        """Element i's uniform in [0, 1) or standard normal, from block i // m + offset."""
        k = self.k
        block = k.div(i, self.m)
        return _pick(k, self.block(block, block_offset), k.sub(i, k.mul(block, self.m)))

    def each(self, n: DimV, store: Callable[[DimV, SSAValue], None]) -> None:
        """store(i, sample i) for i < n: a parallel loop over whole blocks, each Philox
        call giving m consecutive samples, then the last block's few."""
        k = self.k
        whole = k.div(n, self.m)
        with k.loop(whole, parallel=True) as block:
            first = k.mul(block, self.m)
            for j, sample in enumerate(self.block(block, unrolled=True)):
                store(k.add(first, j), sample)
        with k.loop(n, lb=k.mul(whole, self.m), trips=self.m - 1) as i:
            store(i, self.draw(i))


def _ins(b: Builder, op: Any) -> SSAValue:
    return b.insert(op).results[0]


def _sel(b: Builder, cond: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    return _ins(b, arith.SelectOp(cond, x, y))


def _eq(k: Kernel, j: DimV, value: int) -> SSAValue:
    return _ins(k.b, arith.CmpiOp(k.index(j), k.index(value), "eq"))


def _pick(k: Kernel, values: list[SSAValue], j: DimV) -> SSAValue:
    """values[j] for an index j < len(values), without a branch."""
    out = values[0]
    for idx in range(1, len(values)):
        out = _sel(k.b, _eq(k, j, idx), values[idx], out)
    return out


def _f(b: Builder, value: float, typ: Attribute) -> SSAValue:
    return philox.const_float(b, value, typ)


def _build_uniform(dtype: str, k: Kernel, args: list[SSAValue]) -> None:
    """out[i] = lo + scale * unit_i, clamped to [low, high]."""
    out, state, n = _bufs(k, args, dtype)
    sampler = Sampler(k, out, state, dtype, normal=False)
    ct = sampler.ct
    lo, scale, low, high = (_float_arg(k, a, ct) for a in args[3:7])

    def store(i: DimV, unit: SSAValue) -> None:
        b = k.b
        v = _ins(b, arith.AddfOp(lo, _ins(b, arith.MulfOp(scale, unit))))
        # rounding may step outside [minval, maxval); clamp to the dtype's values inside
        v = _sel(b, _ins(b, arith.CmpfOp(v, low, "olt")), low, v)
        v = _sel(b, _ins(b, arith.CmpfOp(v, high, "ogt")), high, v)
        k.store_flat(out, i, v)

    sampler.each(n, store)


def _build_normal(dtype: str, truncated: bool, k: Kernel, args: list[SSAValue]) -> None:
    """out[i] = mean + stddev * z_i; truncated, each |z| >= 2 drawn again."""
    out, state, n = _bufs(k, args, dtype)
    sampler = Sampler(k, out, state, dtype, normal=True)
    ct = sampler.ct
    mean, stddev = (_float_arg(k, a, ct) for a in args[3:5])

    def finish(z: SSAValue) -> SSAValue:
        return _ins(k.b, arith.AddfOp(mean, _ins(k.b, arith.MulfOp(stddev, z))))

    def store(i: DimV, z: SSAValue) -> None:
        if truncated:
            # rejected values are marked NaN and re-drawn below, off the vectorized path
            z = _sel(k.b, _accept(k.b, z), z, _f(k.b, float("nan"), ct))
        k.store_flat(out, i, finish(z))

    sampler.each(n, store)
    if not truncated:
        return
    blocks = k.div(k.add(n, sampler.m - 1), sampler.m)
    with k.loop(n) as i:
        v = k.load_flat(out, i)
        rejected = _ins(k.b, arith.CmpfOp(v, v, "uno"))
        k.if_else(
            rejected,
            lambda: k.store_flat(out, i, finish(_redraw(sampler, i, blocks))),
            lambda: None,
        )


def _accept(b: Builder, z: SSAValue) -> SSAValue:
    """|z| < 2, the truncated normal's acceptance test."""
    two = _f(b, philox.TRUNCATE, z.type)
    return _ins(b, arith.CmpfOp(_ins(b, math.AbsFOp(z)), two, "olt"))


def _redraw(s: Sampler, i: SSAValue, blocks: DimV) -> SSAValue:
    """Element i's first accepted normal over attempts 1, 2, ... (block attempt*blocks + i//m)."""
    k = s.k
    zero, false = _f(k.b, 0.0, s.ct), _ins(k.b, arith.ConstantOp(IntegerAttr(0, i1)))

    def attempt(a: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        z, done = carried

        def draw() -> list[SSAValue]:
            zj = s.draw(i, k.mul(a, blocks))
            return [zj, _accept(k.b, zj)]

        return _if_values(k, done, [s.ct, i1], lambda: [z, done], draw)

    z, done = k.fold_loop(philox.MAX_REDRAWS + 1, [zero, false], attempt, lb=1)
    # never taken in practice: all MAX_REDRAWS + 1 attempts fail with chance 0.0455**32
    return _sel(k.b, done, z, zero)


def _if_values(
    k: Kernel,
    cond: SSAValue,
    types: list[Attribute],
    then_fn: Callable[[], list[SSAValue]],
    else_fn: Callable[[], list[SSAValue]],
) -> list[SSAValue]:
    """An scf.if yielding values, its branches built by `then_fn` and `else_fn`."""
    blocks = (Block(), Block())
    op = k.b.insert(scf.IfOp(cond, types, Region(blocks[0]), Region(blocks[1])))
    outer = k.b
    for block, fn in zip(blocks, (then_fn, else_fn), strict=True):
        k.b = Builder(InsertPoint.at_end(block))
        try:
            k.b.insert(scf.YieldOp(*fn()))
        finally:
            k.b = outer
    return list(op.results)


for _dtype in FLOATS:
    library.register(
        library.MicroKernel(
            uniform_name(_dtype),
            "ppiiiii",
            functools.partial(_build_uniform, _dtype),
            UNIFORM_ARGS,
        )
    )
    for _truncated in (False, True):
        library.register(
            library.MicroKernel(
                normal_name(_dtype, _truncated),
                "ppiii",
                functools.partial(_build_normal, _dtype, _truncated),
                NORMAL_ARGS,
            )
        )
