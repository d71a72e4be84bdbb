"""Indexing primitives: `aotk.gather` (take along an axis) and `aotk.iota` (a range).

Out-of-range policy of gather, checked per index at run time so no kernel ever reads out
of bounds: an index i of an axis of size n in [-n, 0) counts from the end, as in NumPy;
one outside [-n, n) selects zeros (False for bool).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    IntegerType,
    TensorType,
    f64,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
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
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import INDEX, Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const, convert

I64 = IntegerType(64)


@irdl_op_definition
class GatherOp(AotkOp):
    """Slices of x along `axis` picked by integer `indices`; the first `batch_dims` axes of
    x and indices are shared. Result: x[:axis] + indices[batch_dims:] + x[axis + 1:]."""

    name = "aotk.gather"
    x = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    batch_dims = prop_def(IntegerAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class IotaOp(AotkOp):
    """The vector start + i * step for i in [0, size), in `dtype`."""

    name = "aotk.iota"
    result = result_def(TensorType)
    start = prop_def(FloatAttr)
    step = prop_def(FloatAttr)
    size = prop_def(IntegerAttr)
    dtype = prop_def(ElementTypeAttr)
    traits = traits_def(Pure())


def _compatible(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


def infer_gather(
    x: Attribute, indices: Attribute, *, axis: int, batch_dims: int, **_: Any
) -> Attribute:
    xs, ids = shape_of(x), shape_of(indices)
    if not dtypes.is_int(elem_of(indices)):
        raise TypeError(f"indices must be integers, got {dtype_of(indices)}")
    if not 0 <= axis < len(xs):
        raise ValueError(f"axis {axis} is out of range for x of shape {fmt_shape(xs)}")
    if not 0 <= batch_dims <= min(axis, len(ids)):
        raise ValueError(
            f"batch_dims {batch_dims} must be in [0, {min(axis, len(ids))}] for axis {axis} "
            f"and indices of shape {fmt_shape(ids)}"
        )
    for a in range(batch_dims):
        if not _compatible(xs[a], ids[a]):
            raise ValueError(f"batch axis {a} differs: x {fmt_shape(xs)}, indices {fmt_shape(ids)}")
    return tensor(elem_of(x), gather_shape(STATIC, [xs, ids], axis=axis, batch_dims=batch_dims))


def gather_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, axis: int, batch_dims: int
) -> list[Dim]:
    """x[:axis] + indices[batch_dims:] + x[axis + 1:]; a batch dim from whichever operand
    knows it (they agree at run time)."""
    xs, ids = dims
    out = [*xs[:axis], *ids[batch_dims:], *xs[axis + 1 :]]
    for i in range(batch_dims):
        out[i] = xs[i] if isinstance(xs[i], int) else ids[i]
    return out


def each_pick(
    k: Kernel,
    x_dims: Sequence[DimV],
    ids: Buf,
    *,
    axis: int,
    batch_dims: int,
    body: Callable[[DimV, DimV, SSAValue], None],
    parallel: bool = False,
    owned: tuple[DimV, DimV] | None = None,
) -> None:
    """For every index: body(offset of the picked slice in x, offset of its copy in the
    gather's result, whether the index is in range). Slices are rows of prod(x_dims[axis +
    1:]) elements. `parallel`: threads may split the indices (a body writing only its
    copy; not one adding into x, where indices repeat). `owned`: a range [lo, hi) within
    [0, x_dims[axis]); an index outside it counts as out of range."""
    n_idx = ids.rank - batch_dims
    out_dims = [*x_dims[:axis], *ids.dims[batch_dims:], *x_dims[axis + 1 :]]
    out_strides = k.strides(out_dims)
    x_strides = k.strides(x_dims)
    with k.nest([*x_dims[:axis], *ids.dims[batch_dims:]], parallel=parallel) as ivs:
        pre, picked = ivs[:axis], ivs[axis:]
        raw = convert(k.b, k.load(ids, [*pre[:batch_dims], *picked]), ids.elem, I64)
        src, ok = _wrap(k, k.b.insert(arith.IndexCastOp(raw, INDEX)).result, x_dims[axis])
        if owned is not None:
            # [lo, hi) lies in [0, n), so this subsumes the bounds check; unsigned: a
            # src below lo wraps to huge
            lo, hi = owned
            ok = k.compare("ult", k.sub(src, lo), k.sub(hi, lo))
        dst = k.linear(ivs, out_strides[: axis + n_idx])
        base = k.add(k.linear(pre, x_strides[:axis]), k.mul(src, x_strides[axis]))
        body(base, dst, ok)


def _lower_gather(k: Kernel, out: Buf, x: Buf, ids: Buf, *, axis: int, batch_dims: int) -> None:
    row = k.product(x.dims[axis + 1 :])

    def pick(base: DimV, dst: DimV, ok: SSAValue) -> None:
        def copy() -> None:
            with k.loop(row) as j:
                k.store_flat(out, k.add(dst, j), k.load_flat(x, k.add(base, j)))

        def zero() -> None:
            with k.loop(row) as j:
                k.store_flat(out, k.add(dst, j), const(k.b, 0, compute_type(out.elem)))

        k.if_else(ok, copy, zero)

    each_pick(k, x.dims, ids, axis=axis, batch_dims=batch_dims, body=pick, parallel=True)


def _wrap(k: Kernel, i: SSAValue, n: DimV) -> tuple[SSAValue, SSAValue]:
    """(i + n if i < 0 else i, whether that is in [0, n)) on index values."""
    size = k.index(n)
    zero = k.index(0)
    negative = k.b.insert(arith.CmpiOp(i, zero, "slt")).result
    shifted = k.b.insert(arith.AddiOp(i, size)).result
    src = k.b.insert(arith.SelectOp(negative, shifted, i)).result
    # unsigned: a still-negative index is huge, so one compare checks both bounds
    ok = k.b.insert(arith.CmpiOp(src, size, "ult")).result
    return src, ok


def wrap_indices(ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """NumPy-style negative indices made positive (0 where out of range), and which are
    in range."""
    i = ids.astype(np.int64)
    src = np.where(i < 0, i + n, i)
    ok = (src >= 0) & (src < n)
    return np.where(ok, src, 0), ok


def _np_gather(x: np.ndarray, ids: np.ndarray, *, axis: int, batch_dims: int) -> np.ndarray:
    n = x.shape[axis]
    src, ok = wrap_indices(ids, n)
    a = axis - batch_dims
    out = np.zeros((*x.shape[:axis], *ids.shape[batch_dims:], *x.shape[axis + 1 :]), dtype=x.dtype)
    for b in np.ndindex(*x.shape[:batch_dims]):
        if n == 0:
            continue  # every index is out of range: zeros
        taken = np.take(x[b], src[b], axis=a)
        mask = ok[b].reshape((1,) * a + ok[b].shape + (1,) * (x.ndim - axis - 1))
        out[b] = np.where(mask, taken, np.zeros((), x.dtype))
    return out


def infer_iota(*, start: float, step: float, size: int, dtype: str, **_: Any) -> Attribute:
    elem = dtypes.element_type(dtype)
    if dtypes.is_bool(elem):
        raise TypeError("dtype bool: a range needs a number dtype")
    if size < 0:
        raise ValueError(f"size must be >= 0, got {size}")
    return tensor(elem, iota_shape(STATIC, [], size=size))


def iota_shape(a: DimArith, dims: Sequence[Sequence[Dim]], *, size: int, **_: Any) -> list[Dim]:
    return [size]


def _integral(*values: float) -> bool:
    return all(float(v).is_integer() for v in values)


def _lower_iota(k: Kernel, out: Buf, *, start: float, step: float, size: int, dtype: str) -> None:
    # integral ranges are computed exactly in int64, others in float64, then converted
    src = I64 if _integral(start, step) else f64
    first, delta = (const(k.b, int(v) if src is I64 else v, src) for v in (start, step))
    with k.loop(size) as i:
        if src is I64:
            n = k.b.insert(arith.IndexCastOp(i, I64)).result
            prod = k.b.insert(arith.MuliOp(n, delta)).result
            value = k.b.insert(arith.AddiOp(first, prod)).result
        else:
            n = k.b.insert(arith.IndexCastOp(i, I64)).result
            nf = k.b.insert(arith.SIToFPOp(n, f64)).result
            prod = k.b.insert(arith.MulfOp(nf, delta)).result
            value = k.b.insert(arith.AddfOp(first, prod)).result
        k.store_flat(out, i, convert(k.b, value, src, out.elem))


def _np_iota(*, start: float, step: float, size: int, dtype: str) -> np.ndarray:
    if _integral(start, step):
        return (int(start) + np.arange(size, dtype=np.int64) * int(step)).astype(dtype)
    with np.errstate(invalid="ignore"):
        return (start + np.arange(size, dtype=np.float64) * step).astype(dtype)


def _grad_gather(
    g: Any, y: Any, x: Any, indices: Any, *, axis: int, batch_dims: int
) -> tuple[Any, ...]:
    """Slices of x that gather picked get back the sum of their cotangents (a scatter-add)."""
    from aotk.dialect import gradlib as lib
    from aotk.dialect.gather_grad import GatherGradOp

    return lib.emit(GatherGradOp, g, indices, x, axis=axis, batch_dims=batch_dims), None


register(
    OpDef(
        ir=GatherOp,
        kind=Kind.OPAQUE,
        infer=infer_gather,
        numpy=_np_gather,
        lower=_lower_gather,
        shape=gather_shape,
        grad=_grad_gather,
    )
)
register(
    OpDef(
        ir=IotaOp,
        kind=Kind.OPAQUE,
        infer=infer_iota,
        numpy=_np_iota,
        lower=_lower_iota,
        shape=iota_shape,
        grad=None,
    )
)
