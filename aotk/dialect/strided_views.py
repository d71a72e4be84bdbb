"""Slices that elementwise loops read in place, instead of copies.

An LSTM step slices its gates out of one product, `z[:, :h]`, `z[:, h:2h]` ...: four
copies a step, before the fused gate loop reads each once. When every use of a slice
(with positive steps) is an elementwise loop (`aotk.fused` or a plain elementwise op),
the slice is bound to a strided view of its operand's buffer instead, and those loops
index it with its strides. Any other use (a matmul, a reshape, a yield or return) needs
the dense copy.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue
from xdsl.irdl import IRDLOperation

from aotk.dialect.fused import FusedOp
from aotk.dialect.registry import Kind, is_registered, lookup
from aotk.dialect.shape import SliceOp, slice_bounds
from aotk.kernels.kernel import Buf, DimV, Kernel


def is_view(op: Operation) -> bool:
    """Whether `op` is a slice that is lowered to a strided view of its operand."""
    if not isinstance(op, SliceOp) or any(s <= 0 for s in op.attrs()["step"]):
        return False
    uses = list(op.result.uses)
    return bool(uses) and all(_reads_strided(u.operation) for u in uses)


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


def _reads_strided(op: Operation) -> bool:
    """Ops whose lowering goes through `elementwise_nest.emit`, which honours strides."""
    if isinstance(op, FusedOp):
        return True
    return (
        isinstance(op, IRDLOperation) and is_registered(op) and lookup(op).kind is Kind.ELEMENTWISE
    )
