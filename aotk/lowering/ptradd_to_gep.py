"""`aotk-ptradd-to-gep`: pointer arithmetic as `getelementptr inbounds i8`.

Upstream `convert-ptr-to-llvm` builds addresses with ptrtoint/add/inttoptr, which hides
them from LLVM's alias and induction analyses, and nothing gets vectorized. A GEP keeps
the base pointer visible. Run it before `convert-ptr-to-llvm`; it leaves no ptradd.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, ptr
from xdsl.dialects.builtin import IndexType, ModuleOp, UnrealizedConversionCastOp, i8, i64
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from aotk.transforms.rewrite_once import rewrite_once


class PtrAddToGEP(RewritePattern):
    """ptr_xdsl.ptradd %p, %bytes -> llvm.getelementptr inbounds i8, %p[%bytes]."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ptr.PtrAddOp, rewriter: PatternRewriter, /) -> None:
        if op.result.first_use is None:  # a subview's pointer nothing loads from
            rewriter.erase(op)
            return
        to_llvm = UnrealizedConversionCastOp.get([op.addr], [llvm.LLVMPointerType()])
        offset = op.offset
        new_ops: list[Operation] = [to_llvm]
        if isinstance(offset.type, IndexType):
            cast = arith.IndexCastOp(offset, i64)
            new_ops.append(cast)
            offset = cast.result
        gep = llvm.GEPOp.from_mixed_indices(to_llvm.results[0], [offset], i8, inbounds=True)
        back = UnrealizedConversionCastOp.get([gep.result], [ptr.PtrType()])
        rewriter.replace(op, [*new_ops, gep, back], back.results)


@dataclass(frozen=True)
class AotkPtrAddToGEPPass(ModulePass):
    """Rewrite every ptr_xdsl.ptradd into an inbounds i8 GEP."""

    name = "aotk-ptradd-to-gep"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_once(op, [PtrAddToGEP()])
