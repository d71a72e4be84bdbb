"""Per-sample products and lookups of the Keras API: `batch_dot` and `in_top_k`.

Both are re-exported by `data_ops`, the family module that owns them.
"""

from __future__ import annotations

from typing import Any

from aotk import dtypes
from aotk.backend.math_ops import (
    abs,
    equal,
    greater,
    greater_equal,
    less,
    minimum,
    multiply,
    sum,
)
from aotk.backend.shape_ops import permute_dimensions, regroup
from aotk.backend.tensors import as_tensor, cast, scalar
from aotk.dialect import batch_matmul as bm
from aotk.dialect import gather as dg
from aotk.dialect import shape_query as sq
from aotk.dialect import trace
from aotk.dialect.trace import KTensor


def _batch_axes(axes: Any, x_rank: int, y_rank: int) -> tuple[int, int]:
    """Normalized (x axis, y axis) to contract, checked as the Keras reference does."""
    where = "K.batch_dot"
    if axes is None:
        axes = (x_rank - 1, y_rank - 1 if y_rank == 2 else y_rank - 2)
    elif isinstance(axes, int) and not isinstance(axes, bool):
        axes = (axes, axes)
    if not isinstance(axes, list | tuple) or len(axes) != 2:
        raise ValueError(
            f"{where}: axes must be None, an int or a pair of ints (int, int), got {axes!r}"
        )
    if any(isinstance(a, list | tuple) for a in axes):
        raise ValueError(
            f"{where}: multiple target dimensions are not supported; expected None, int or "
            f"(int, int), got {axes!r}"
        )
    if any(isinstance(a, bool) or not isinstance(a, int) for a in axes):
        raise TypeError(f"{where}: axes must be ints, got {axes!r}")
    a0 = axes[0] + x_rank if axes[0] < 0 else axes[0]
    a1 = axes[1] + y_rank if axes[1] < 0 else axes[1]
    if 0 in (a0, a1):
        raise ValueError(f"{where}: axes {tuple(axes)} include the batch axis 0")
    if not (0 < a0 < x_rank and 0 < a1 < y_rank):
        raise ValueError(
            f"{where}: axes {tuple(axes)} are out of range for x of rank {x_rank} "
            f"and y of rank {y_rank}"
        )
    return a0, a1


def batch_dot(x: Any, y: Any, axes: Any = None) -> KTensor:
    """Per-sample tensordot of x and y over axes (x axis, y axis); a rank-1 result is
    reshaped to (batch, 1)."""
    a, b = as_tensor(x, where="K.batch_dot"), as_tensor(y, where="K.batch_dot")
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(
            f"K.batch_dot: x and y must have rank >= 2, got shapes {a.shape} and {b.shape}"
        )
    if a.dtype != b.dtype or a.dtype == "bool":
        raise TypeError(
            f"K.batch_dot: expected x and y of one numeric dtype, got {a.dtype} and {b.dtype}"
        )
    ax, ay = _batch_axes(axes, a.ndim, b.ndim)
    if None not in (a.shape[0], b.shape[0]) and a.shape[0] != b.shape[0]:
        raise ValueError(f"K.batch_dot: batch sizes differ: x {a.shape} and y {b.shape} (axis 0)")
    d1, d2 = a.shape[ax], b.shape[ay]
    if None not in (d1, d2) and d1 != d2:
        raise ValueError(
            f"K.batch_dot: cannot contract x {a.shape} with y {b.shape} over axes "
            f"({ax}, {ay}): x.shape[{ax}] != y.shape[{ay}] ({d1} != {d2})"
        )
    if a.ndim == 2 and b.ndim == 2:
        return sum(multiply(a, b), axis=1, keepdims=True)
    a = _moved(a, ax, a.ndim - 1)
    b = _moved(b, ay, 1)
    return trace.emit(bm.BatchMatMulOp, a, b, where="K.batch_dot")


def _moved(t: KTensor, src: int, dst: int) -> KTensor:
    """`t` with axis `src` moved to position `dst`."""
    if src == dst:
        return t
    order = [i for i in range(t.ndim) if i != src]
    order.insert(dst, src)
    return permute_dimensions(t, order)


def in_top_k(predictions: Any, targets: Any, k: int) -> KTensor:
    """Whether predictions[i, targets[i]] is among the k largest of row i. Ties at the
    boundary count as in the top k; a target out of range or a row with a non-finite score
    gives False."""
    where = "K.in_top_k"
    p, t = as_tensor(predictions, where=where), as_tensor(targets, where=where)
    if p.ndim != 2 or t.ndim != 1:
        raise ValueError(
            f"{where}: expected predictions (batch, classes) and targets (batch,), "
            f"got shapes {p.shape} and {t.shape}"
        )
    if not dtypes.is_float(dtypes.element_type(p.dtype)):
        raise TypeError(f"{where}: predictions must be a float tensor, got {p.dtype}")
    if not dtypes.is_int(dtypes.element_type(t.dtype)):
        raise TypeError(f"{where}: targets must be an integer tensor, got {t.dtype}")
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"{where}: k must be a Python int, got {k!r}")
    if None not in (p.shape[0], t.shape[0]) and p.shape[0] != t.shape[0]:
        raise ValueError(f"{where}: batch sizes differ: predictions {p.shape}, targets {t.shape}")
    score = trace.emit(dg.GatherOp, p, t, where=where, axis=1, batch_dims=1)
    rank = sum(cast(greater(p, regroup(score, [(0,), 1], where)), "int32"), axis=1)
    classes = (
        scalar(p.shape[1], "int64")
        if p.shape[1] is not None
        else trace.emit(sq.DimSizeOp, p, where=where, axes=(1,), dtype="int64")
    )
    t64 = t if t.dtype == "int64" else cast(t, "int64")
    in_range = minimum(greater_equal(t64, 0), less(t64, classes))
    # as TensorFlow's InTopK: any non-finite score in the row makes the answer False
    finite = equal(sum(cast(less(abs(p), float("inf")), "int64"), axis=1), classes)
    return minimum(minimum(in_range, finite), less(rank, min(k, 2**31 - 1)))


__all__ = ["batch_dot", "in_top_k"]
