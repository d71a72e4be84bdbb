"""Gradient rules of data-movement and scan primitives (pad, broadcast_to, cumsum,
batch_matmul, gather). Each is the adjoint built from other primitives."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aotk.dialect.shape import FULL

BEFORE = -(2**62)  # a slice stop before the first element (negative steps)


def _lib() -> Any:
    from aotk.dialect import gradlib

    return gradlib


def pad(
    g: Any, y: Any, x: Any, *, before: Sequence[int], after: Sequence[int], **_: Any
) -> tuple[Any, ...]:
    from aotk.dialect.shape import SliceOp

    stop = tuple(-a if a else FULL for a in after)
    return (_lib().emit(SliceOp, g, start=tuple(before), stop=stop, step=(1,) * len(before)),)


def broadcast_to(g: Any, y: Any, x: Any, **_: Any) -> tuple[Any, ...]:
    return (_lib().sum_to(g, x.shape),)


def cumsum(g: Any, y: Any, x: Any, *, axis: int, **attrs: Any) -> tuple[Any, ...]:
    """The adjoint of a running sum is a running sum from the other end."""
    from aotk.dialect.scan import CumSumOp

    lib = _lib()
    flipped = _reverse(g, axis)
    return (_reverse(lib.emit(CumSumOp, flipped, axis=axis, **attrs), axis),)


def _reverse(t: Any, axis: int) -> Any:
    from aotk.dialect.shape import SliceOp

    start, stop, step = [0] * t.ndim, [FULL] * t.ndim, [1] * t.ndim
    start[axis], stop[axis], step[axis] = -1, BEFORE, -1
    return _lib().emit(SliceOp, t, start=tuple(start), stop=tuple(stop), step=tuple(step))


def batch_matmul(g: Any, y: Any, a: Any, b: Any, **_: Any) -> tuple[Any, ...]:
    """Per batch entry: dA = G @ B^T and dB = A^T @ G, on [B, M, K] / [B, K, N] views."""
    from aotk.dialect.batch_matmul import BatchMatMulOp
    from aotk.dialect.data import ViewOp, view_attrs

    lib = _lib()
    n_m = a.ndim - 2  # the *Ms axes of a (between the batch axis and K)

    def group(axes: range) -> tuple[int, ...] | int:
        return tuple(axes) or 1  # no axes: a static size-1 dim

    def view3(t: Any, groups: list[tuple[int, ...] | int]) -> Any:
        if t.ndim == 3 and all(isinstance(x, tuple) and len(x) == 1 for x in groups):
            return t
        return lib.emit(ViewOp, t, **view_attrs(groups, t.ndim))

    a3 = view3(a, [(0,), group(range(1, 1 + n_m)), (a.ndim - 1,)])
    b3 = view3(b, [(0,), (1,), group(range(2, b.ndim))])
    g3 = view3(g, [(0,), group(range(1, 1 + n_m)), group(range(1 + n_m, g.ndim))])
    ga = lib.emit(BatchMatMulOp, g3, lib.transpose(b3, (0, 2, 1)))
    gb = lib.emit(BatchMatMulOp, lib.transpose(a3, (0, 2, 1)), g3)
    return lib.reshape_like(ga, a), lib.reshape_like(gb, b)


def gather(g: Any, y: Any, x: Any, indices: Any, *, axis: int, batch_dims: int) -> tuple[Any, ...]:
    """Slices of x that gather picked get back the sum of their cotangents (a scatter-add)."""
    from aotk.dialect.gather_grad import GatherGradOp

    return _lib().emit(GatherGradOp, g, indices, x, axis=axis, batch_dims=batch_dims), None
