"""`aotk.sparse_to_dense`: scatter a sparse tensor's values into a dense one.

Operands: `indices` (int64 [nnz, rank]), `values` ([nnz]) and `dense_like`, an empty tensor
of shape dense_shape + (0,) whose dims carry the dense shape, dynamic ones too, at run
time. The result starts at zero and each value is added at its index (so duplicates sum,
as scipy's toarray does; bools are or-ed); indices outside the dense shape are skipped.

`aotk.sparse_gather` reads a dense tensor at such indices (zero outside it). The two are
each other's adjoint: since duplicates sum, every value's cotangent is the dense cotangent
at its own index.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.dialect.shape import FULL
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const


@irdl_op_definition
class SparseToDenseOp(AotkOp):
    """Zeros of dense_like's shape without its last axis, plus `values` at `indices`."""

    name = "aotk.sparse_to_dense"
    indices = operand_def(TensorType)
    values = operand_def(TensorType)
    dense_like = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class SparseGatherOp(AotkOp):
    """The (nnz,) elements of `dense` at int64 `indices` (nnz, rank); zero outside it."""

    name = "aotk.sparse_gather"
    indices = operand_def(TensorType)
    dense = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _check_indices(indices: Attribute, rank: int) -> int | None:
    """The nnz of (nnz, rank) int64 indices."""
    idx = shape_of(indices)
    if dtype_of(indices) != "int64" or len(idx) != 2:
        raise TypeError(f"indices must be int64 of shape (nnz, rank), got {indices}")
    if idx[1] is not None and idx[1] != rank:
        raise ValueError(f"indices {fmt_shape(idx)} give {idx[1]} coordinates for rank {rank}")
    return idx[0]


def _infer(indices: Attribute, values: Attribute, dense_like: Attribute, **_: Any) -> Attribute:
    vals, like = shape_of(values), shape_of(dense_like)
    if len(vals) != 1:
        raise ValueError(f"values must have rank 1, got shape {fmt_shape(vals)}")
    if not like or like[-1] != 0:
        raise ValueError(f"dense_like must have a last dim of 0, got shape {fmt_shape(like)}")
    nnz = _check_indices(indices, len(like) - 1)
    if None not in (nnz, vals[0]) and nnz != vals[0]:
        raise ValueError(f"{nnz} indices but {vals[0]} values")
    return tensor(elem_of(values), sparse_to_dense_shape(STATIC, [shape_of(indices), vals, like]))


def sparse_to_dense_shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    """dense_like's dims without its last (empty) axis."""
    return list(dims[2][:-1])


def _infer_gather(indices: Attribute, dense: Attribute, **_: Any) -> Attribute:
    _check_indices(indices, len(shape_of(dense)))
    return tensor(elem_of(dense), sparse_gather_shape(STATIC, [shape_of(indices), shape_of(dense)]))


def sparse_gather_shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    """(nnz,): one element per row of the indices."""
    return [dims[0][0]]


def _inside(indices: np.ndarray, dims: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(nnz, rank) indices, and which of them lie inside `dims`."""
    idx = indices.astype(np.int64)
    return idx, np.all((idx >= 0) & (idx < np.array(dims, dtype=np.int64)), axis=1)


def _numpy(indices: np.ndarray, values: np.ndarray, dense_like: np.ndarray, **_: Any) -> np.ndarray:
    dims = dense_like.shape[:-1]
    idx, inside = _inside(indices.reshape(len(values), len(dims)), dims)
    idx, vals = idx[inside], values[inside]
    if values.dtype == np.bool_:
        out = np.zeros(dims, np.bool_)
        np.logical_or.at(out, tuple(idx.T), vals)
        return out
    work = np.float32 if values.dtype == np.float16 else values.dtype
    out = np.zeros(dims, work)
    np.add.at(out, tuple(idx.T), vals.astype(work))
    return out.astype(values.dtype)


def _np_gather(indices: np.ndarray, dense: np.ndarray, **_: Any) -> np.ndarray:
    idx, inside = _inside(indices, dense.shape)
    out = np.zeros(len(idx), dense.dtype)
    out[inside] = dense[tuple(idx[inside].T)]
    return out


def _lower(k: Kernel, out: Buf, indices: Buf, values: Buf, dense_like: Buf, **_: Any) -> None:
    zero = const(k.b, 0, compute_type(out.elem))
    with k.loop(k.product(out.dims)) as i:
        k.store_flat(out, i, zero)
    with k.loop(values.dims[0]) as n:
        offset, inside = _locate(k, indices, n, out.dims)

        def scatter() -> None:
            old, new = k.load_flat(out, offset), k.load_flat(values, n)
            k.store_flat(out, offset, _accumulate(k, old, new, out.elem))

        _where(k, inside, scatter, lambda: None)


def _lower_gather(k: Kernel, out: Buf, indices: Buf, dense: Buf, **_: Any) -> None:
    zero = const(k.b, 0, compute_type(out.elem))
    with k.loop(out.dims[0]) as n:
        offset, inside = _locate(k, indices, n, dense.dims)
        _where(
            k,
            inside,
            lambda: k.store_flat(out, n, k.load_flat(dense, offset)),
            lambda: k.store_flat(out, n, zero),
        )


def _locate(
    k: Kernel, indices: Buf, n: SSAValue, dims: Sequence[DimV]
) -> tuple[DimV, SSAValue | None]:
    """The flat offset of entry n's index in a dense tensor of `dims`, and whether it lies
    inside (None: rank 0, always)."""
    coords = [_coordinate(k, indices, n, len(dims), a) for a in range(len(dims))]
    inside: SSAValue | None = None
    for c, d in zip(coords, dims, strict=True):
        ok = k.b.insert(arith.CmpiOp(c, k.index(d), "ult")).result  # negatives wrap high
        inside = ok if inside is None else k.b.insert(arith.AndIOp(inside, ok)).result
    return k.linear(coords, k.strides(dims)), inside


def _where(
    k: Kernel, cond: SSAValue | None, then_fn: Callable[[], None], else_fn: Callable[[], None]
) -> None:
    if cond is None:
        then_fn()
    else:
        k.if_else(cond, then_fn, else_fn)


def _coordinate(k: Kernel, indices: Buf, n: SSAValue, rank: int, axis: int) -> SSAValue:
    raw = k.load_flat(indices, k.add(k.mul(n, rank), axis))
    assert raw.type == i64
    return k.b.insert(arith.IndexCastOp(raw, IndexType())).result


def _accumulate(k: Kernel, old: SSAValue, new: SSAValue, elem: Attribute) -> SSAValue:
    if dtypes.is_float(elem):
        return k.b.insert(arith.AddfOp(old, new)).result
    if dtypes.is_bool(elem):
        return k.b.insert(arith.OrIOp(old, new)).result
    return k.b.insert(arith.AddiOp(old, new)).result


def _grad(g: Any, y: Any, indices: Any, values: Any, dense_like: Any) -> tuple[Any, ...]:
    from aotk.dialect.gradlib import emit

    return None, emit(SparseGatherOp, indices, g), None


def _grad_gather(g: Any, y: Any, indices: Any, dense: Any) -> tuple[Any, ...]:
    """Scatter back into zeros of dense's shape, read from an empty (..., 0) slice of it."""
    from aotk.dialect import gradlib
    from aotk.dialect.shape import SliceOp
    from aotk.dialect.views import ExpandDimsOp

    rank = dense.ndim
    wide = gradlib.emit(ExpandDimsOp, dense, axes=(rank,))
    like = gradlib.emit(
        SliceOp, wide, start=(0,) * (rank + 1), stop=(FULL,) * rank + (0,), step=(1,) * (rank + 1)
    )
    return None, gradlib.emit(SparseToDenseOp, indices, g, like)


register(
    OpDef(
        ir=SparseToDenseOp,
        kind=Kind.OPAQUE,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        grad=_grad,
        shape=sparse_to_dense_shape,
    )
)
register(
    OpDef(
        ir=SparseGatherOp,
        kind=Kind.OPAQUE,
        infer=_infer_gather,
        numpy=_np_gather,
        lower=_lower_gather,
        grad=_grad_gather,
        shape=sparse_gather_shape,
    )
)

__all__ = ["SparseGatherOp", "SparseToDenseOp"]
