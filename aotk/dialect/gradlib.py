"""Trace-level helpers that gradient rules build the backward graph with.

Rules receive and return `KTensor`s; everything here emits ordinary aotk primitives, so
the backward graph is fused, lowered and checked like any other. The op modules import it
inside their rules: it imports them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import linalg, trace
from aotk.dialect import reduce as rd
from aotk.dialect import shape as sh
from aotk.dialect import unary as un
from aotk.dialect.trace import KTensor

WHERE = "K.gradients"


def emit(op: Any, *xs: KTensor, **attrs: Any) -> KTensor:
    return trace.emit(op, *xs, where=WHERE, **attrs)


def const(value: float, like: KTensor) -> KTensor:
    return emit(ew.ConstantOp, value=float(value), dtype=like.dtype)


def add(a: KTensor, b: KTensor) -> KTensor:
    return emit(ar.AddOp, a, b)


def sub(a: KTensor, b: KTensor) -> KTensor:
    return emit(ar.SubOp, a, b)


def mul(a: KTensor, b: KTensor) -> KTensor:
    return emit(ar.MulOp, a, b)


def div(a: KTensor, b: KTensor) -> KTensor:
    return emit(ar.DivOp, a, b)


def neg(a: KTensor) -> KTensor:
    return emit(un.NegOp, a)


def select(cond: KTensor, a: KTensor, b: KTensor) -> KTensor:
    return emit(cmp.SelectOp, cond, a, b)


def accumulate(grads: dict[SSAValue, KTensor], v: SSAValue, c: KTensor) -> None:
    """Add cotangent `c` into `grads[v]` (float values only: the others have none)."""
    if not dtypes.is_float(dtypes.element_type(KTensor(v).dtype)):
        return
    grads[v] = c if v not in grads else add(grads[v], c)


def zeros_like(x: KTensor) -> KTensor:
    return emit(ew.FillLikeOp, x, value=0.0, dtype=x.dtype)


def cast(x: KTensor, dtype: str) -> KTensor:
    return x if x.dtype == dtype else emit(ew.CastOp, x, dtype=dtype)


def reshape(x: KTensor, shape: Sequence[int | None]) -> KTensor:
    """Reshape to `shape`; a None dim becomes -1, so at most one may be unknown."""
    dims = tuple(-1 if d is None else d for d in shape)
    if dims == tuple(-1 if d is None else d for d in x.shape):
        return x
    if sum(1 for d in dims if d == -1) > 1:
        raise ValueError(
            f"{WHERE}: cannot reshape {x.shape} to {tuple(shape)} with two unknown dims"
        )
    return emit(sh.ReshapeOp, x, shape=dims)


def transpose(x: KTensor, perm: Sequence[int], reverse: Sequence[int] = ()) -> KTensor:
    """x transposed by `perm`, read back to front along the axes `reverse` (if any)."""
    return emit(sh.TransposeOp, x, perm=tuple(perm), reverse=tuple(reverse) or None)


def matmul(a: KTensor, b: KTensor) -> KTensor:
    return emit(linalg.MatMulOp, a, b)


def reduce_sum(x: KTensor, axes: Sequence[int], keepdims: bool) -> KTensor:
    if not axes:
        return x
    return emit(rd.ReduceSumOp, x, axes=tuple(sorted(axes)), keepdims=keepdims)


def reshape_like(g: KTensor, like: KTensor) -> KTensor:
    """g's elements with like's dims (read at run time)."""
    from aotk.dialect.views import ReshapeLikeOp

    return g if g.type == like.type else emit(ReshapeLikeOp, g, like)


def merge_leading(x: KTensor) -> KTensor:
    """[..., K] -> [prod(...), K] without moving data."""
    from aotk.dialect.data import ViewOp, view_attrs

    if x.ndim == 2:
        return x
    spec = [tuple(range(x.ndim - 1)), (x.ndim - 1,)]
    return emit(ViewOp, x, **view_attrs(spec, x.ndim))


def sum_to(g: KTensor, x: KTensor) -> KTensor:
    """Undo NumPy broadcasting: sum `g` down to x's shape. Where x's dim is unknown (None)
    and g's is not 1, x is taken not to have been broadcast, which `aotk.same_shape`
    checks at the call."""
    from aotk.dialect.identity import SameShapeOp

    lead = g.ndim - x.ndim
    ones = [lead + i for i, d in enumerate(x.shape) if d == 1 and g.shape[lead + i] != 1]
    g = reduce_sum(reduce_sum(g, ones, keepdims=True), list(range(lead)), keepdims=False)
    if any(d is None and e != 1 for d, e in zip(x.shape, g.shape, strict=True)):
        return emit(SameShapeOp, g, x)
    return g


def broadcast_back(g: KTensor, x: KTensor, axes: Sequence[int], keepdims: bool) -> KTensor:
    """Spread a reduction's cotangent `g` over the reduced `axes` of `x`."""
    from aotk.dialect.views import ExpandDimsOp

    if not keepdims and axes:
        g = emit(ExpandDimsOp, g, axes=tuple(sorted(axes)))
    return add(g, zeros_like(x))
