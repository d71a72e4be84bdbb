"""`convert-aotk-std-to-llvm`: func, cf, arith, math and index -> the llvm dialect.

xDSL's backend converts only `llvm.*` ops, and its JIT's default lowering shells out to
MLIR's mlir-opt; this pass closes that gap. Expects memref/ptr/scf already lowered
(pointers are `!llvm.ptr`, control flow is `cf`). Leaves only `llvm.*` ops and i64 for
index. Kernel pointer arguments get `noalias`, except those listed in `aotk.may_alias` (a
variable passed both as an input and as the buffer its update is written to).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, func, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FixedBitwidthType,
    IndexType,
    ModuleOp,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import Rewriter

from aotk.dialect import metadata
from aotk.ir_walk import ops_within
from aotk.kernels.make import br_op, call_op, cond_br_op, integer, return_op
from aotk.kernels.printf import declare_external_callees
from aotk.lowering.arith_to_llvm import BUILDERS, Build
from aotk.lowering.rewrite_once import retype_values, rewrite_once
from aotk.lowering.vector_to_llvm import VECTOR_BUILDERS


def _return(op: Operation) -> list[Operation]:
    assert isinstance(op, func.ReturnOp)
    return [return_op(op.arguments[0] if op.arguments else None)]


def _call(op: Operation) -> list[Operation]:
    assert isinstance(op, func.CallOp)
    ret = op.result_types[0] if op.result_types else None
    return [call_op(op.callee.string_value(), op.arguments, ret)]


def _branch(op: Operation) -> list[Operation]:
    assert isinstance(op, cf.BranchOp)
    return [br_op(op.successor, op.arguments)]


def _cond_branch(op: Operation) -> list[Operation]:
    assert isinstance(op, cf.ConditionalBranchOp)
    return [cond_br_op(op.cond, op.then_block, op.then_arguments, op.else_block, op.else_arguments)]


LOWERINGS: dict[type[Operation], Build] = {
    **BUILDERS,
    **VECTOR_BUILDERS,
    func.ReturnOp: _return,
    func.CallOp: _call,
    cf.BranchOp: _branch,
    cf.ConditionalBranchOp: _cond_branch,
}


class _Lower(RewritePattern):
    """Replace an op of `LOWERINGS` by its llvm ops (an empty list: by its operand).
    Each op is converted once and nothing needs revisiting: one sweep does it.

    The replacement is done here, not by `rewriter.replace`: no worklist listens, and the
    rewriter's notifications were a third of this pass once ops were cheap to make. Name
    hints move as the rewriter moves them (the LLVM IR's value names come from them)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        build = LOWERINGS.get(type(op))
        if build is None:
            return
        new_ops = build(op)
        block = op.parent_block()
        assert block is not None
        if new_ops:
            block.insert_ops_before(new_ops, op)
        if op.results:
            new = new_ops[-1].results[0] if new_ops else op.operands[0]
            old = op.results[0]
            new.name_hint = new.name_hint or old.name_hint
            for inner in new_ops:
                for result in inner.results:
                    result.name_hint = result.name_hint or new.name_hint
            old.replace_all_uses_with(new)
        block.erase_op(op)
        rewriter.has_done_action = True


def _i64(t: Attribute) -> Attribute | None:
    # index is 64 bits on every host aotk targets (constants are built as i64 already)
    return i64 if isinstance(t, IndexType) else None


def _element_bytes(t: Attribute) -> int:
    if isinstance(t, VectorType):
        t = t.element_type
    assert isinstance(t, FixedBitwidthType)
    return t.size


def natural_alignment(module: ModuleOp) -> None:
    """Give every load and store the alignment of one element.

    Without it LLVM assumes a vector type's ABI alignment (32 bytes for <8 x float>), so
    only element alignment is required of the caller's buffers, as NumPy guarantees.
    """
    for op in ops_within(module):
        if isinstance(op, llvm.LoadOp | llvm.StoreOp) and op.alignment is None:
            value = op.dereferenced_value if isinstance(op, llvm.LoadOp) else op.value
            op.alignment = integer(_element_bytes(value.type), i64)


def func_to_llvm(op: func.FuncOp) -> llvm.FuncOp:
    """func.func -> llvm.func with external linkage; pointer args are noalias."""
    # block arguments carry the converted types (index -> i64); the signature may not
    inputs = [a.type for a in op.args] if op.body.blocks else list(op.function_type.inputs)
    outputs = [i64 if isinstance(t, IndexType) else t for t in op.function_type.outputs]
    if len(outputs) > 1:
        raise ValueError(
            f"convert-aotk-std-to-llvm: @{op.sym_name.data} returns {len(outputs)} values; "
            "at most one is supported"
        )
    fn_type = llvm.LLVMFunctionType(inputs, outputs[0] if outputs else None)
    # moved, not cloned: copying every kernel's body cost a fifth of this pass
    body = op.detach_region(op.body) if op.body.blocks else None
    # private (an outlined kernel or task) is not an entry point, but it stays
    # external in LLVM: a module compiled in parts calls it across them
    new = llvm.FuncOp(
        op.sym_name.data,
        fn_type,
        linkage=llvm.LinkageAttr("external"),
        sym_visibility=op.sym_visibility,
        body=body,
    )
    shared = set(metadata.ints(op, metadata.MAY_ALIAS))
    if any(isinstance(t, llvm.LLVMPointerType) for t in inputs):
        new.arg_attrs = ArrayAttr(
            [
                DictionaryAttr({"llvm.noalias": UnitAttr()})
                if isinstance(t, llvm.LLVMPointerType) and i not in shared
                else DictionaryAttr({})
                for i, t in enumerate(inputs)
            ]
        )
    return new


@dataclass(frozen=True)
class ConvertAotkStdToLLVMPass(ModulePass):
    """Lower func/cf/arith/math to llvm and index to i64."""

    name = "convert-aotk-std-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_once(op, [_Lower()])
        retype_values(op, _i64)
        natural_alignment(op)
        for fn in list(op.ops):
            if isinstance(fn, func.FuncOp):
                Rewriter.replace_op(fn, func_to_llvm(fn))
        declare_external_callees(op)  # the runtime calls of aotk.print_tensor
