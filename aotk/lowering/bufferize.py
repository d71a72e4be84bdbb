"""Bufferizing one aotk function: buffers for its values, loops for its ops.

`Bufferizer` walks a function's block in order. Inputs and outputs are the caller's
buffers; every other value gets a 64-byte aligned slice of the workspace, taken again
once its values are dead (`workspace_plan`). With `code`, each op's loops are emitted
(through `op_memo`, which shares the loops of ops alike); without, only the sizes are
planned, for the workspace-size and output-dims functions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, MemRefType, UnitAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from aotk import dtypes
from aotk.dialect import metadata, strided_views
from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.elementwise import lower_scalar
from aotk.dialect.registry import Kind, lookup
from aotk.dialect.update_in_place import in_place_updates, overwritten, variable_updates
from aotk.kernels import elementwise_nest
from aotk.kernels.checked_sizes import SizeKernel
from aotk.kernels.elementwise_nest import BodyFn
from aotk.kernels.kernel import INDEX, Buf, DimV, Kernel
from aotk.kernels.make import flat_memref_type
from aotk.kernels.scalar import storage_type
from aotk.lowering.op_memo import OpMemo
from aotk.lowering.workspace_liveness import Liveness
from aotk.lowering.workspace_plan import WorkspacePlan

ALIGN = 64


def flat_memref(t: Attribute) -> MemRefType[Attribute]:
    """The flat buffer type of a tensor type."""
    dims = [d for d in shape_of(t) if d is not None]
    size = math.prod(dims) if len(dims) == len(shape_of(t)) else DYNAMIC_INDEX
    return flat_memref_type(storage_type(elem_of(t)), size)


def dynamic_dims(fn: func.FuncOp) -> list[tuple[int, int]]:
    """(argument, axis) of every dynamic input dim, in kernel-argument order."""
    return [
        (i, axis)
        for i, t in enumerate(fn.function_type.inputs)
        for axis, d in enumerate(shape_of(t))
        if d is None
    ]


class Bufferizer:
    """Bufferizes one function; `code=False` only plans the workspace, with overflow
    checks on its run-time sizes when `checked`."""

    def __init__(self, fn: func.FuncOp, block: Block, code: bool, checked: bool = False):
        self.fn, self.code = fn, code
        builder = Builder(InsertPoint.at_end(block))
        self.k = SizeKernel(builder) if checked else Kernel(builder)
        self.bufs: dict[SSAValue, Buf] = {}
        self.plan = WorkspacePlan()
        self.live = Liveness(self.plan)
        self.live.start(fn.body.block)
        self._made: list[int] = []  # slices allocated while lowering the current op
        self._result_slice: dict[SSAValue, int] = {}
        self.ws: SSAValue | None = None
        self._scratch: dict[Any, Buf] = {}
        updates = variable_updates(fn)
        self.in_place = in_place_updates(fn, updates)  # output indices
        self.overwritten = overwritten(fn, updates, self.in_place)
        self.memo: OpMemo | None = None  # set for code

    def dims_from_args(self, dim_args: list[SSAValue]) -> dict[tuple[int, int], SSAValue]:
        dims: dict[tuple[int, int], SSAValue] = {
            key: self.k.b.insert(arith.IndexCastOp(a, INDEX)).result
            for key, a in zip(dynamic_dims(self.fn), dim_args, strict=True)
        }
        for key, value in dims.items():
            self.plan.keys.name(value, key)
        # arena bases go here, once the arenas' sizes are known (`WorkspacePlan`)
        self.plan.start_at(self.k.b.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))))
        return dims

    def bind_input(
        self,
        value: SSAValue,
        mem: SSAValue | None,
        index: int,
        dims: dict[tuple[int, int], SSAValue],
    ) -> None:
        shape = shape_of(value.type)
        buf_dims = tuple(dims[(index, a)] if d is None else d for a, d in enumerate(shape))
        self.bufs[value] = Buf(mem if mem is not None else value, buf_dims, elem_of(value.type))

    def alloc(self, t: Attribute, dims: list[DimV]) -> Buf:
        item = dtypes.byte_size(elem_of(t))

        def padded() -> DimV:
            size = self.k.mul(self.k.product(dims), item)
            # rounded up to ALIGN, unless its static factor makes it a multiple already
            static = math.prod(d for d in dims if isinstance(d, int)) * item
            return size if static % ALIGN == 0 else self.k.round_up(size, ALIGN)

        place = self.plan.take(self.k, dims, item, padded)
        self._made.append(place)
        if self.ws is None:  # planning the workspace size only
            return Buf(self.k.index(0), tuple(dims), elem_of(t))
        offset = self.k.index(self.plan.offset(self.k, place))
        at = self.k.moved(self.ws, offset)
        assert isinstance(at.owner, Operation)
        at.owner.attributes[metadata.ALLOCATION] = UnitAttr()  # its own class (`aliasing`)
        return Buf(self.k.memref_at(at, flat_memref(t)), tuple(dims), elem_of(t))

    def result_dims(self, op: Any, ins: list[Buf]) -> list[DimV]:
        t = op.results[0].type
        static = shape_of(t)
        if None not in static:
            return list(static)  # type: ignore[arg-type]
        opdef = lookup(op)
        if opdef.kind is Kind.ELEMENTWISE:
            return elementwise_nest.broadcast_dims(self.k, static, ins)
        assert opdef.shape is not None, f"{op.name} has a dynamic result but no shape rule"
        computed = opdef.shape(self.k, [b.dims for b in ins], **op.attrs())
        return [s if s is not None else d for s, d in zip(static, computed, strict=True)]

    def scratch(self, op: Any, ins: list[Buf]) -> dict[str, Buf]:
        """A workspace slice for ops whose lowering asks for scratch memory."""
        if op in self._scratch:  # planned before a loop that now emits the op
            return {"scratch": self._scratch[op]}
        rule = lookup(op).scratch
        size = rule(self.k, ins, op.results[0].type, **op.attrs()) if rule is not None else 0
        if size == 0:
            return {}
        self._scratch[op] = self.alloc(tensor(elem_of(op.results[0].type), (None,)), [size])
        return {"scratch": self._scratch[op]}

    def bind_results(
        self, op: Any, dims: Sequence[DimV], targets: dict[SSAValue, Buf]
    ) -> list[Buf]:
        """The buffers of `op`'s results: an output's own buffer if `targets` names one,
        else a workspace slice."""
        outs = []
        for r in op.results:
            target = targets.get(r)
            if target is None:
                target = self.alloc(r.type, list(dims))
                self._result_slice[r] = self._made[-1]
            outs.append(Buf(target.mem, tuple(dims), target.elem))
        for r, o in zip(op.results, outs, strict=True):
            self.bufs[r] = o
        return outs

    def lower_top(self, at: int, op: Any, out_targets: dict[SSAValue, Buf]) -> None:
        """Lower op `at` of the function's block, then free the workspace slices that
        died with it (`workspace_plan`)."""
        self._made = []
        self.lower_op(op, out_targets)
        self.live.settle(at, {r: self._holds(op, r, out_targets) for r in op.results}, self._made)

    def _holds(self, op: Any, r: SSAValue, out_targets: dict[SSAValue, Buf]) -> frozenset[int]:
        """The slices result `r` of top-level `op` lives on: its own, none when it was
        computed into an output, or (a view) its source's; for a result of an op with
        regions bound otherwise (a scan's carry), whatever the op allocated or its
        operands hold."""
        if r in self._result_slice:
            return frozenset({self._result_slice[r]})
        target = out_targets.get(r)
        if target is not None and self.bufs[r].mem is target.mem:
            return frozenset()  # computed into an output (a weight updated in place)
        if lookup(op).kind is Kind.REGION:
            return frozenset(self._made).union(*(self.live.holds(v) for v in op.operands))
        if not op.operands:
            return frozenset()
        return self.live.holds(op.operands[0])

    def lower_op(self, op: Any, out_targets: dict[SSAValue, Buf]) -> None:
        opdef = lookup(op)
        if opdef.kind is Kind.REGION:
            assert opdef.lower is not None, f"{op.name} has no lowering rule"
            opdef.lower(self, op, out_targets)
            return
        ins = [self.bufs[v] for v in op.operands]
        dims = self.result_dims(op, ins)
        if strided_views.is_view(op) and op.operands[0] not in self.overwritten:
            self.bufs[op.results[0]] = strided_views.bind(self.k, op, ins[0], dims, self.code)
            return
        if opdef.kind is Kind.VIEW:
            self.bufs[op.results[0]] = Buf(ins[0].mem, tuple(dims), ins[0].elem)
            return
        outs = self.bind_results(op, dims, out_targets)
        if opdef.kind is Kind.ELEMENTWISE:
            self.emit_elementwise(op, outs, ins, lambda k, xs: [lower_scalar(k, op, xs)])
            return
        scratch = self.scratch(op, ins)
        bufs = [*outs, *ins, *scratch.values()]
        assert opdef.lower is not None, f"{op.name} has no lowering rule"
        lower = opdef.lower
        self.emit_loops(op, bufs, lambda: lower(self.k, outs[0], *ins, **op.attrs(), **scratch))

    def emit_elementwise(
        self, op: Operation, outs: Sequence[Buf], ins: Sequence[Buf], body: BodyFn
    ) -> None:
        """Emit `op`'s elementwise loop nest, `body(k, input scalars) -> output scalars`,
        on its buffers: as a function of their sizes that ops alike share
        (`generic_loops`); nothing while only the workspace is planned."""
        if not self.code:
            return
        assert self.memo is not None
        n = len(outs)

        def emit(k: Kernel, bufs: Sequence[Buf]) -> None:
            elementwise_nest.emit(k, bufs[:n], bufs[n:], body)

        self.memo.lower_generic(self.k, op, [*outs, *ins], emit)

    def emit_loops(self, op: Operation, bufs: Sequence[Buf], emit: Callable[[], None]) -> None:
        """Emit `op`'s loops on `bufs` by `emit()`, or call those of an op lowered alike
        (`op_memo`); nothing while only the workspace is planned."""
        if self.code:
            assert self.memo is not None
            self.memo.lower(self.k, op, bufs, emit)
