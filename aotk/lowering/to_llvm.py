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
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnitAttr,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aotk.lowering.arith_to_llvm import ArithToLLVM
from aotk.lowering.printf import declare_external_callees
from aotk.lowering.vector_to_llvm import VECTOR_PATTERNS


class IndexToI64(RewritePattern):
    """index is 64 bits on every host aotk targets.

    Only SSA value types need it (constants are built as i64), so this is much cheaper
    than a generic TypeConversionPattern, which inspects every attribute of every op.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        for r in op.results:
            if isinstance(r.type, IndexType):
                rewriter.replace_value_with_new_type(r, i64)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    if isinstance(arg.type, IndexType):
                        rewriter.replace_value_with_new_type(arg, i64)


class FuncToLLVM(RewritePattern):
    """func.func -> llvm.func with external linkage; pointer args are noalias."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.FuncOp, rewriter: PatternRewriter, /) -> None:
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
        may_alias = op.attributes.get("aotk.may_alias")
        shared = (
            {int(i) for i in may_alias.data.split(",")}
            if isinstance(may_alias, StringAttr)
            else set()
        )
        if any(isinstance(t, llvm.LLVMPointerType) for t in inputs):
            new.arg_attrs = ArrayAttr(
                [
                    DictionaryAttr({"llvm.noalias": UnitAttr()})
                    if isinstance(t, llvm.LLVMPointerType) and i not in shared
                    else DictionaryAttr({})
                    for i, t in enumerate(inputs)
                ]
            )
        rewriter.replace(op, new)


class ReturnToLLVM(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.ReturnOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(op, llvm.ReturnOp(op.arguments[0] if op.arguments else None))


class CallToLLVM(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: func.CallOp, rewriter: PatternRewriter, /) -> None:
        ret = op.result_types[0] if op.result_types else None
        rewriter.replace(op, llvm.CallOp(op.callee.string_value(), *op.arguments, return_type=ret))


class BranchToLLVM(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(op, llvm.BrOp(op.successor, *op.arguments))


class CondBranchToLLVM(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /) -> None:
        rewriter.replace(
            op,
            llvm.CondBrOp(
                op.cond, op.then_block, op.then_arguments, op.else_block, op.else_arguments
            ),
        )


def _element_bytes(t: Attribute) -> int:
    if isinstance(t, VectorType):
        t = t.element_type
    assert isinstance(t, FixedBitwidthType)
    return t.size


class NaturalAlignment(RewritePattern):
    """Give every load and store the alignment of one element.

    Without it LLVM assumes a vector type's ABI alignment (32 bytes for <8 x float>), so
    only element alignment is required of the caller's buffers, as NumPy guarantees.
    """

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, llvm.LoadOp | llvm.StoreOp) or op.alignment is not None:
            return
        value_type = op.dereferenced_value.type if isinstance(op, llvm.LoadOp) else op.value.type
        op.alignment = IntegerAttr(_element_bytes(value_type), 64)
        rewriter.handle_operation_modification(op)


@dataclass(frozen=True)
class ConvertAotkStdToLLVMPass(ModulePass):
    """Lower func/cf/arith/math to llvm and index to i64."""

    name = "convert-aotk-std-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [
                    ArithToLLVM(),
                    *VECTOR_PATTERNS,
                    ReturnToLLVM(),
                    CallToLLVM(),
                    BranchToLLVM(),
                    CondBranchToLLVM(),
                ]
            ),
            apply_recursively=False,
        ).rewrite_module(op)
        PatternRewriteWalker(IndexToI64(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(NaturalAlignment(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(FuncToLLVM(), apply_recursively=False).rewrite_module(op)
        declare_external_callees(op)  # the runtime calls of aotk.print_tensor
