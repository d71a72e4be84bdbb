"""One-sweep pattern application, and aotk's one-sweep forms of xDSL's conversion passes.

xDSL's `PatternRewriteWalker` keeps a worklist, asks of every op whether it is dead
before matching, and, once a sweep changed anything, sweeps the whole module again to
find nothing left. A conversion whose patterns each rewrite one op into ops no pattern
of the pass matches needs none of that: one sweep in program order does all the work.
Driven so, xDSL's own scf-to-cf, memory-to-ptr and reconcile-casts patterns give the
same IR (the tests compare) in about half the time on aotk's kernels. Dead ops are left
to LLVM, which removes them anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.transforms import convert_memref_to_ptr as memref_to_ptr
from xdsl.transforms import convert_scf_to_cf as scf_to_cf
from xdsl.transforms.convert_ptr_type_offsets import ConvertTypeOffsetOp
from xdsl.transforms.convert_vector_to_ptr import VectorLoadToPtr, VectorStoreToPtr
from xdsl.transforms.reconcile_unrealized_casts import ReconcileUnrealizedCastsPattern


def rewrite_once(root: Operation, patterns: Sequence[RewritePattern]) -> None:
    """Offer each op nested in `root`, in program order, to `patterns` until one rewrites
    it. Ops the rewrites create are not offered; ops they erase are skipped."""
    ops = [op for region in root.regions for op in region.walk()]
    if not ops:
        return
    rewriter = PatternRewriter(ops[0])
    for op in ops:
        if op.parent is None:  # erased by an earlier rewrite
            continue
        rewriter.current_operation = op
        rewriter.insertion_point = InsertPoint.before(op)
        rewriter.has_done_action = False
        rewriter.name_hint = None
        for pattern in patterns:
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                break


def retype_values(root: Operation, convert: Callable[[Attribute], Attribute | None]) -> None:
    """Give every result and block argument nested in `root` the type `convert` returns
    for its type (None: keep it). Only values: a generic type conversion also inspects
    every attribute of every op, and took seconds on a kernel of a few thousand ops."""
    for op in root.walk():
        for result in list(op.results):
            if (new := convert(result.type)) is not None:
                Rewriter.replace_value_with_new_type(result, new)
        for region in op.regions:
            for block in region.blocks:
                for arg in list(block.args):
                    if (new := convert(arg.type)) is not None:
                        Rewriter.replace_value_with_new_type(arg, new)


@dataclass(frozen=True)
class AotkScfToCfPass(ModulePass):
    """`convert-scf-to-cf` in one sweep: scf.for, scf.if and scf.index_switch to blocks."""

    name = "aotk-scf-to-cf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [scf_to_cf.SwitchLowering(), scf_to_cf.IfLowering(), scf_to_cf.ForLowering()]
        rewrite_once(op, patterns)


@dataclass(frozen=True)
class AotkMemRefToPtrPass(ModulePass):
    """Memory as `ptr_xdsl` pointers: xDSL's `convert-vector-to-ptr`,
    `convert-memref-to-ptr{lower_func=true}` and `convert-ptr-type-offsets`, in order."""

    name = "aotk-memref-to-ptr"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_once(op, [VectorStoreToPtr(), VectorLoadToPtr()])
        rewrite_once(
            op,
            [
                memref_to_ptr.ConvertStorePattern(),
                memref_to_ptr.ConvertLoadPattern(),
                memref_to_ptr.ConvertSubviewPattern(),
                memref_to_ptr.ConvertCastOp(),
                memref_to_ptr.ConvertReinterpretCastOp(),
            ],
        )
        rewrite_once(
            op,
            [
                memref_to_ptr.LowerMemRefFuncOpPattern(),
                memref_to_ptr.LowerMemRefFuncCallPattern(),
                memref_to_ptr.LowerMemRefFuncReturnPattern(),
            ],
        )
        rewrite_once(op, [ConvertTypeOffsetOp()])


@dataclass(frozen=True)
class AotkReconcileCastsPass(ModulePass):
    """`reconcile-unrealized-casts` in one sweep."""

    name = "aotk-reconcile-casts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        rewrite_once(op, [ReconcileUnrealizedCastsPattern(warn_on_failure=True)])
