"""Ops lowered alike are lowered once: later copies call the loops of the first.

Deep models repeat their layers. On MobileNetV2's predict, 375 of the 530 kernels that
`convert-aotk-to-loops` emitted were copies of others (57% of their ops), which
`aotk-outline-kernels` then found equal and dropped: both passes did that work for nothing.

The loops of an op depend only on the op itself (name, attributes, properties, types,
the body of a fused op) and on its buffers: each one's element type, memref type, static
dims and strides, and which buffers, and which run-time dims, are the same value. That is
the op's key. Its parameters are its distinct buffers, then its distinct run-time dims.
The first op of a key is emitted in place, a range of the entry block. When a second op of
that key comes, that range becomes a function of the first op's parameters and both ops
call it; so do later ones. A range that uses values of the entry other than its
parameters and constants, or defines values used outside it, stays in place, and its
copies are emitted in place too.

Elementwise ops go further: their loops are shared across sizes too (`generic_loops`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Block, Operation, SSAValue

from aotk.dialect import metadata
from aotk.ir_walk import ops_within
from aotk.kernels.kernel import Buf, Kernel
from aotk.kernels.make import func_call_op
from aotk.lowering.generic_loops import EmitOn, GenericLoops
from aotk.lowering.outline_kernels import EntryAliasing, move_into_function
from aotk.lowering.parallelize import rebuildable, used_from_outside
from aotk.transforms.structure import op_structure_key

Key = Hashable


@dataclass
class _First:
    """The range of the entry emitted for the first op of a key, `start` to `last`, and
    that op's parameters. (The op before the range may move into another's function.)"""

    start: Operation
    last: Operation
    params: list[SSAValue]
    classes: tuple[int, ...]  # of the parameters, see `EntryAliasing.classes`


@dataclass
class OpMemo:
    """The keys seen while lowering into `block` (an entry's), and the functions made."""

    block: Block
    prefix: str  # of the functions' names
    aliasing: EntryAliasing  # of the entry
    functions: list[func.FuncOp] = field(default_factory=list)
    _first: dict[Key, _First] = field(default_factory=dict)  # keys seen once
    _shared: dict[Key, func.FuncOp | None] = field(default_factory=dict)  # None: in place
    _named: int = 0  # functions named so far
    _generic: GenericLoops = field(init=False)

    def __post_init__(self) -> None:
        self._generic = GenericLoops(self.aliasing, self._new_name, self.functions)

    def lower_generic(self, k: Kernel, op: Operation, bufs: Sequence[Buf], emit: EmitOn) -> None:
        """Emit `op`'s elementwise loops on `bufs` by `emit`, as a function of their sizes
        at the top of the entry (`generic_loops`)."""
        if self._at_end(k):
            self._generic.lower(k, op, bufs, emit)
        else:
            emit(k, bufs)

    def finish(self) -> None:
        """Put back in place the generic loops that one op calls."""
        self._generic.finish()

    def _new_name(self) -> str:
        self._named += 1
        return f"{self.prefix}_op{self._named - 1}"

    def lower(
        self, k: Kernel, op: Operation, bufs: Sequence[Buf], emit: Callable[[], None]
    ) -> None:
        """Emit `op`'s loops on `bufs` by `emit()`, or call the function of its key."""
        if not self._at_end(k):
            emit()
            return
        form, params = op_key(op, bufs)
        # which parameters may overlap decides which the kernels take as `noalias`
        classes = tuple(self.aliasing.classes(params))
        key = (form, classes)
        if key in self._first:  # the second op of its key
            self._shared[key] = self._share(self._first.pop(key))
        shared = self._shared.get(key)
        if shared is not None:
            self._call(shared, params)
            return
        before = self.block.last_op
        k.pure.movable = self.block  # what `emit` makes may yet move into a function
        try:
            emit()
        finally:
            k.pure.movable = None
        last = self.block.last_op
        if key not in self._shared and before is not None and last is not before:
            start = before.next_op
            assert start is not None and last is not None
            self._first[key] = _First(start, last, params, classes)

    def _at_end(self, k: Kernel) -> bool:
        point = k.b.insertion_point
        return point.block is self.block and point.insert_before is None

    def _call(self, fn: func.FuncOp, params: Sequence[SSAValue]) -> None:
        self.block.add_op(func_call_op(fn.sym_name.data, list(params), []))

    def _share(self, first: _First) -> func.FuncOp | None:
        """The function the range of `first` becomes, called in its place; None if it
        cannot leave the entry."""
        ops = _range(first.start, first.last)
        walked = [inner for op in ops for inner in ops_within(op)]
        inside = set(walked)
        outside = used_from_outside(walked, inside)
        params = set(first.params)
        if any(v not in params and not rebuildable(v) for v in outside):
            return None
        if any(use.operation not in inside for op in walked for r in op.results for use in r.uses):
            return None
        fn = move_into_function(ops, (first.params, outside), [], self._new_name())
        fn.attributes[metadata.SHARED_LOOPS] = UnitAttr()
        metadata.set_ints(fn, metadata.ALIAS_CLASSES, first.classes)
        may_alias = self.aliasing.may_alias(first.params)
        if may_alias:
            metadata.set_ints(fn, metadata.MAY_ALIAS, may_alias)
        self.functions.append(fn)
        return fn


def op_key(op: Operation, bufs: Sequence[Buf]) -> tuple[Key, list[SSAValue]]:
    """The key of lowering `op` on `bufs`, and its parameters: the distinct buffers, then
    the distinct run-time dims and strides."""
    number: dict[SSAValue, int] = {}
    for buf in bufs:
        number.setdefault(buf.mem, len(number))

    def form(dims: Sequence[int | SSAValue]) -> tuple[Hashable, ...]:
        return tuple(
            d if isinstance(d, int) else ("dim", number.setdefault(d, len(number))) for d in dims
        )

    shapes = tuple(
        (
            number[buf.mem],
            buf.mem.type,
            buf.elem,
            form(buf.dims),
            None if buf.strides is None else form(buf.strides),
        )
        for buf in bufs
    )
    return (op_structure_key(op), shapes), list(number)


def _range(start: Operation, last: Operation) -> list[Operation]:
    ops: list[Operation] = []
    op: Operation | None = start
    while op is not None:
        ops.append(op)
        if op is last:
            return ops
        op = op.next_op
    raise AssertionError("the range of an op's loops was broken")
