"""Counter-based random numbers generated inside compiled code.

`aotk.random_uniform` and `aotk.random_normal` read a `state` operand, the int64 pair
(seed, calls), and add one to `calls` every time they run: they have an effect, so they are
not Pure, and CSE never merges two of them. Samples come from Philox-4x32-10 with key = seed
and counter = (block index, calls); block i holds elements [i*m, (i+1)*m) (m = 4, or 2 for
float64), so the numbers depend on the state and the element index only: not on loop
order, threads or the process. Truncated normals re-draw each value beyond two standard
deviations from block (attempt * blocks + i), attempt = 1, 2, ... as TF does.

Result dims come from `shape`, except where `like_axes[i] >= 0`: that dim of the optional
`like` operand, read at run time. The NumPy oracle is `aotk.dialect.random_numpy`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def
from xdsl.rewriter import InsertPoint

from aotk import dtypes
from aotk.dialect import random_numpy
from aotk.dialect.base import (
    AotkOp,
    ElementTypeAttr,
    dtype_of,
    elem_of,
    fmt_shape,
    shape_of,
    tensor,
)
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import philox
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type

FLOATS = ("float16", "float32", "float64")
MAX_REDRAWS = random_numpy.MAX_REDRAWS


class RandomOpBase(AotkOp):
    """Random samples of `dtype`; reads and advances the (seed, calls) `state`."""

    state = operand_def(TensorType)
    like = var_operand_def(TensorType)
    result = result_def(TensorType)
    dtype = prop_def(ElementTypeAttr)
    shape = prop_def(DenseArrayBase)
    like_axes = prop_def(DenseArrayBase)


@irdl_op_definition
class RandomUniformOp(RandomOpBase):
    """Uniform samples in [minval, maxval): units on a grid of 2**-10, 2**-23 or 2**-52, scaled."""

    name = "aotk.random_uniform"
    minval = prop_def(FloatAttr)
    maxval = prop_def(FloatAttr)


@irdl_op_definition
class RandomNormalOp(RandomOpBase):
    """Normal samples (Box-Muller); `truncated` re-draws those beyond 2 stddev."""

    name = "aotk.random_normal"
    mean = prop_def(FloatAttr)
    stddev = prop_def(FloatAttr)
    truncated = prop_def(IntegerAttr)


def infer_random(
    state: Attribute,
    *like: Attribute,
    dtype: str,
    shape: Sequence[int],
    like_axes: Sequence[int],
    **_: Any,
) -> Attribute:
    """Check the state, the dims and the like operand; return the result type."""
    if shape_of(state) != (2,) or elem_of(state) != i64:
        raise TypeError(f"state must be a tensor<2xi64> (seed, calls), got {state}")
    if dtype not in FLOATS:
        raise TypeError(f"dtype must be one of {', '.join(FLOATS)}, got {dtype!r}")
    if len(shape) != len(like_axes):
        raise ValueError(f"shape {tuple(shape)} and like_axes {tuple(like_axes)} differ in rank")
    if len(like) > 1 or (like and all(a < 0 for a in like_axes)):
        raise ValueError("expected one like operand exactly when like_axes uses it")
    if any(d < 0 for d, axis in zip(shape, like_axes, strict=True) if axis < 0):
        raise ValueError(f"dims must be >= 0, got shape {tuple(shape)}")
    if any(axis >= 0 for axis in like_axes) and not like:
        raise ValueError(f"like_axes {tuple(like_axes)} needs a like operand")
    operands = [shape_of(t) for t in (state, *like)]
    for axis in like_axes:
        if axis >= len(operands[-1]):
            raise ValueError(
                f"like axis {axis} is out of range for shape {fmt_shape(operands[-1])}"
            )
    out = random_shape(STATIC, operands, shape=shape, like_axes=like_axes)
    return tensor(dtypes.element_type(dtype), out)


def infer_uniform(state: Attribute, *like: Attribute, **attrs: Any) -> Attribute:
    result = infer_random(state, *like, **attrs)
    random_numpy.uniform_bounds(dtype_of(result), attrs["minval"], attrs["maxval"])
    return result


def infer_normal(state: Attribute, *like: Attribute, **attrs: Any) -> Attribute:
    return infer_random(state, *like, **attrs)


def random_shape(
    a: DimArith,
    dims: Sequence[Sequence[Dim]],
    *,
    shape: Sequence[int],
    like_axes: Sequence[int],
    **_: Any,
) -> list[Dim]:
    """`shape`, except dim i is the like operand's dim like_axes[i] where that is >= 0."""
    return [dims[1][axis] if axis >= 0 else d for d, axis in zip(shape, like_axes, strict=True)]


class _Sampler:
    """Reads and advances the state once, then draws the raw sample of any element.

    Element i takes word i % m of Philox block i // m, so one element costs one Philox
    call; a loop over elements has one copy of the code and stores contiguously.
    """

    def __init__(self, k: Kernel, out: Buf, state: Buf, dtype: str, normal: bool) -> None:
        b = k.b
        seed, calls = k.load_flat(state, 0), k.load_flat(state, 1)
        k.store_flat(state, 1, _ins(b, arith.AddiOp(calls, philox.const_int(b, 1, i64))))
        self.k, self.out, self.dtype, self.normal = k, out, dtype, normal
        self.key, self.calls = philox.split64(b, seed), philox.split64(b, calls)
        self.m = random_numpy.per_block(dtype)
        self.ct = compute_type(out.elem)

    def draw(self, i: SSAValue, block_offset: DimV = 0) -> SSAValue:
        """Element i's uniform in [0, 1) or standard normal, from block i // m + offset."""
        k, b = self.k, self.k.b
        block = k.div(i, self.m)
        j = k.sub(i, k.mul(block, self.m))
        index = _ins(b, arith.IndexCastOp(k.index(k.add(block, block_offset)), i64))
        w = philox.philox(b, [*philox.split64(b, index), *self.calls], self.key)
        if self.dtype == "float64":
            first = _eq(k, j, 0)
            if not self.normal:
                return philox.unit_f64(b, _sel(b, first, w[0], w[2]), _sel(b, first, w[1], w[3]))
            cos_z, sin_z = philox.box_muller(
                b, philox.unit_f64(b, w[0], w[1]), philox.unit_f64(b, w[2], w[3])
            )
            return _sel(b, first, cos_z, sin_z)
        if not self.normal:
            return philox.unit_f32(b, _pick(k, w, j), 10 if self.dtype == "float16" else 23)
        second = _ins(b, arith.CmpiOp(k.index(j), k.index(2), "uge"))
        u1 = philox.unit_f32(b, _sel(b, second, w[2], w[0]))
        u2 = philox.unit_f32(b, _sel(b, second, w[3], w[1]))
        cos_z, sin_z = philox.box_muller(b, u1, u2)
        return _sel(b, _odd(k, j), sin_z, cos_z)


def _ins(b: Builder, op: Any) -> SSAValue:
    return b.insert(op).results[0]


def _sel(b: Builder, cond: SSAValue, x: SSAValue, y: SSAValue) -> SSAValue:
    return _ins(b, arith.SelectOp(cond, x, y))


def _eq(k: Kernel, j: DimV, value: int) -> SSAValue:
    return _ins(k.b, arith.CmpiOp(k.index(j), k.index(value), "eq"))


def _odd(k: Kernel, j: DimV) -> SSAValue:
    return _eq(k, k.sub(j, k.mul(k.div(j, 2), 2)), 1)


def _pick(k: Kernel, values: list[SSAValue], j: DimV) -> SSAValue:
    """values[j] for an index j < len(values), without a branch."""
    out = values[0]
    for idx in range(1, len(values)):
        out = _sel(k.b, _eq(k, j, idx), values[idx], out)
    return out


def _f(b: Builder, value: float, typ: Attribute) -> SSAValue:
    return philox.const_float(b, value, typ)


def _lower_uniform(
    k: Kernel, out: Buf, state: Buf, *like: Buf, dtype: str, minval: float, maxval: float, **_: Any
) -> None:
    sampler = _Sampler(k, out, state, dtype, normal=False)
    ct = sampler.ct
    lo = float(random_numpy.compute_dtype(dtype)(minval))
    scale = random_numpy.uniform_scale(dtype, minval, maxval)
    low, high = random_numpy.uniform_bounds(dtype, minval, maxval)
    with k.loop(k.product(out.dims)) as i:
        b = k.b
        v = _ins(
            b, arith.AddfOp(_f(b, lo, ct), _ins(b, arith.MulfOp(_f(b, scale, ct), sampler.draw(i))))
        )
        # rounding may step outside [minval, maxval); clamp to the dtype's values inside
        v = _sel(b, _ins(b, arith.CmpfOp(v, _f(b, low, ct), "olt")), _f(b, low, ct), v)
        v = _sel(b, _ins(b, arith.CmpfOp(v, _f(b, high, ct), "ogt")), _f(b, high, ct), v)
        k.store_flat(out, i, v)


def _lower_normal(
    k: Kernel,
    out: Buf,
    state: Buf,
    *like: Buf,
    dtype: str,
    mean: float,
    stddev: float,
    truncated: bool,
    **_: Any,
) -> None:
    sampler = _Sampler(k, out, state, dtype, normal=True)
    ct = sampler.ct

    def finish(z: SSAValue) -> SSAValue:
        b = k.b
        return _ins(b, arith.AddfOp(_f(b, mean, ct), _ins(b, arith.MulfOp(_f(b, stddev, ct), z))))

    n = k.product(out.dims)
    with k.loop(n) as i:
        z = sampler.draw(i)
        if truncated:
            # rejected values are marked NaN and re-drawn below, off the vectorized path
            z = _sel(k.b, _accept(k.b, z), z, _f(k.b, float("nan"), ct))
        k.store_flat(out, i, finish(z))
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
    two = _f(b, random_numpy.TRUNCATE, z.type)
    return _ins(b, arith.CmpfOp(_ins(b, math.AbsFOp(z)), two, "olt"))


def _redraw(s: _Sampler, i: SSAValue, blocks: DimV) -> SSAValue:
    """Element i's first accepted normal over attempts 1, 2, ... (block attempt*blocks + i//m)."""
    k = s.k
    zero, false = _f(k.b, 0.0, s.ct), _ins(k.b, arith.ConstantOp(IntegerAttr(0, i1)))

    def attempt(a: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        z, done = carried

        def draw() -> list[SSAValue]:
            zj = s.draw(i, k.mul(a, blocks))
            return [zj, _accept(k.b, zj)]

        return _if_values(k, done, [s.ct, i1], lambda: [z, done], draw)

    z, done = k.fold_loop(MAX_REDRAWS + 1, [zero, false], attempt, lb=1)
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


def _no_dependence(g: Any, y: Any, *xs: Any, **_: Any) -> tuple[None, ...]:
    """Samples do not depend on the values of the state or the like operand."""
    return (None,) * len(xs)


register(
    OpDef(
        ir=RandomUniformOp,
        kind=Kind.OPAQUE,
        infer=infer_uniform,
        numpy=random_numpy.uniform,
        lower=_lower_uniform,
        grad=_no_dependence,
        shape=random_shape,
    )
)
register(
    OpDef(
        ir=RandomNormalOp,
        kind=Kind.OPAQUE,
        infer=infer_normal,
        numpy=random_numpy.normal,
        lower=_lower_normal,
        grad=_no_dependence,
        shape=random_shape,
    )
)

__all__ = ["RandomNormalOp", "RandomOpBase", "RandomUniformOp"]
