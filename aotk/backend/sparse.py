"""`KSparseTensor`: a sparse tensor as three dense tensors, as TensorFlow represents one.

A sparse placeholder is three placeholders: indices (int64 [nnz, rank]), values ([nnz]),
and `dense_dims`, an empty bool tensor of shape dense_shape + (0,) whose dims carry the
dense shape (dynamic dims too) into the compiled code without any data. A compiled function
takes its value as a scipy.sparse matrix (as Keras does) or an (indices, values, dense_shape)
tuple; `feed` checks it and turns it into the three arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from aotk import runtime
from aotk.dialect import trace
from aotk.dialect.base import fmt_shape
from aotk.dialect.trace import KTensor


@dataclass(frozen=True)
class KSparseTensor:
    """Coordinates (int64 [nnz, rank]), values ([nnz]) and the dense shape."""

    indices: KTensor
    values: KTensor
    dense_shape: tuple[int | None, ...]
    dense_dims: KTensor | None = None  # empty tensor of shape dense_shape + (0,)
    name: str = "sparse"

    @property
    def ndim(self) -> int:
        return len(self.dense_shape)

    @property
    def shape(self) -> tuple[int | None, ...]:
        return self.dense_shape

    @property
    def dtype(self) -> str:
        return self.values.dtype

    @property
    def placeholders(self) -> list[KTensor]:
        """The dense placeholders a compiled function takes for this input."""
        if self.dense_dims is None:
            raise TypeError(f"sparse tensor '{self.name}' is not a placeholder")
        return [self.indices, self.values, self.dense_dims]

    def feed(self, value: Any, where: str) -> list[np.ndarray]:
        """(indices, values, dense_dims) arrays of a scipy.sparse matrix or a triple."""
        indices, values, dense_shape = _triple(value, self.name, where)
        shape = tuple(int(d) for d in dense_shape)
        if len(shape) != self.ndim or any(
            d is not None and d != s for d, s in zip(self.dense_shape, shape, strict=True)
        ):
            raise ValueError(
                f"{where}: sparse input '{self.name}' expects dense shape "
                f"{fmt_shape(self.dense_shape)}, got {fmt_shape(shape)}"
            )
        indices = _check_indices(indices, values, shape, self.name, where)
        return [indices, values, np.empty((*shape, 0), np.bool_)]


def _triple(value: Any, name: str, where: str) -> tuple[np.ndarray, np.ndarray, Any]:
    if hasattr(value, "tocoo"):
        coo = value.tocoo()
        indices = np.stack([np.asarray(coo.row), np.asarray(coo.col)], axis=1)
        return indices, np.asarray(coo.data), coo.shape
    if isinstance(value, tuple | list) and len(value) == 3:
        indices, values, dense_shape = value
        return np.asarray(indices), np.asarray(values), tuple(dense_shape)
    raise TypeError(
        f"{where}: sparse input '{name}' takes a scipy.sparse matrix or an "
        f"(indices, values, dense_shape) tuple, got {type(value).__name__}"
    )


def _check_indices(
    indices: np.ndarray, values: np.ndarray, shape: tuple[int, ...], name: str, where: str
) -> np.ndarray:
    if indices.size == 0:
        indices = indices.reshape(0, len(shape))
    if indices.dtype.kind not in "iu" or indices.ndim != 2 or indices.shape[1] != len(shape):
        raise ValueError(
            f"{where}: sparse input '{name}' expects integer indices of shape (nnz, "
            f"{len(shape)}), got {indices.dtype.name} of shape {fmt_shape(indices.shape)}"
        )
    if values.ndim != 1 or len(values) != len(indices):
        raise ValueError(
            f"{where}: sparse input '{name}' has {len(indices)} indices but values of shape "
            f"{fmt_shape(values.shape)}"
        )
    outside = np.flatnonzero(np.any((indices < 0) | (indices >= np.array(shape)), axis=1))
    if len(outside):
        raise ValueError(
            f"{where}: sparse input '{name}' has index {tuple(indices[outside[0]].tolist())} "
            f"(entry {outside[0]}) outside the dense shape {fmt_shape(shape)}"
        )
    return indices.astype(np.int64)


def sparse_placeholder(shape: tuple[int | None, ...], dtype: str, name: str) -> KSparseTensor:
    """A sparse placeholder: three dense placeholders (see the module docstring)."""

    def arg(suffix: str, dims: tuple[int | None, ...], dt: str) -> KTensor:
        full = f"{name}_{suffix}"
        return KTensor(trace.placeholder_arg(dims, dt, full), name=full)

    return KSparseTensor(
        indices=arg("indices", (None, len(shape)), "int64"),
        values=arg("values", (None,), dtype),
        dense_shape=tuple(shape),
        dense_dims=arg("dense_shape", (*shape, 0), "bool"),
        name=name,
    )


class _DenseDims(runtime.StorageHolder):
    """The read-only empty buffer that carries a static dense shape."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.storage = runtime.aligned_empty((*shape, 0), "bool")
        self.storage.flags.writeable = False
        name = f"dense_dims_{len(trace.graph().captures)}"
        self.tensor = KTensor(trace.capture_arg(self, self.storage, name), name=name)


def dense_dims_of(x: KSparseTensor, where: str) -> KTensor:
    """The shape-carrying operand of `x`: its own, or a captured one for a static shape."""
    if x.dense_dims is not None:
        return x.dense_dims
    if None in x.dense_shape:
        raise ValueError(
            f"{where}: sparse tensor '{x.name}' has dense shape {fmt_shape(x.dense_shape)}, "
            "which is not known at trace time"
        )
    return _DenseDims(tuple(d for d in x.dense_shape if d is not None)).tensor


def densify(x: KSparseTensor, where: str) -> KTensor:
    """The dense tensor of `x`, scattered by compiled code."""
    from aotk.dialect.sparse import SparseToDenseOp

    return trace.emit(SparseToDenseOp, x.indices, x.values, dense_dims_of(x, where), where=where)


def concatenate_sparse(xs: list[KSparseTensor], axis: int, where: str) -> KSparseTensor:
    """Sparse tensors of static dense shapes joined along `axis`: a sparse tensor."""
    from aotk.backend.shape_ops import concatenate
    from aotk.backend.tensors import constant

    shapes = [x.dense_shape for x in xs]
    if any(None in s for s in shapes):
        raise ValueError(f"{where}: sparse tensors need static dense shapes, got {shapes}")
    offset, indices = 0, []
    for x in xs:
        shift = np.zeros(x.ndim, np.int64)
        shift[axis] = offset
        indices.append(x.indices + constant(shift[None, :], dtype="int64"))
        offset += x.dense_shape[axis]  # type: ignore[operator]
    shape = list(shapes[0])
    shape[axis] = offset
    values = concatenate([x.values for x in xs], axis=0)
    return KSparseTensor(concatenate(indices, axis=0), values, tuple(shape))
