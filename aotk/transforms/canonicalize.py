"""`aotk-canonicalize`: xDSL's canonicalization patterns and folders, with cheap dead code.

xDSL's `canonicalize` asks, before it rewrites each op, whether the op is dead. For an
op without results (a store, a loop) the answer needs the memory effects of everything
it holds, so each loop nest is walked once per enclosing loop, and a region-wide dead
code pass follows: half of its time on aotk's loops. Here an op is dead only when it
has results, none used, no regions, and an op of its kind has no effect beyond its
results (decided once per kind); one backward sweep per block removes them, users
before what they use. Loops and stores are never removed, which only leaves LLVM
the (rare) empty loop to delete. Constants leave loop nests without a module sweep per
level, and index arithmetic without a constant operand is not offered to its folder.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.folder import Folder
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.traits import ConstantLike, HasCanonicalizationPatternsTrait, HasFolder
from xdsl.transforms.canonicalization_patterns.scf import RehoistConstInLoops
from xdsl.transforms.dead_code_elimination import would_be_trivially_dead

from aotk.ir_walk import ops_in_region
from aotk.transforms import fold_integers

_PURE: dict[type[Operation], bool] = {}
_CONSTANT: dict[type[Operation], bool] = {}
_PATTERNS: dict[type[Operation], tuple[bool, tuple[RewritePattern, ...]]] = {}


def _rules(kind: type[Operation], op: Operation) -> tuple[bool, tuple[RewritePattern, ...]]:
    """Whether ops of `kind` fold, and their canonicalization patterns (looked up once:
    the trait lookups cost more than most patterns)."""
    if kind not in _PATTERNS:
        folds = op.has_trait(HasFolder, value_if_unregistered=False) and not op.has_trait(
            ConstantLike, value_if_unregistered=True
        )
        traits = op.get_traits_of_type(HasCanonicalizationPatternsTrait)
        patterns = (p for t in traits for p in t.get_patterns(kind))
        _PATTERNS[kind] = (folds, tuple(_FASTER.get(type(p), p) for p in patterns))
    return _PATTERNS[kind]


class _HoistLoopConstants(RewritePattern):
    """xDSL's `RehoistConstInLoops` (a copy of each constant of a loop's body before the
    loop, in order), with whether an op is a constant decided once per kind: asked of
    every op of every loop body, the trait lookup was a fifth of this pass."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        assert isinstance(op, scf.ForOp)
        for child in list(op.body.block.ops):
            if _is_constant(child):
                rewriter.insert(copy := child.clone())
                rewriter.replace(child, (), copy.results)


_FASTER: dict[type[RewritePattern], RewritePattern] = {RehoistConstInLoops: _HoistLoopConstants()}


@dataclass
class _Canonicalize(RewritePattern):
    """Fold an op, or else apply the first canonicalization pattern that matches."""

    folder: Folder

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, arith.SignlessIntegerBinaryOperation) and not _has_constant(op):
            return  # its folder and both its patterns need a constant operand
        if fold_integers.folds(op):
            fold_integers.fold(op, rewriter)
            if rewriter.has_done_action:
                return
        folds, patterns = _rules(type(op), op)
        if folds and (folded := self.folder.try_fold(op)) is not None:
            values, new_ops = folded
            rewriter.replace(op, new_ops=new_ops, new_results=values)
            return
        for pattern in patterns:
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


def _has_constant(op: Operation) -> bool:
    """Whether an operand comes from a constant-like op (index arithmetic, the most
    common op in loops, mostly has none; finding that out the generic way costs)."""
    for operand in op.operands:
        owner = operand.owner
        if isinstance(owner, Operation) and _is_constant(owner):
            return True
    return False


def _is_constant(op: Operation) -> bool:
    kind = type(op)
    constant = _CONSTANT.get(kind)
    if constant is None:
        constant = _CONSTANT[kind] = op.has_trait(ConstantLike)
    return constant


def _removable(op: Operation) -> bool:
    if not op.results or op.regions or any(r.first_use is not None for r in op.results):
        return False
    kind = type(op)
    if kind not in _PURE:
        _PURE[kind] = would_be_trivially_dead(op)
    return _PURE[kind]


def remove_dead(block: Block) -> None:
    """Erase the dead ops of `block` and of the blocks nested in it."""
    op = block.last_op
    while op is not None:
        before = op.prev_op
        if _removable(op):
            block.erase_op(op)
        else:
            for region in op.regions:
                for inner in region.blocks:
                    remove_dead(inner)
        op = before


def _settle_loops(region: Region, canonicalize: _Canonicalize) -> bool:
    """Apply the loop patterns to every scf.for, outer loops first, until none applies.

    A constant deep in a loop nest is hoisted one loop per application, and the walker
    sweeps the whole module again for each level (four sweeps on an RNN's loops); here
    only the loops are swept again. Whether anything changed: if so, the walker sweeps
    once more, as it would have, so the IR is what xDSL's canonicalize makes."""
    changed = False
    while True:
        swept = False
        for loop in [o for o in ops_in_region(region) if isinstance(o, scf.ForOp)]:
            if loop.parent is None:  # inlined or erased by an outer loop's rewrite
                continue
            rewriter = PatternRewriter(loop)
            canonicalize.match_and_rewrite(loop, rewriter)
            swept |= rewriter.has_done_action
        if not swept:
            return changed
        changed = True


@dataclass(frozen=True)
class AotkCanonicalizePass(ModulePass):
    """Canonicalization patterns and folding, then removal of unused pure ops."""

    name = "aotk-canonicalize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        canonicalize = _Canonicalize(Folder(ctx))

        def finish_loops(region: Region, _: PatternRewriterListener) -> bool:
            return _settle_loops(region, canonicalize)

        PatternRewriteWalker(canonicalize, post_walk_func=finish_loops).rewrite_module(op)
        for region in op.regions:
            for block in region.blocks:
                remove_dead(block)
