"""Reductions and scans of the Keras API: any, all, argmax, argmin, cumsum, cumprod, var, std,
logsumexp.

any/all, var/std and logsumexp are compositions of the reduce and elementwise primitives;
argmax/argmin and cumsum/cumprod are the `aotk/dialect/along_axis.py` primitives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aotk import dtypes
from aotk.backend.config import floatx
from aotk.backend.math_ops import (
    abs,
    add,
    equal,
    exp,
    less,
    log,
    max,
    mean,
    not_equal,
    sqrt,
    square,
    subtract,
    sum,
    where,
)
from aotk.backend.shape_ops import expand_dims, reshape
from aotk.backend.tensors import as_tensor, cast, scalar
from aotk.dialect import along_axis, trace
from aotk.dialect import reduce as rd
from aotk.dialect.base import AotkOp, normalize_axis
from aotk.dialect.logsumexp import LogSumExpOp
from aotk.dialect.trace import KTensor

Axis = int | Sequence[int] | None


def _axes(t: KTensor, axis: Axis, where: str) -> tuple[int, ...]:
    """Sorted non-negative axes of `t`; None means all."""
    try:
        return rd.normalize_axes(axis, t.ndim)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}: {err} (x: shape {t.shape})") from None


def _axis(t: KTensor, axis: int, where: str) -> int:
    try:
        return normalize_axis(axis, t.ndim)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}: {err} (x: shape {t.shape})") from None


def _floating(x: Any, where: str) -> KTensor:
    """`x` as a float tensor: ints and bools are cast to floatx, as Keras does."""
    t = as_tensor(x, where=where)
    return t if dtypes.is_float(dtypes.element_type(t.dtype)) else cast(t, floatx())


def _all_set(flags: KTensor, axes: tuple[int, ...], keepdims: bool, where: str) -> KTensor:
    """Whether every flag over `axes` is set; the product of 0/1 bytes never overflows and is
    1 over an empty axis."""
    count = trace.emit(
        rd.ReduceProdOp, cast(flags, "uint8"), where=where, axes=axes, keepdims=bool(keepdims)
    )
    return not_equal(count, 0)


def any(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Logical OR over `axis` (a nonzero or NaN element is true); a bool tensor."""
    t = as_tensor(x, where="K.any")
    axes = _axes(t, axis, "K.any")
    return equal(_all_set(equal(t, 0), axes, keepdims, "K.any"), False)


def all(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Logical AND over `axis` (a nonzero or NaN element is true); a bool tensor."""
    t = as_tensor(x, where="K.all")
    axes = _axes(t, axis, "K.all")
    return _all_set(not_equal(t, 0), axes, keepdims, "K.all")


def _arg(op: type[AotkOp], x: Any, axis: int | None, where: str) -> KTensor:
    t = as_tensor(x, where=where)
    if axis is None:  # NumPy: the index into the flattened tensor
        t, axis = reshape(t, (-1,)), 0
    return trace.emit(op, t, where=where, axis=_axis(t, axis, where))


def argmax(x: Any, axis: int | None = -1) -> KTensor:
    """int64 index of the first maximum along `axis`; a NaN counts as the maximum."""
    return _arg(along_axis.ArgMaxOp, x, axis, "K.argmax")


def argmin(x: Any, axis: int | None = -1) -> KTensor:
    """int64 index of the first minimum along `axis`; a NaN counts as the minimum."""
    return _arg(along_axis.ArgMinOp, x, axis, "K.argmin")


def _scan(op: type[AotkOp], x: Any, axis: int, where: str) -> KTensor:
    t = as_tensor(x, where=where)
    if t.dtype == "bool":
        t = cast(t, "int32")  # as K.sum counts bools
    return trace.emit(op, t, where=where, axis=_axis(t, axis, where))


def cumsum(x: Any, axis: int = 0) -> KTensor:
    """Running sum along `axis`, in the dtype of `x` (bools are counted as int32)."""
    return _scan(along_axis.CumSumOp, x, axis, "K.cumsum")


def cumprod(x: Any, axis: int = 0) -> KTensor:
    """Running product along `axis`, in the dtype of `x` (bools as int32)."""
    return _scan(along_axis.CumProdOp, x, axis, "K.cumprod")


def var(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Variance over `axis`: the mean squared deviation from the mean (ints in floatx)."""
    t = _floating(x, "K.var")
    axes = _axes(t, axis, "K.var")
    deviation = subtract(t, mean(t, axes, keepdims=True))
    return mean(square(deviation), axes, keepdims)


def std(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Standard deviation over `axis` (ints in floatx)."""
    t = _floating(x, "K.std")
    return sqrt(var(t, _axes(t, axis, "K.std"), keepdims))


def logsumexp(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """log(sum(exp(x))) over `axis`, shifted by the maximum so it neither overflows nor
    underflows; an infinite or NaN maximum is not subtracted (so -inf rows give -inf)."""
    t = _floating(x, "K.logsumexp")
    axes = _axes(t, axis, "K.logsumexp")
    empty = [a for a in axes if t.shape[a] == 0]
    if empty:
        raise ValueError(
            f"K.logsumexp: axis {empty[0]} of x (shape {t.shape}) is empty; "
            "the maximum is undefined"
        )
    if axes == (t.ndim - 1,):  # one kernel, each row read once
        total = trace.emit(LogSumExpOp, t, where="K.logsumexp")
        return expand_dims(total, -1) if keepdims else total
    peak = max(t, axes, keepdims=True)
    shift = where(less(abs(peak), scalar(float("inf"), t.dtype)), peak, 0.0, "K.logsumexp")
    total = log(sum(exp(subtract(t, shift)), axes, keepdims))
    # summing the kept size-1 axes drops them, whatever the dynamic dims
    return add(total, shift if keepdims else sum(shift, axes))


__all__ = [
    "all",
    "any",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "logsumexp",
    "std",
    "var",
]
