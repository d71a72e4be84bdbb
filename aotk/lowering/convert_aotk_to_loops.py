"""`convert-aotk-to-loops`: bufferize `func.func`s on aotk tensors into loops on memrefs.

Expects aotk ops (fused or not) on tensors. Leaves no `aotk.*` op: each function becomes
`@f(inputs..., outputs..., workspace, dims...)` on flat memrefs, whose dynamic dims come
in as i64 arguments, plus `@f_workspace_size(dims...) -> i64` (-1 when a size overflows)
and `@f_output_dims`. Kernels never allocate: intermediates are 64-byte aligned slices of
the caller's workspace, a slice taken again once its values are dead (`workspace_plan`);
the three functions plan it apart and must agree.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, ptr
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from aotk import dtypes
from aotk.dialect import metadata, strided_views
from aotk.dialect.base import elem_of, located, shape_of, tensor
from aotk.dialect.elementwise import lower_scalar
from aotk.dialect.registry import Kind, is_registered, kind_of, lookup
from aotk.dialect.update_in_place import in_place_updates, overwritten, variable_updates
from aotk.ir_walk import ops_within
from aotk.kernels import elementwise_nest, library
from aotk.kernels.checked_sizes import SizeKernel
from aotk.kernels.elementwise_nest import BodyFn
from aotk.kernels.kernel import INDEX, PTR, Buf, DimV, Kernel
from aotk.kernels.make import flat_memref_type, make
from aotk.kernels.scalar import storage_type
from aotk.lowering.op_memo import OpMemo
from aotk.lowering.outline_kernels import EntryAliasing
from aotk.lowering.workspace_liveness import Liveness
from aotk.lowering.workspace_plan import WorkspacePlan

ALIGN = 64


def flat_memref(t: Attribute) -> MemRefType[Attribute]:
    """The flat buffer type of a tensor type."""
    shape = shape_of(t)
    size = DYNAMIC_INDEX if None in shape else _prod(shape)
    return flat_memref_type(storage_type(elem_of(t)), size)


def dynamic_dims(fn: func.FuncOp) -> list[tuple[int, int]]:
    """(argument, axis) of every dynamic input dim, in kernel-argument order."""
    return [
        (i, axis)
        for i, t in enumerate(fn.function_type.inputs)
        for axis, d in enumerate(shape_of(t))
        if d is None
    ]


class _Lowerer:
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
        p = self.k.b.insert(make(ptr.PtrAddOp, [self.ws, offset], [PTR])).results[0]
        mem = self.k.b.insert(make(ptr.FromPtrOp, [p], [flat_memref(t)])).results[0]
        return Buf(mem, tuple(dims), elem_of(t))

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


def lower_function(fn: func.FuncOp) -> list[func.FuncOp]:
    """The kernel (and the loops its ops share) and workspace-size functions of one aotk
    function."""
    kernel, taken = _kernel(fn)
    size, size_taken = _workspace_size(fn)
    dims, dims_taken = _output_dims(fn)
    # the kernel's buffers must be where its size was computed for them (output dims
    # stop before the final copies)
    assert taken == size_taken and taken[: len(dims_taken)] == dims_taken, "plans differ"
    return [*kernel, size, dims]


def _kernel(fn: func.FuncOp) -> tuple[list[func.FuncOp], list[Any]]:
    ins, outs = fn.function_type.inputs.data, fn.function_type.outputs.data
    n_dims = len(dynamic_dims(fn))
    block = Block(
        arg_types=[*(flat_memref(t) for t in [*ins, *outs]), ptr.PtrType(), *[i64] * n_dims]
    )
    in_args, out_args = block.args[: len(ins)], block.args[len(ins) : len(ins) + len(outs)]
    aliased = [
        i for out, arg in variable_updates(fn).items() for i in (arg, len(ins) + out) if i >= 0
    ]
    low = _Lowerer(fn, block, code=True)
    low.memo = OpMemo(block, fn.sym_name.data, EntryAliasing.of_arguments(block.args, aliased))
    low.ws = block.args[len(ins) + len(outs)]
    dims = low.dims_from_args(list(block.args[len(ins) + len(outs) + 1 :]))
    for i, (arg, mem) in enumerate(zip(fn.body.block.args, in_args, strict=True)):
        low.bind_input(arg, mem, i, dims)
    returned = _returned(fn)
    targets = _output_targets(fn, list(out_args), low.in_place)
    for at, op in enumerate(fn.body.block.ops):
        if not isinstance(op, func.ReturnOp):
            low.lower_top(at, op, targets)
    sources = _stage_updates(low, fn)
    for v, src, out in zip(returned, sources, out_args, strict=True):
        if src.mem is not out:  # computed elsewhere, or into another output
            low.k.copy(src, Buf(out, src.dims, elem_of(v.type)))
    low.k.b.insert(func.ReturnOp())
    low.memo.finish()
    low.plan.finish(low.k)
    kernel = func.FuncOp(fn.sym_name.data, (list(block.arg_types), []), Region(block))
    _name_args(kernel, fn, len(ins), len(outs))
    if aliased:
        metadata.set_ints(kernel, metadata.MAY_ALIAS, sorted(aliased))
    return [kernel, *low.memo.functions], low.plan.taken


def _plan(fn: func.FuncOp, block: Block, checked: bool) -> _Lowerer:
    """Walk `fn` without emitting loops: sizes of every buffer, from `block`'s dim args."""
    low = _Lowerer(fn, block, code=False, checked=checked)
    dims = low.dims_from_args(list(block.args[: len(dynamic_dims(fn))]))
    for i, arg in enumerate(fn.body.block.args):
        low.bind_input(arg, None, i, dims)
    outputs = [low.k.index(0)] * len(fn.function_type.outputs)
    targets = _output_targets(fn, outputs, low.in_place)
    for at, op in enumerate(fn.body.block.ops):
        if not isinstance(op, func.ReturnOp):
            low.lower_top(at, op, targets)
    low.plan.finish(low.k)
    return low


def _workspace_size(fn: func.FuncOp) -> tuple[func.FuncOp, list[Any]]:
    n_dims = len(dynamic_dims(fn))
    block = Block(arg_types=[i64] * n_dims)
    low = _plan(fn, block, checked=True)
    _stage_updates(low, fn)
    assert isinstance(low.k, SizeKernel)
    size = low.plan.size(low.k)
    low.k.check(size)
    total = low.k.b.insert(arith.IndexCastOp(low.k.index(size), i64)).result
    if low.k.overflowed is not None:  # -1: some size overflows at these dims
        minus_one = low.k.b.insert(arith.ConstantOp(IntegerAttr(-1, i64))).result
        total = low.k.b.insert(arith.SelectOp(low.k.overflowed, minus_one, total)).result
    low.k.b.insert(func.ReturnOp(total))
    name = f"{fn.sym_name.data}_workspace_size"
    return func.FuncOp(name, ([i64] * n_dims, [i64]), Region(block)), low.plan.taken


def _output_dims(fn: func.FuncOp) -> tuple[func.FuncOp, list[Any]]:
    """`@f_output_dims(dims..., out)`: writes every output's dims, in order, as i64 to `out`.

    An exported library sizes and checks its callers' output buffers with it, so the
    shape rules live in one place: the same planning pass the kernel is built from.
    """
    n_dims = len(dynamic_dims(fn))
    block = Block(arg_types=[*[i64] * n_dims, ptr.PtrType()])
    low = _plan(fn, block, checked=False)  # its callers check the workspace size first
    out_dims = [d for v in _returned(fn) for d in low.bufs[v].dims]
    mem = low.k.b.insert(ptr.FromPtrOp(block.args[n_dims], MemRefType(i64, [DYNAMIC_INDEX]))).res
    out = Buf(mem, (len(out_dims),), i64)
    for j, d in enumerate(out_dims):
        value = low.k.b.insert(arith.IndexCastOp(low.k.index(d), i64)).result
        low.k.store_flat(out, j, value)
    low.k.b.insert(func.ReturnOp())
    name = f"{fn.sym_name.data}_output_dims"
    return func.FuncOp(name, ([*[i64] * n_dims, ptr.PtrType()], []), Region(block)), low.plan.taken


def _stage_updates(low: _Lowerer, fn: func.FuncOp) -> list[Buf]:
    """The buffer each output is copied from; new variable values that still live in an
    input buffer are first copied aside, since the final copies may overwrite that input
    (`update(a, b), update(b, a)` must swap)."""
    inputs = {low.bufs[arg].mem for arg in fn.body.block.args}
    updates = variable_updates(fn)
    sources = []
    for i, v in enumerate(_returned(fn)):
        buf = low.bufs[v]
        if i in updates and buf.mem in inputs:
            staged = low.alloc(v.type, list(buf.dims))
            if low.code:
                low.k.copy(buf, staged)
            buf = staged
        sources.append(buf)
    return sources


def _returned(fn: func.FuncOp) -> list[SSAValue]:
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    return list(ret.arguments)


def _output_targets(
    fn: func.FuncOp, out_mems: list[SSAValue], in_place: set[int]
) -> dict[SSAValue, Buf]:
    """Results computed straight into an output buffer (the first return of each).

    An output that is a view (a reshape) of a value computed here has that value
    computed into its buffer, which the view then aliases: `K.repeat_elements` or a
    final `K.reshape` would otherwise copy the whole result once more. A variable's new
    value is one only when it can be written in place (`update_in_place`; a view never
    is); otherwise the variable's buffer is also an input that later ops may still
    read, so the value is computed aside and copied in at the very end.
    """
    late = {i for i in variable_updates(fn) if i not in in_place}
    targets: dict[SSAValue, Buf] = {}
    for i, (v, out) in enumerate(zip(_returned(fn), out_mems, strict=True)):
        source = _view_source(v)
        if (
            i not in late
            and source not in targets
            and kind_of(source.owner) not in (None, Kind.VIEW)
        ):
            targets[source] = Buf(out, (), elem_of(source.type))
    return targets


def _view_source(value: SSAValue) -> SSAValue:
    """The value whose buffer `value` aliases through views (itself if it is none)."""
    while kind_of(value.owner) is Kind.VIEW:
        assert isinstance(value.owner, Operation)
        value = value.owner.operands[0]
    return value


def _name_args(kernel: func.FuncOp, fn: func.FuncOp, n_in: int, n_out: int) -> None:
    names = [a.name_hint or f"in{i}" for i, a in enumerate(fn.body.block.args)]
    for i, arg in enumerate(kernel.body.block.args):
        if i < n_in:
            arg.name_hint = names[i]
        elif i < n_in + n_out:
            arg.name_hint = f"out{i - n_in}"
        elif i == n_in + n_out:
            arg.name_hint = "workspace"
        else:
            arg.name_hint = f"dim{i - n_in - n_out - 1}"
    metadata.set_ints(kernel, metadata.KERNEL, (n_in, n_out))


def _prod(shape: Any) -> int:
    out = 1
    for d in shape:
        out *= d
    return out


@dataclass(frozen=True)
class ConvertAotkToLoopsPass(ModulePass):
    """Bufferize aotk functions into scf/arith/memref loops on caller-owned buffers."""

    name = "convert-aotk-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [f for f in op.ops if isinstance(f, func.FuncOp) and _on_tensors(f)]:
            if fn.is_declaration:
                raise DiagnosticException(
                    located(fn, f"@{fn.sym_name.data} on tensors has no body to lower")
                )
            new = lower_function(fn)
            op.body.block.insert_ops_before(new, fn)
            fn.detach()
            fn.erase()
        library.declare_called(op)


def _on_tensors(fn: func.FuncOp) -> bool:
    """Whether `fn` is aotk's to lower: it has tensors or aotk ops, or it is a traced
    function (one of nothing to nothing, `K.function([], [])`, still gets its entry
    points)."""
    types = [*fn.function_type.inputs, *fn.function_type.outputs]
    return (
        metadata.ARG_NAMES in fn.attributes
        or any(isinstance(t, TensorType) for t in types)
        or any(is_registered(o) for o in ops_within(fn))
    )


__all__ = ["ConvertAotkToLoopsPass", "IntegerAttr", "flat_memref", "lower_function"]
