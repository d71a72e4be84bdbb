"""Which new values a kernel may compute straight into the buffer of the old one.

A new value (a training step's weight `w - lr * g`, a scan step's carry) is by default
computed into a buffer of its own and copied over the old one at the end, since later
ops may still read the old value. When it is elementwise in the old one (read at the
index it is written, never broadcast), or its writer accumulates into it (a matmul
update), and nothing after its writer reads the old value,
writing it in place is safe, and saves the copy and its workspace. This module holds the
rule, and applies it to a scan's carries; `dialect.update_in_place` applies it to a
function's variable updates.
"""

from __future__ import annotations

from collections.abc import Collection, Set

from xdsl.dialects import func
from xdsl.ir import Block, Operation, SSAValue

from aotk.dialect import strided_views
from aotk.dialect.registry import Kind, accumulates_into, kind_of
from aotk.dialect.scan import ScanOp


def carries_in_place(scan: ScanOp, absorbed: Set[Operation]) -> set[int]:
    """The carry indices of `scan` whose new value its body may compute into the carry's
    buffer. `absorbed`: adds that a matmul does (which reads more than their operands).

    A carry keeps its dims at run time (the call's shape check enforces it), so a new
    value of the old one's type has its dims, dynamic or not.
    """
    block = scan.body.block
    yielded = list(block.last_op.operands) if block.last_op is not None else []
    news = yielded[: scan.num_carries]
    order = {op: i for i, op in enumerate(block.ops)}
    chosen: set[int] = set()
    for j, (old, new) in enumerate(zip(block.args[scan.num_seq :], news, strict=True)):
        writer = new.owner
        if (
            not isinstance(writer, Operation)
            or writer.parent_block() is not block
            or writer in absorbed
            or news.count(new) > 1
        ):
            continue
        old_bufs = aliases(old, strided=True)
        if elementwise_in(writer, new, old, old_bufs) and not read_after(
            writer, old_bufs, order, yielded
        ):
            chosen.add(j)
    return chosen


def aliases(arg: SSAValue, strided: bool = False) -> set[SSAValue]:
    """`arg` and every view of it (their buffers are arg's); with `strided`, the slices
    read in place too (not those of a variable overwritten in place:
    `dialect.update_in_place.overwritten`)."""
    found, frontier = {arg}, [arg]
    while frontier:
        for use in frontier.pop().uses:
            op = use.operation
            if kind_of(op) is Kind.VIEW or (strided and strided_views.is_view(op)):
                found.update(op.results)
                frontier.extend(op.results)
    return found


def elementwise_in(writer: Operation, value: SSAValue, arg: SSAValue, old: set[SSAValue]) -> bool:
    """`writer` computes `value` elementwise, reading the old buffer only as `arg` itself
    of the result's type (so at the index it writes); or it accumulates (`OpDef.
    accumulates_into`) into `arg` (read where, and before, it writes) or into a value
    apart from the old buffer (copied in first: Keras's momentum `0.9 m - lr x^T dz` is
    a matmul accumulating into `0.9 m`), and reads no other part of the old buffer."""
    into = accumulates_into(writer)
    if into is not None:
        others = [o for i, o in enumerate(writer.operands) if i != into]
        accumulator = writer.operands[into]
        into_old = accumulator is arg and arg.type == value.type
        return (into_old or accumulator not in old) and not set(others) & old
    return strided_views.elementwise_loop(writer) and all(
        o not in old or (o is arg and o.type == value.type) for o in writer.operands
    )


def read_after(
    writer: Operation,
    old: set[SSAValue],
    order: dict[Operation, int],
    returned: Collection[SSAValue],
) -> bool:
    """Whether the old buffer is returned, or read by an op after `writer`."""
    if not old.isdisjoint(returned):
        return True
    after = order[writer]
    for value in old:
        for use in value.uses:
            user = top_level(use.operation, writer.parent_block())
            if user is not writer and (user is None or order.get(user, after + 1) > after):
                if not isinstance(user, func.ReturnOp):
                    return True
    return False


def top_level(op: Operation | None, block: Block | None) -> Operation | None:
    """The op of `block` that contains `op` (None if none does)."""
    while op is not None and op.parent_block() is not block:
        op = op.parent_op()
    return op
