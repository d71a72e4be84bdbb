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
from xdsl.ir import Attribute
from xdsl.passes import ModulePass
from xdsl.transforms.convert_ptr_to_llvm import (
    ConvertFromPtrOp,
    ConvertLoadOp,
    ConvertStoreOp,
    ConvertToPtrOp,
)

from aotk.transforms.rewrite_once import retype_values, rewrite_once


def _llvm(t: Attribute) -> Attribute | None:
    return llvm.LLVMPointerType() if isinstance(t, ptr.PtrType) else None


def retype_pointers(module: ModuleOp) -> None:
    """Give every `!ptr_xdsl.ptr` value and signature the type `!llvm.ptr`."""
    retype_values(module, _llvm)
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            old = op.function_type
            inputs = [_llvm(t) or t for t in old.inputs]
            outputs = [_llvm(t) or t for t in old.outputs]
            if inputs != list(old.inputs) or outputs != list(old.outputs):
                op.function_type = FunctionType.from_lists(inputs, outputs)


@dataclass(frozen=True)
class AotkPtrToLLVMPass(ModulePass):
    """Lower ptr_xdsl to llvm."""

    name = "aotk-ptr-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [ConvertStoreOp(), ConvertLoadOp(), ConvertToPtrOp(), ConvertFromPtrOp()]
        rewrite_once(op, patterns)
        retype_pointers(op)
