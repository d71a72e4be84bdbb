"""`K.tile`, whose counts may be known only at run time.

Keras's confusion-matrix metrics tile their thresholds by `K.size(y_pred)`. A result's dims
come from its operands' dims in aotk, so a count is taken when it is the product of dims
of a tensor (`K.shape(y)[i]`, `K.size(y)`): the tile is then a broadcast against a tensor
of that dim (a select of x with itself, whose condition has that shape), merged into the
axis it repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aotk.backend.data_ops import int_arg, stretch
from aotk.backend.shape_ops import regroup
from aotk.backend.static_eval import DimProduct, entry_dims
from aotk.backend.tensors import as_tensor
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import reduce as rd
from aotk.dialect import trace
from aotk.dialect.trace import KTensor

WHERE = "K.tile"


def tile(x: Any, n: Any) -> KTensor:
    """Repeat the whole tensor n[i] times along axis i, as np.tile: a short `n` is padded
    with leading 1s, a long one adds leading axes to `x`. `n` may be a tensor: its entries
    known while tracing, or products of dims of tensors (`K.shape(y)[i]`, `K.size(y)`)."""
    t = as_tensor(x, where=WHERE)
    if isinstance(n, int | np.integer) and not isinstance(n, bool):
        n = [n]
    if isinstance(n, KTensor):
        n = _tensor_reps(n)
    if not isinstance(n, Sequence | np.ndarray):
        raise TypeError(f"{WHERE}: n must be a list of ints, got {n!r}")
    reps: list[int | DimProduct] = [
        v if isinstance(v, DimProduct) else int_arg(v, WHERE, f"n[{i}]") for i, v in enumerate(n)
    ]
    if len(reps) > t.ndim:
        spec: list[int | tuple[int, ...]] = [1] * (len(reps) - t.ndim)
        t = regroup(t, spec + [(a,) for a in range(t.ndim)], WHERE)
    reps = [1] * (t.ndim - len(reps)) + reps
    static = {a: r for a, r in enumerate(reps) if isinstance(r, int)}
    t = stretch(t, static, WHERE, outer=True)
    for axis, r in enumerate(reps):
        if isinstance(r, DimProduct):
            t = _tile_by_dims(t, axis, r)
    return t


def _tensor_reps(n: KTensor) -> list[int | DimProduct]:
    reps = entry_dims(n)
    if reps is None or None in reps:
        raise TypeError(
            f"{WHERE}: n must be ints, or a tensor of ints known while tracing or of dims of "
            f"tensors (K.shape(y)[i], K.size(y)): the result's shape depends on it; got {n!r}"
        )
    return reps  # type: ignore[return-value]


def _tile_by_dims(t: KTensor, axis: int, r: DimProduct) -> KTensor:
    """`t` repeated along `axis` as many times as `r` says at run time."""
    cond = regroup(_flags(r), [1] * axis + [(0,)] + [1] * (t.ndim - axis), WHERE)
    spread: list[int | tuple[int, ...]] = [(a,) for a in range(t.ndim)]
    spread.insert(axis, 1)
    wide = trace.emit(cmp.SelectOp, cond, *[regroup(t, spread, WHERE)] * 2, where=WHERE)
    merged: list[tuple[int, ...]] = [(a,) for a in range(t.ndim + 1) if a not in (axis, axis + 1)]
    merged.insert(axis, (axis, axis + 1))
    return regroup(wide, merged, WHERE)


def _flags(r: DimProduct) -> KTensor:
    """A bool vector of r's length (its values do not matter: both branches are x)."""
    source = KTensor(r.source)
    rest = tuple(a for a in range(source.ndim) if a not in r.axes)
    if not rest:  # K.size(y): y's elements in a row, no sum over other dims
        return trace.emit(
            ew.FillLikeOp, regroup(source, [r.axes], WHERE), where=WHERE, value=0.0, dtype="bool"
        )
    rows = regroup(source, [r.axes, rest], WHERE)  # (r, the other dims' product)
    zeros = trace.emit(ew.FillLikeOp, rows, where=WHERE, value=0.0, dtype="float32")
    count = trace.emit(rd.ReduceSumOp, zeros, where=WHERE, axes=(1,), keepdims=False)
    return trace.emit(ew.CastOp, count, where=WHERE, dtype="bool")


__all__ = ["tile"]
