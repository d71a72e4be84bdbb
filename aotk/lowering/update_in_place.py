"""Which variable updates a kernel may compute straight into the variable's buffer.

A training step's new weights, `w - lr * g`, are by default computed into the workspace
and copied over the variable at the very end, since ops after the update may still read
the old value. When the new value is elementwise in the old one (read at the same index
it is written, never broadcast) and nothing after it reads the old value, writing it in
place is safe, and saves a copy of every weight per step plus their workspace.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.irdl import IRDLOperation

from aotk.dialect.base import shape_of
from aotk.dialect.fused import FusedOp
from aotk.dialect.registry import Kind, is_registered, lookup


def in_place_updates(fn: func.FuncOp, updates: dict[int, int]) -> set[int]:
    """The output indices among `updates` (output -> input index, -1 for a variable the
    function does not read) whose value may be computed into the output buffer."""
    block = fn.body.block
    returned = list(block.last_op.operands) if block.last_op is not None else []
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
        old = _aliases(block.args[arg])
        in_place = _elementwise_in(writer, value, block.args[arg], old)
        if in_place and not _read_after(writer, old, order, returned):
            chosen.add(out)
    return chosen


def _kind(op: Operation) -> Kind | None:
    """The registry kind of `op` (None for an op that is not an aotk primitive)."""
    return lookup(op).kind if isinstance(op, IRDLOperation) and is_registered(op) else None


def _computes(op: Operation) -> bool:
    """A registered op that writes a buffer of its own (not a view of an operand)."""
    return isinstance(op, FusedOp) or _kind(op) not in (None, Kind.VIEW)


def _aliases(arg: SSAValue) -> set[SSAValue]:
    """`arg` and every view of it (their buffers are arg's)."""
    found, frontier = {arg}, [arg]
    while frontier:
        for use in frontier.pop().uses:
            op = use.operation
            if _kind(op) is Kind.VIEW:
                found.update(op.results)
                frontier.extend(op.results)
    return found


def _elementwise_in(writer: Operation, value: SSAValue, arg: SSAValue, old: set[SSAValue]) -> bool:
    """`writer` computes `value` elementwise, reading the old buffer only as `arg` itself
    of exactly the result's static type (so at the index it writes)."""
    elementwise = isinstance(writer, FusedOp) or _kind(writer) is Kind.ELEMENTWISE
    if not elementwise or len(writer.results) != 1:
        return False
    static = isinstance(value.type, TensorType) and None not in shape_of(value.type)
    return all(
        o not in old or (o is arg and o.type == value.type and static) for o in writer.operands
    )


def _read_after(
    writer: Operation, old: set[SSAValue], order: dict[Operation, int], returned: list[SSAValue]
) -> bool:
    """Whether the old buffer is returned, or read by an op after `writer`."""
    if any(v in old for v in returned):
        return True
    after = order[writer]
    for value in old:
        for use in value.uses:
            user = _top_level(use.operation, writer.parent_block())
            if user is not writer and (user is None or order.get(user, after + 1) > after):
                if not isinstance(user, func.ReturnOp):
                    return True
    return False


def _top_level(op: Operation | None, block: Block | None) -> Operation | None:
    """The op of `block` that contains `op` (None if none does)."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op
