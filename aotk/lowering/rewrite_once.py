"""One-sweep pattern application, and aotk's one-sweep forms of xDSL's conversion passes.

xDSL's `PatternRewriteWalker` keeps a worklist, asks of every op whether it is dead
before matching, and, once a sweep changed anything, sweeps the whole module again to
find nothing left. A conversion whose patterns each rewrite one op into ops no pattern
of the pass matches needs none of that: one sweep in program order does all the work.
Driven so, xDSL's own scf-to-cf patterns give the same IR (the tests compare) in about
half the time on aotk's kernels (`scf_to_cf.py`); `convert-aotk-std-to-llvm` uses it too.
Dead ops are left to LLVM, which removes them anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Attribute, Operation
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern
from xdsl.rewriter import InsertPoint, Rewriter

from aotk.ir_walk import ops_within


def rewrite_once(root: Operation, patterns: Sequence[RewritePattern]) -> None:
    """Offer each op nested in `root`, in program order, to `patterns` until one rewrites
    it. Ops the rewrites create are not offered; ops they erase are skipped."""
    ops = ops_within(root)[1:]
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
    for op in ops_within(root):
        for result in list(op.results):
            if (new := convert(result.type)) is not None:
                Rewriter.replace_value_with_new_type(result, new)
        for region in op.regions:
            for block in region.blocks:
                for arg in list(block.args):
                    if (new := convert(arg.type)) is not None:
                        Rewriter.replace_value_with_new_type(arg, new)
