"""Slices that elementwise loops read in place, instead of copies.

An LSTM step slices its gates out of one product, `z[:, :h]`, `z[:, h:2h]` ...: four
copies a step, before the fused gate loop reads each once. Its gradient scans the
forward's saved values backwards, each reversed by a slice: a copy of every one. When
every use of a slice reads it in place, the slice is bound to a strided view of its
operand's buffer instead: elementwise loops (`aotk.fused` or a plain elementwise op)
index any positive strides, and a scan takes one row of a sequence a step, whatever the
step along axis 0. Any other use (a matmul, a reshape, a yield or return) needs the
dense copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import Operation, SSAValue, Use

from aotk.dialect.fused import FusedOp
from aotk.dialect.registry import Kind, kind_of
from aotk.dialect.scan import ScanOp
from aotk.dialect.shape import FULL, SliceOp, slice_bounds
from aotk.kernels.kernel import Buf, DimV, Kernel


def is_view(op: Operation) -> bool:
    """Whether `op` is a slice that is lowered to a strided view of its operand."""
    if not isinstance(op, SliceOp):
        return False
    attrs = op.attrs()
    uses = list(op.result.uses)
    return bool(uses) and all(_reads_view(use, attrs) for use in uses)


def is_view_value(value: SSAValue) -> bool:
    """Whether `value` is the result of a slice lowered to a strided view."""
    return isinstance(value.owner, Operation) and is_view(value.owner)


def bind(k: Kernel, op: SliceOp, x: Buf, dims: Sequence[DimV], code: bool) -> Buf:
    """The view of `x` that `op` selects, with result dims `dims`; its base pointer is
    only moved when emitting code (a planning walk has no buffers)."""
    assert x.strides is None, "a slice reads a dense buffer"
    attrs = op.attrs()
    start, stop, step = attrs["start"], attrs["stop"], attrs["step"]
    dense = k.strides(x.dims)
    first = [
        slice_bounds(k, d, i, j, c)[0] for d, i, j, c in zip(x.dims, start, stop, step, strict=True)
    ]
    strides = tuple(k.mul(s, c) for s, c in zip(dense, step, strict=True))
    mem = k.view(x, k.linear(first, dense), dims).mem if code else x.mem
    return Buf(mem, tuple(dims), x.elem, strides)


def _reads_view(use: Use, attrs: dict[str, Any]) -> bool:
    """Whether the op of `use` reads a view of this slice in place: a scan takes one
    dense row of a sequence a step (any step along axis 0, so a reversed one too); an
    elementwise loop (its lowering is `elementwise_nest.emit`) indexes any positive
    strides."""
    user = use.operation
    if isinstance(user, ScanOp) and use.index < user.num_seq:
        return all(
            (i, j, c) == (0, FULL, 1)
            for i, j, c in zip(
                attrs["start"][1:], attrs["stop"][1:], attrs["step"][1:], strict=True
            )
        )
    return all(c > 0 for c in attrs["step"]) and elementwise_loop(user)


def elementwise_loop(op: Operation) -> bool:
    """Whether `op` is lowered by `elementwise_nest.emit`: `aotk.fused` or a plain
    elementwise op."""
    return isinstance(op, FusedOp) or kind_of(op) is Kind.ELEMENTWISE
