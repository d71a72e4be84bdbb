"""`convert-aotk-to-loops`: bufferize `func.func`s on aotk tensors into loops on memrefs.

Expects aotk ops (fused or not) on tensors. Leaves no `aotk.*` op: each function becomes
`@f(inputs..., outputs..., workspace, dims...)` on flat memrefs, whose dynamic dims come
in as i64 arguments, plus `@f_workspace_size(dims...) -> i64` (-1 when a size overflows)
and `@f_output_dims`. Kernels never allocate: intermediates are 64-byte aligned slices of
the caller's workspace, a slice taken again once its values are dead (`workspace_plan`);
the three functions plan it apart and must agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, ptr
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    TensorType,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.utils.exceptions import DiagnosticException

from aotk.dialect import metadata
from aotk.dialect.base import elem_of, located, shape_of
from aotk.dialect.registry import Kind, is_registered, kind_of
from aotk.dialect.update_in_place import variable_updates
from aotk.ir_walk import ops_within
from aotk.kernels import library
from aotk.kernels.checked_sizes import SizeKernel
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.lowering.aliasing import EntryAliasing
from aotk.lowering.bufferize import Bufferizer, dynamic_dims, flat_memref
from aotk.lowering.op_memo import OpMemo


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
    low = Bufferizer(fn, block, code=True)
    low.ws = block.args[len(ins) + len(outs)]
    aliasing = EntryAliasing.of_arguments(block.args, aliased, low.ws)
    low.memo = OpMemo(block, fn.sym_name.data, aliasing)
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


def _plan(fn: func.FuncOp, block: Block, checked: bool) -> Bufferizer:
    """Walk `fn` without emitting loops: sizes of every buffer, from `block`'s dim args."""
    low = Bufferizer(fn, block, code=False, checked=checked)
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
    shape rules live in one place: the same planning pass the kernel is built from. When
    every output's type is static (a training step's loss and weights), the types are
    its dims and nothing is planned.
    """
    n_dims = len(dynamic_dims(fn))
    block = Block(arg_types=[*[i64] * n_dims, ptr.PtrType()])
    returned = _returned(fn)
    static = [shape_of(v.type) for v in returned]
    if all(None not in shape for shape in static):
        k, taken = Kernel(Builder(InsertPoint.at_end(block))), []
        out_dims: list[DimV] = [d for shape in static for d in shape if d is not None]
    else:
        low = _plan(fn, block, checked=False)  # its callers check the workspace size first
        k, taken = low.k, low.plan.taken
        out_dims = [d for v in returned for d in low.bufs[v].dims]
    mem = k.b.insert(ptr.FromPtrOp(block.args[n_dims], MemRefType(i64, [DYNAMIC_INDEX]))).res
    out = Buf(mem, (len(out_dims),), i64)
    for j, d in enumerate(out_dims):
        value = k.b.insert(arith.IndexCastOp(k.index(d), i64)).result
        k.store_flat(out, j, value)
    k.b.insert(func.ReturnOp())
    name = f"{fn.sym_name.data}_output_dims"
    return func.FuncOp(name, ([*[i64] * n_dims, ptr.PtrType()], []), Region(block)), taken


def _stage_updates(low: Bufferizer, fn: func.FuncOp) -> list[Buf]:
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
