"""Which variable updates a kernel may compute straight into the variable's buffer.

A training step's new weights, `w - lr * g`, are by default computed into the workspace
and copied over the variable at the very end, since ops after the update may still read
the old value. When the new value is elementwise in the old one and nothing after it
reads the old value (`dialect.in_place`), writing it in place is safe, and saves a copy
of every weight per step plus their workspace.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation, SSAValue

from aotk.dialect import metadata, strided_views
from aotk.dialect.base import shape_of
from aotk.dialect.fused import FusedOp
from aotk.dialect.in_place import aliases, elementwise_in, read_after
from aotk.dialect.registry import Kind, kind_of


def variable_updates(fn: func.FuncOp) -> dict[int, int]:
    """Output index -> input index (or -1) of each variable the function updates."""
    metadata.check(fn)
    pairs = metadata.ints(fn, metadata.UPDATES)
    return dict(zip(pairs[::2], pairs[1::2], strict=True))


def in_place_updates(fn: func.FuncOp, updates: dict[int, int]) -> set[int]:
    """The output indices among `updates` (output -> input index, -1 for a variable the
    function does not read) whose value may be computed into the output buffer."""
    block = fn.body.block
    returned = list(block.last_op.operands) if block.last_op is not None else []
    returned_set = set(returned)
    order = {op: i for i, op in enumerate(block.ops)}
    chosen: set[int] = set()
    for out, arg in updates.items():
        value = returned[out]
        writer = value.owner
        if not isinstance(writer, Operation) or writer.parent_block() is not block:
            continue
        if arg < 0:
            if _computes(writer):
                chosen.add(out)
            continue
        old = aliases(block.args[arg])
        in_place = (
            _one_index_each(writer)
            and _static(value)
            and elementwise_in(writer, value, block.args[arg], old)
        )
        if in_place and not read_after(writer, old, order, returned_set):
            chosen.add(out)
    return chosen


def overwritten(fn: func.FuncOp, updates: dict[int, int], in_place: set[int]) -> set[SSAValue]:
    """The values whose buffer an in-place update (`in_place`, from `in_place_updates`)
    overwrites: each such variable and its views. A slice of one must be copied before
    the update, not read in place after it (`dialect.strided_views`)."""
    args = fn.body.block.args
    return {alias for out in in_place if updates[out] >= 0 for alias in aliases(args[updates[out]])}


def _one_index_each(writer: Operation) -> bool:
    """Whether each element `writer` writes, in every result, is computed from its
    operands at that index alone, before it is stored: one result, or an elementwise
    loop's several (SGD with momentum's `v = m * mu - lr * g` and `w + v`, fused, write
    m and w in place in one pass)."""
    return len(writer.results) == 1 or strided_views.elementwise_loop(writer)


def _computes(op: Operation) -> bool:
    """A registered op that writes a buffer of its own (not a view of an operand)."""
    return isinstance(op, FusedOp) or kind_of(op) not in (None, Kind.VIEW)


def _static(value: SSAValue) -> bool:
    return isinstance(value.type, TensorType) and None not in shape_of(value.type)
