"""Data movement beyond plain copies: dynamic views, broadcasting and padding.

`aotk.view` regroups dims without moving data (every result dim is a constant times a
product of input dims, so any number of them may be dynamic); `aotk.broadcast_to`
materialises a broadcast, which repeat, tile and nearest-neighbour resizing build on.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, FloatAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import AotkOp, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const

ViewSpec = Sequence[int | Sequence[int]]


@irdl_op_definition
class ViewOp(AotkOp):
    """x's buffer with new dims: dim i is factors[i] times the dims of the axes a with
    sources[a] == i; an axis with source -1 must be static and is folded into the factors."""

    name = "aotk.view"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    factors = prop_def(DenseArrayBase)
    sources = prop_def(DenseArrayBase)
    traits = traits_def(Pure())


@irdl_op_definition
class BroadcastToOp(AotkOp):
    """x broadcast to `shape` of the same rank (-1 keeps x's dim); the result is a copy."""

    name = "aotk.broadcast_to"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    traits = traits_def(Pure())


@irdl_op_definition
class PadOp(AotkOp):
    """x with before[i] and after[i] elements equal to `value` added on each side of axis i."""

    name = "aotk.pad"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    before = prop_def(DenseArrayBase)
    after = prop_def(DenseArrayBase)
    value = prop_def(FloatAttr)
    traits = traits_def(Pure())


def view_attrs(spec: ViewSpec, rank: int) -> dict[str, tuple[int, ...]]:
    """ViewOp attrs from a spec with one entry per result dim: a static size, or a tuple of
    input axes whose sizes multiply; input axes left out must be static."""
    factors: list[int] = []
    sources = [-1] * rank
    for i, entry in enumerate(spec):
        if isinstance(entry, int):
            factors.append(entry)
            continue
        factors.append(1)
        for a in entry:
            sources[a] = i
    return {"factors": tuple(factors), "sources": tuple(sources)}


def infer_view(
    x: Attribute, *, factors: Sequence[int], sources: Sequence[int], **_: Any
) -> Attribute:
    src = shape_of(x)
    if len(sources) != len(src):
        raise ValueError(f"needs one source per axis of {fmt_shape(src)}, got {tuple(sources)}")
    if any(f < 0 for f in factors) or any(not -1 <= s < len(factors) for s in sources):
        raise ValueError(f"bad view factors {tuple(factors)} or sources {tuple(sources)}")
    for a, (d, s) in enumerate(zip(src, sources, strict=True)):
        if d is None and s < 0:
            raise ValueError(f"dynamic axis {a} of {fmt_shape(src)} must map to a result dim")
    out = view_shape(STATIC, [src], factors=factors, sources=sources)
    kept = pymath.prod(d for d, s in zip(src, sources, strict=True) if s >= 0 and d is not None)
    total = pymath.prod(d for d in src if d is not None)
    if total != pymath.prod(factors) * kept:
        raise ValueError(
            f"cannot view {fmt_shape(src)} as {fmt_shape(tuple(out))}: element counts differ"
        )
    return tensor(elem_of(x), out)


def view_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, factors: Sequence[int], sources: Sequence[int]
) -> list[Dim]:
    """Result dim i: factors[i] times the dims of the axes whose source is i."""
    out: list[Dim] = list(factors)
    for axis, s in enumerate(sources):
        if s >= 0:
            out[s] = a.mul(out[s], dims[0][axis])
    return out


def _np_view(x: np.ndarray, *, factors: Sequence[int], sources: Sequence[int]) -> np.ndarray:
    return x.reshape(view_shape(STATIC, [x.shape], factors=factors, sources=sources))


def infer_broadcast_to(x: Attribute, *, shape: Sequence[int], **_: Any) -> Attribute:
    src = shape_of(x)
    if len(shape) != len(src):
        raise ValueError(f"target {tuple(shape)} and {fmt_shape(src)} differ in rank")
    for a, (d, t) in enumerate(zip(src, shape, strict=True)):
        if t < -1:
            raise ValueError(f"target dims must be >= 0 or -1, got {tuple(shape)}")
        if t != -1 and d is not None and d not in (1, t):
            raise ValueError(f"axis {a} of size {d} does not broadcast to {t}")
    return tensor(elem_of(x), broadcast_to_shape(STATIC, [src], shape=shape))


def broadcast_to_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, shape: Sequence[int]
) -> list[Dim]:
    """`shape`, with x's dim where it says -1."""
    return [d if t == -1 else t for d, t in zip(dims[0], shape, strict=True)]


def _lower_broadcast_to(k: Kernel, out: Buf, x: Buf, *, shape: Sequence[int]) -> None:
    with k.nest(out.dims, parallel=True) as ivs:  # each position writes only its own
        idx = [_source(k, iv, d, t) for iv, d, t in zip(ivs, x.dims, shape, strict=True)]
        k.store(out, ivs, k.load(x, idx))


def _source(k: Kernel, iv: DimV, d: DimV, target: int) -> DimV:
    """The index into an axis of size `d` that broadcasts to `target`."""
    if target == -1 or d == target:
        return iv
    if d == 1:
        return 0
    # a dynamic d is 1 or `target` at run time (checked per call): min covers both
    return k.min(iv, k.sub(d, 1))


def _np_broadcast_to(x: np.ndarray, *, shape: Sequence[int]) -> np.ndarray:
    return np.broadcast_to(x, broadcast_to_shape(STATIC, [x.shape], shape=shape)).copy()


def infer_pad(
    x: Attribute, *, before: Sequence[int], after: Sequence[int], value: float, **_: Any
) -> Attribute:
    src = shape_of(x)
    if not len(before) == len(after) == len(src):
        raise ValueError(f"needs one (before, after) pair per axis of {fmt_shape(src)}")
    if any(p < 0 for p in (*before, *after)):
        raise ValueError(f"paddings must be >= 0, got {tuple(zip(before, after, strict=True))}")
    return tensor(elem_of(x), pad_shape(STATIC, [src], before=before, after=after))


def pad_shape(
    a: DimArith,
    dims: Sequence[Sequence[Dim]],
    *,
    before: Sequence[int],
    after: Sequence[int],
    **_: Any,
) -> list[Dim]:
    return [a.add(d, b + c) for d, b, c in zip(dims[0], before, after, strict=True)]


def _lower_pad(
    k: Kernel, out: Buf, x: Buf, *, before: Sequence[int], after: Sequence[int], value: float
) -> None:
    fill = const(k.b, value, compute_type(out.elem))
    with k.loop(k.product(out.dims), parallel=True) as i:
        k.store_flat(out, i, fill)
    with k.nest(x.dims, parallel=True) as ivs:
        k.store(out, [k.add(iv, b) for iv, b in zip(ivs, before, strict=True)], k.load(x, ivs))


def _np_pad(
    x: np.ndarray, *, before: Sequence[int], after: Sequence[int], value: float
) -> np.ndarray:
    if x.ndim == 0:
        return x.copy()
    pads = list(zip(before, after, strict=True))
    return np.pad(x, pads, constant_values=np.asarray(value).astype(x.dtype))


def _grad_view(g: Any, y: Any, x: Any, **_: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.reshape_like(g, x),)


def _grad_broadcast_to(g: Any, y: Any, x: Any, **_: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.sum_to(g, x),)


def _grad_pad(
    g: Any, y: Any, x: Any, *, before: Sequence[int], after: Sequence[int], **_: Any
) -> tuple[Any, ...]:
    """The slice of g the input was padded into."""
    from aotk.dialect import gradlib as lib
    from aotk.dialect.shape import FULL, SliceOp

    stop = tuple(-a if a else FULL for a in after)
    return (lib.emit(SliceOp, g, start=tuple(before), stop=stop, step=(1,) * len(before)),)


register(
    OpDef(
        ir=ViewOp,
        kind=Kind.VIEW,
        infer=infer_view,
        numpy=_np_view,
        lower=None,
        shape=view_shape,
        grad=_grad_view,
    )
)
register(
    OpDef(
        ir=BroadcastToOp,
        kind=Kind.OPAQUE,
        infer=infer_broadcast_to,
        numpy=_np_broadcast_to,
        lower=_lower_broadcast_to,
        shape=broadcast_to_shape,
        grad=_grad_broadcast_to,
    )
)
register(
    OpDef(
        ir=PadOp,
        kind=Kind.OPAQUE,
        infer=infer_pad,
        numpy=_np_pad,
        lower=_lower_pad,
        shape=pad_shape,
        grad=_grad_pad,
    )
)
