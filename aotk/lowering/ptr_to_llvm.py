"""`aotk-ptr-to-llvm`: `ptr_xdsl` loads, stores and pointer types -> the llvm dialect.

Reuses upstream `convert-ptr-to-llvm`'s op patterns, but retypes pointers with a direct
walk over SSA values and function signatures: the upstream TypeConversionPattern inspects
every attribute of every op and took seconds on a kernel of a few thousand ops. Expects
`aotk-ptradd-to-gep` to have run (no `ptr_xdsl.ptradd` left).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func, llvm, ptr
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.transforms.convert_ptr_to_llvm import (
    ConvertFromPtrOp,
    ConvertLoadOp,
    ConvertStoreOp,
    ConvertToPtrOp,
)

from aotk.transforms.rewrite_once import rewrite_once


def _llvm(t: Attribute) -> Attribute:
    return llvm.LLVMPointerType() if isinstance(t, ptr.PtrType) else t


class RetypePointers(RewritePattern):
    """Give every `!ptr_xdsl.ptr` value and signature the type `!llvm.ptr`."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, func.FuncOp):
            inputs = [_llvm(t) for t in op.function_type.inputs]
            outputs = [_llvm(t) for t in op.function_type.outputs]
            if inputs != list(op.function_type.inputs) or outputs != list(op.function_type.outputs):
                op.function_type = FunctionType.from_lists(inputs, outputs)
                rewriter.handle_operation_modification(op)
        for r in op.results:
            if isinstance(r.type, ptr.PtrType):
                rewriter.replace_value_with_new_type(r, llvm.LLVMPointerType())
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    if isinstance(arg.type, ptr.PtrType):
                        rewriter.replace_value_with_new_type(arg, llvm.LLVMPointerType())


@dataclass(frozen=True)
class AotkPtrToLLVMPass(ModulePass):
    """Lower ptr_xdsl to llvm."""

    name = "aotk-ptr-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [ConvertStoreOp(), ConvertLoadOp(), ConvertToPtrOp(), ConvertFromPtrOp()]
        rewrite_once(op, patterns)
        PatternRewriteWalker(RetypePointers(), apply_recursively=False).rewrite_module(op)
