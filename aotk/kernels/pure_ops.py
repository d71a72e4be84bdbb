"""`PureOps`: the index arithmetic and views a `Kernel` emits, made once per block.

Unrolled emitters (a depthwise conv's taps) asked again for the same offsets, and calls
for the same views of the workspace: NASNetMobile's training step built 60,000 such ops
over, for cse to remove. An earlier op is reused only where its value still dominates:
in the block ops are appended to, if it was neither erased nor moved since.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.dialects.builtin import i64
from xdsl.ir import Attribute, Block, Operation, SSAValue

from aotk.kernels.make import integer, make


@dataclass
class PureOps:
    # Set while `op_memo` records a range of this block that it may move into a function:
    # a value reused from outside the range would pin it in place.
    movable: Block | None = None
    _made: dict[tuple[object, ...], Operation] = field(default_factory=dict)

    def get(
        self,
        b: Builder,
        cls: type[Operation],
        operands: tuple[SSAValue, ...],
        result: Attribute,
        predicate: int | None = None,
    ) -> SSAValue:
        """`cls(*operands)` at `b`, or the same op made earlier in its block."""
        block = self.reuse_block(b)
        key = (cls, operands, result, predicate, block)
        if block is not None and (known := self._made.get(key)) is not None:
            if known.parent is block:
                return known.results[0]
        properties = {} if predicate is None else {"predicate": integer(predicate, i64)}
        op = b.insert(make(cls, list(operands), [result], properties))
        if block is not None:
            self._made[key] = op
        return op.results[0]

    def reuse_block(self, b: Builder) -> Block | None:
        """The block whose earlier values an op made at `b` may take the place of: its
        insertion block, if ops are appended to it and it is not `movable`."""
        point = b.insertion_point
        if point.insert_before is not None or point.block is self.movable:
            return None
        return point.block
