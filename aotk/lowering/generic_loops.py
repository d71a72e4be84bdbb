"""Elementwise loops emitted once for any sizes: their dims are arguments.

A deep model runs the same elementwise kernel at many sizes. DenseNet121's layers each
add 32 channels, so its training step lowered 590 elementwise kernels that differ only in
their dims: a quarter of the ops that lowering, the cleanup and LLVM handled. Here an
elementwise op (or an `aotk.fused`) at the top of an entry is lowered into a function of
its distinct buffers and its distinct sizes (dims and strides other than 1), and every
op that computes the same thing on buffers of the same form calls it. The form keeps
which dims are 1 (they broadcast) and which sizes are equal (a flat loop needs them so),
and which buffers may overlap (`EntryAliasing`). A function that one op calls is put
back in its place with its sizes as constants again: a kernel of one size is compiled as
before.

While the loops are emitted, the sizes are the function's arguments, so nothing is
decided on the first op's sizes that another op's would not allow. Those sizes only
hint typical trip counts (`Kernel.typical`) to the cost of parallel loops, whose
thresholds are checked at run time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import cast

from xdsl.builder import Builder
from xdsl.dialects import arith, func, ptr
from xdsl.dialects.builtin import MemRefType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from aotk.dialect import metadata
from aotk.dialect.base import elem_of
from aotk.kernels.kernel import INDEX, Buf, DimV, Kernel
from aotk.kernels.make import flat_memref_type, func_call_op
from aotk.lowering.aliasing import EntryAliasing
from aotk.transforms.structure import op_structure_key

# emits an op's loops with `Kernel` on buffers (outputs first, as the op's lowering had them)
EmitOn = Callable[[Kernel, Sequence[Buf]], None]
_ONE = -1  # a dim of 1 in a form; other sizes are numbered from 0


@dataclass
class _Layout:
    """An op's buffers as a generic function takes them: distinct memories, then
    distinct sizes; `form` says which each buffer's are."""

    mems: list[SSAValue]
    sizes: list[DimV]
    form: tuple[Hashable, ...]

    @classmethod
    def of(cls, bufs: Sequence[Buf]) -> _Layout:
        mems: dict[SSAValue, int] = {}
        sizes: dict[DimV, int] = {}

        def size(d: DimV) -> int:
            return _ONE if isinstance(d, int) and d == 1 else sizes.setdefault(d, len(sizes))

        form = tuple(
            (
                mems.setdefault(b.mem, len(mems)),
                b.elem,
                _storage(b.mem),
                tuple(size(d) for d in b.dims),
                None if b.strides is None else tuple(size(s) for s in b.strides),
            )
            for b in bufs
        )
        return cls(list(mems), list(sizes), form)

    def bufs_on(self, bufs: Sequence[Buf], args: Sequence[SSAValue]) -> list[Buf]:
        """`bufs` (the op's) on the memories and sizes `args` (a function's)."""
        sizes = args[len(self.mems) :]

        def dims(forms: tuple[int, ...]) -> tuple[DimV, ...]:
            return tuple(1 if f == _ONE else sizes[f] for f in forms)

        return [
            Buf(args[mem], dims(d), b.elem, None if s is None else dims(s))
            for b, (mem, _, _, d, s) in zip(bufs, cast(Sequence[tuple], self.form), strict=True)
        ]


@dataclass
class _Generic:
    """A generic function and its calls, each with the values its arguments stand for."""

    fn: func.FuncOp
    calls: list[tuple[func.CallOp, list[SSAValue]]] = field(default_factory=list)


@dataclass
class GenericLoops:
    """The generic functions of one entry, keyed by op and form."""

    aliasing: EntryAliasing  # of the entry
    new_name: Callable[[], str]
    functions: list[func.FuncOp]  # where the functions made go (and leave, if put back)
    _by_key: dict[Hashable, _Generic] = field(default_factory=dict)

    def lower(self, k: Kernel, op: Operation, bufs: Sequence[Buf], emit: EmitOn) -> None:
        """Call the function of `op`'s key on `bufs`, made by `emit` on its first op."""
        bufs = _flattened(k, bufs)
        layout = _Layout.of(bufs)
        values = [*layout.mems, *(k.index(d) for d in layout.sizes)]
        classes = tuple(self.aliasing.classes(values))
        key = (op_structure_key(op, _element_type), layout.form, classes, _work_class(bufs[0]))
        generic = self._by_key.get(key)
        if generic is None:
            fn = self._function(layout, bufs, emit)
            metadata.set_ints(fn, metadata.ALIAS_CLASSES, classes)
            may_alias = self.aliasing.may_alias(values)
            if may_alias:
                metadata.set_ints(fn, metadata.MAY_ALIAS, may_alias)
            generic = self._by_key[key] = _Generic(fn)
        n = len(layout.mems)
        passed = [*(_dynamic(k, v) for v in values[:n]), *values[n:]]
        call = k.b.insert(func_call_op(generic.fn.sym_name.data, passed, []))
        generic.calls.append((call, values))

    def _function(self, layout: _Layout, bufs: Sequence[Buf], emit: EmitOn) -> func.FuncOp:
        types: list[Attribute] = [flat_memref_type(_storage(m)) for m in layout.mems]
        block = Block(arg_types=[*types, *[INDEX] * len(layout.sizes)])
        k = Kernel(Builder(InsertPoint.at_end(block)))
        size_args = block.args[len(layout.mems) :]
        typical = zip(size_args, layout.sizes, strict=True)
        k.typical = {a: d for a, d in typical if isinstance(d, int)}
        emit(k, layout.bufs_on(bufs, block.args))
        k.b.insert(func.ReturnOp())
        fn = func.FuncOp(self.new_name(), (block.arg_types, []), Region(block), "private")
        fn.attributes[metadata.SHARED_LOOPS] = UnitAttr()
        self.functions.append(fn)
        return fn

    def finish(self) -> None:
        """Put each function that one op calls back in its place, on that op's values."""
        for generic in self._by_key.values():
            if len(generic.calls) == 1:
                _inline(generic.fn, *generic.calls[0])
                self.functions.remove(generic.fn)
        self._by_key.clear()


def _flattened(k: Kernel, bufs: Sequence[Buf]) -> Sequence[Buf]:
    """`bufs` with one dim each if they all have the same dims and no strides: their
    loop is then flat whatever their rank (`elementwise_nest`)."""
    dims = bufs[0].dims
    if len(dims) == 1 or any(b.strides is not None or not _same(b.dims, dims) for b in bufs):
        return bufs
    total = k.product(dims)
    return [Buf(b.mem, (total,), b.elem) for b in bufs]


def _work_class(out: Buf) -> int | None:
    """The power of 2 below the elements of one trip of a nest's outer (parallel) loop:
    ops of one class hint trip counts within a factor 2 of their own to its cost."""
    if out.rank < 2 or not all(isinstance(d, int) for d in out.dims[1:]):
        return None
    return math.prod(cast(Sequence[int], out.dims[1:])).bit_length()


def _same(a: Sequence[DimV], b: Sequence[DimV]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


def _element_type(t: Attribute) -> Hashable:
    """What of an elementwise op's own types its loops depend on, besides its buffers."""
    return elem_of(t)


def _storage(mem: SSAValue) -> Attribute:
    return cast(MemRefType, mem.type).element_type


def _dynamic(k: Kernel, mem: SSAValue) -> SSAValue:
    """`mem` as a `memref<?xT>`: a function of any sizes takes its buffers so."""
    t = flat_memref_type(_storage(mem))
    if mem.type == t:
        return mem
    return k.memref_at(k.pointer(mem), t)


def _inline(fn: func.FuncOp, call: func.CallOp, values: Sequence[SSAValue]) -> None:
    """Move `fn`'s body in place of `call`, its arguments replaced by `values`; erase the
    views made for the call."""
    block = fn.body.block
    returned = block.last_op
    assert isinstance(returned, func.ReturnOp)
    block.erase_op(returned)
    passed = list(call.operands)
    parent = call.parent_block()
    assert parent is not None
    # the kernel's constants join the entry's, at its top (`Kernel.index`)
    while isinstance(first := block.first_op, arith.ConstantOp):
        first.detach()
        parent.insert_op_before(first, cast(Operation, parent.first_op))
    Rewriter.inline_block(block, InsertPoint.before(call), values)
    parent.erase_op(call)
    for v in passed:
        _erase_view(v)


def _erase_view(v: SSAValue) -> None:
    """Erase the `ptr` views `v` is made by, unless used."""
    op = v.owner
    while isinstance(op, ptr.ToPtrOp | ptr.FromPtrOp) and op.results[0].first_use is None:
        source = op.operands[0].owner
        block = op.parent_block()
        assert block is not None
        block.erase_op(op)
        op = source
