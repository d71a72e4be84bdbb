"""`aotk-early-updates`: a variable's in-place update runs as soon as it can.

Keras traces an optimizer's updates after every gradient, so a training step held all
its weight gradients at once, to apply them at the end: 94 MB of ResNet50's workspace,
whatever the batch. An update written in place (`dialect.update_in_place`) may run
once its operands are computed and every other reader of the variable has read it:
right after its layer's backward ops, where its gradient then dies. Batch-norm's moving
averages are updated during the forward pass, after the batch's statistics.

The operands an update waits for include small pure values (rank 0: a learning rate
decayed by the step count, Adam's bias corrections) and values only it reads (momentum's
`0.9 m`) that Keras also traces after the gradients; those move with it, which costs no
memory. Ops only move earlier, each after its operands and, for an update, after every
other reader of the buffers it overwrites: the updates written in place stay exactly
those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import is_side_effect_free

from aotk.dialect.base import shape_of
from aotk.dialect.in_place import aliases, top_level
from aotk.dialect.update_in_place import in_place_updates, variable_updates
from aotk.ir_walk import block_values_used

# results of at most this many elements in all are computed as early as they can be
SMALL_ELEMENTS = 64


@dataclass
class _Schedule:
    """Positions of a block's ops, kept as ops move (a moved op takes a position between
    its new neighbours')."""

    block: Block
    overwrites: dict[Operation, set[SSAValue]]  # update -> the buffers it writes in place
    at: dict[Operation, float] = field(default_factory=dict)
    done: set[Operation] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.number()

    def number(self) -> None:
        """Positions 0, 1, 2, ... in the block's order."""
        self.at = {op: float(i) for i, op in enumerate(self.block.ops)}

    def defined_at(self, value: SSAValue) -> Operation | None:
        """The op of the block that defines `value` (None: the block's argument)."""
        owner = value.owner
        return owner if isinstance(owner, Operation) and owner in self.at else None

    def move_after(self, op: Operation, after: Operation | None) -> None:
        """Move `op` to just after `after` (None: to the block's start) if that is earlier."""
        before = after.next_op if after is not None else self.block.first_op
        if before is not None and before is not op and self.at[before] < self.at[op]:
            self._insert(op, before)

    def move_before(self, op: Operation, before: Operation) -> None:
        """Move `op` to just before `before` if that is earlier."""
        if self.at[op] > self.at[before]:
            self._insert(op, before)

    def _insert(self, op: Operation, before: Operation) -> None:
        op.detach()
        self.block.insert_op_before(op, before)
        after = op.prev_op
        low = self.at[after] if after is not None else self.at[before] - 1.0
        if self.at[before] - low < 1e-6:  # halved too often: number them again
            self.number()
        else:
            self.at[op] = (low + self.at[before]) / 2

    def latest(self, ops: list[Operation | None]) -> Operation | None:
        found = [op for op in ops if op is not None]
        return max(found, key=self.at.__getitem__) if found else None


def _small(op: Operation) -> bool:
    """A pure op whose results are a few elements of static shape."""
    if not op.results or not is_side_effect_free(op):
        return False
    total = 0
    for r in op.results:
        shape = shape_of(r.type) if isinstance(r.type, TensorType) else (None,)
        dims = [d for d in shape if isinstance(d, int)]
        if len(dims) < len(shape):
            return False
        total += math.prod(dims)
    return total <= SMALL_ELEMENTS


def _private(producer: Operation, op: Operation) -> bool:
    """A pure op whose results only `op` reads: computed just before it, they live no
    longer (Keras's momentum `0.9 m`, which a matmul then accumulates into)."""
    block = op.parent_block()
    return is_side_effect_free(producer) and all(
        top_level(use.operation, block) is op for r in producer.results for use in r.uses
    )


def _readers(old: set[SSAValue], block: Block) -> list[Operation | None]:
    """The top-level ops of `block` that read a buffer of `old`."""
    return [top_level(use.operation, block) for value in old for use in value.uses]


def hoist(schedule: _Schedule, op: Operation) -> None:
    """Move `op` right after the last op it must follow: the small pure ops and updates it
    reads are moved likewise first, and the values only it reads come along, just
    before it."""
    if op in schedule.done:
        return
    schedule.done.add(op)
    block = schedule.block
    anchors, privates = _anchors(schedule, op, [])
    overwrites = schedule.overwrites.get(op, set())
    readers = [r for r in _readers(overwrites, block) if r is not op and r not in privates]
    if any(isinstance(r, func.ReturnOp) or r is None for r in readers):
        return
    schedule.move_after(op, schedule.latest([*anchors, *readers]))
    for producer in reversed(privates):  # each after the ones it reads
        schedule.move_before(producer, op)


def _anchors(
    schedule: _Schedule, op: Operation, privates: list[Operation]
) -> tuple[list[Operation | None], list[Operation]]:
    """The ops `op` must follow, and the pure ops only it reads (`privates`: they follow
    their own anchors, which count as `op`'s)."""
    anchors: list[Operation | None] = []
    for producer in (schedule.defined_at(v) for v in block_values_used(op, schedule.block)):
        if producer is None or producer in privates:
            continue
        if producer in schedule.overwrites or _small(producer):
            hoist(schedule, producer)
            anchors.append(producer)
        elif producer not in schedule.done and _private(producer, op):
            privates.append(producer)
            anchors += _anchors(schedule, producer, privates)[0]
        else:
            anchors.append(producer)
    return anchors, privates


def schedule_updates(fn: func.FuncOp) -> None:
    """Run each in-place update of `fn` as early as it can."""
    updates = variable_updates(fn)
    block = fn.body.block
    if not updates or block.last_op is None:
        return
    returned = list(block.last_op.operands)
    overwrites: dict[Operation, set[SSAValue]] = {}
    for out in sorted(in_place_updates(fn, updates)):
        writer = returned[out].owner
        assert isinstance(writer, Operation)
        old = aliases(block.args[updates[out]]) if updates[out] >= 0 else set()
        overwrites.setdefault(writer, set()).update(old)
    schedule = _Schedule(block, overwrites)
    for writer in sorted(overwrites, key=schedule.at.__getitem__):
        hoist(schedule, writer)


@dataclass(frozen=True)
class AotkEarlyUpdatesPass(ModulePass):
    """Move each variable update written in place to just after what it waits for."""

    name = "aotk-early-updates"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp) and not fn.is_declaration:
                schedule_updates(fn)
