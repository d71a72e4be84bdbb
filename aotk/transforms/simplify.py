"""`aotk-simplify`: algebraic clean-ups on the aotk dialect; shapes and dtypes never change.

Each pattern fires only when its result type equals the op's, so broadcasting ops are
left alone (x + 0 with a broadcast 0 still materializes the broadcast).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from aotk.dialect.arithmetic import AddOp, MulOp, SubOp
from aotk.dialect.base import shape_of
from aotk.dialect.batch_matmul import BatchMatMulOp
from aotk.dialect.elementwise import CastOp, ConstantOp, FillLikeOp
from aotk.dialect.identity import SameShapeOp, StopGradientOp
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.pool import PoolOp
from aotk.dialect.shape import ReshapeOp, SliceOp, TransposeOp, reversed_axes
from aotk.dialect.unary import NegOp
from aotk.transforms.join_unslices import JoinUnslices
from aotk.transforms.pool_first import MaxPoolFirst
from aotk.transforms.scan_last_step import LastStepIsCarry
from aotk.transforms.shape_sources import SHAPE_OPERAND, EarliestShapeSource


def _constant_value(v: SSAValue) -> float | None:
    """The value of a constant or of a tensor filled with one (autodiff's zero seeds)."""
    owner = v.owner
    return owner.attrs()["value"] if isinstance(owner, ConstantOp | FillLikeOp) else None


def _forward(rewriter: PatternRewriter, op, value: SSAValue) -> bool:
    if value.type != op.results[0].type:
        return False
    rewriter.replace(op, [], [value])
    return True


class FoldAddZero(RewritePattern):
    """x + 0 -> x, 0 + x -> x, x - 0 -> x (0 a constant or a zero-filled tensor)."""

    def match_and_rewrite(self, op, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, AddOp) and _constant_value(op.lhs) == 0:
            _forward(rewriter, op, op.rhs)
        elif isinstance(op, AddOp | SubOp) and _constant_value(op.rhs) == 0:
            _forward(rewriter, op, op.lhs)


class FoldMulOne(RewritePattern):
    """x * 1 -> x, 1 * x -> x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, MulOp):
            return
        if _constant_value(op.rhs) == 1:
            _forward(rewriter, op, op.lhs)
        elif _constant_value(op.lhs) == 1:
            _forward(rewriter, op, op.rhs)


class FoldDoubleNeg(RewritePattern):
    """-(-x) -> x."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, NegOp) and isinstance(op.x.owner, NegOp):
            _forward(rewriter, op, op.x.owner.x)


class FoldNoOpCast(RewritePattern):
    """cast to the dtype x already has -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CastOp, rewriter: PatternRewriter, /) -> None:
        _forward(rewriter, op, op.x)


class DropIdentities(RewritePattern):
    """stop_gradient(x) -> x (after autodiff it is the identity); same_shape(x, like) -> x
    (the call checked the shapes before any code runs)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if isinstance(op, StopGradientOp | SameShapeOp):
            _forward(rewriter, op, op.x)


class FoldReshapeChain(RewritePattern):
    """reshape(reshape(x)) -> reshape(x); a reshape to the same type -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ReshapeOp, rewriter: PatternRewriter, /) -> None:
        if _forward(rewriter, op, op.x):
            return
        inner = op.x.owner
        if isinstance(inner, ReshapeOp):
            rewriter.replace(op, ReshapeOp.make([inner.x], op.result.type, **op.attrs()))


class FoldIdentityTranspose(RewritePattern):
    """transpose with the identity permutation, reversing nothing -> x."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        attrs = op.attrs()
        if list(attrs["perm"]) == list(range(len(attrs["perm"]))) and "reverse" not in attrs:
            _forward(rewriter, op, op.x)


class FoldTransposeChain(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p[q]) (then x, for the identity), for
    transposes reversing nothing."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        inner = op.x.owner
        if not isinstance(inner, TransposeOp) or "reverse" in op.attrs() | inner.attrs():
            return
        first, second = inner.attrs()["perm"], op.attrs()["perm"]
        perm = tuple(first[i] for i in second)
        rewriter.replace(op, TransposeOp.make([inner.x], op.result.type, perm=perm))


class FoldReverseIntoTranspose(RewritePattern):
    """transpose(K.reverse(x, axes)) -> transpose(x) reading x back to front along `axes`:
    one pass instead of a reversed copy and its transpose (a user's form of the kernel
    of a transposed convolution)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: TransposeOp, rewriter: PatternRewriter, /) -> None:
        inner = op.x.owner
        if not isinstance(inner, SliceOp) or "reverse" in op.attrs():
            return
        axes = reversed_axes(inner.attrs())
        if axes:
            perm = op.attrs()["perm"]
            rewriter.replace(
                op, TransposeOp.make([inner.x], op.result.type, perm=perm, reverse=axes)
            )


def swapped_last_of(value: SSAValue, rank: int) -> SSAValue | None:
    """x when `value` is a transpose of x of `rank` swapping its last two axes only."""
    owner = value.owner
    swap = (*range(rank - 2), rank - 1, rank - 2)
    if isinstance(owner, TransposeOp) and owner.attrs() == {"perm": swap}:
        return owner.x
    return None


class FoldTransposeIntoMatmul(RewritePattern):
    """matmul(transpose(a), b) -> matmul(a, b) {transpose_lhs}, likewise for b and for
    batch_matmul with a transpose of each entry (perm (0, 2, 1)): the kernel reads the
    operand transposed instead of a copy being made. A transposed operand must be a
    matrix (a batch of them): an operand of another rank keeps its transpose."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, MatMulOp | BatchMatMulOp):
            return
        rank = 2 if isinstance(op, MatMulOp) else 3
        attrs = op.attrs()
        operands = [op.lhs, op.rhs]
        for index, name in enumerate(("transpose_lhs", "transpose_rhs")):
            if len(shape_of(operands[index].type)) != rank:
                continue
            source = swapped_last_of(operands[index], rank)
            if source is not None:
                operands[index] = source
                attrs[name] = not attrs.get(name, False)
        if operands != [op.lhs, op.rhs]:
            attrs = {k: v for k, v in attrs.items() if v}  # a false flag is left out
            rewriter.replace(op, type(op).make(operands, op.results[0].type, **attrs))


def _by_type() -> dict[type[Operation], tuple[RewritePattern, ...]]:
    """The patterns, in the order they are tried, by the op type each rewrites."""
    add_zero, transposes = FoldAddZero(), (FoldTransposeIntoMatmul(),)
    by_type: dict[type[Operation], tuple[RewritePattern, ...]] = {
        AddOp: (add_zero, JoinUnslices()),
        SubOp: (add_zero,),
        MulOp: (FoldMulOne(),),
        NegOp: (FoldDoubleNeg(),),
        CastOp: (FoldNoOpCast(),),
        StopGradientOp: (DropIdentities(),),
        SameShapeOp: (DropIdentities(),),
        ReshapeOp: (FoldReshapeChain(),),
        TransposeOp: (FoldIdentityTranspose(), FoldTransposeChain(), FoldReverseIntoTranspose()),
        MatMulOp: transposes,
        BatchMatMulOp: transposes,
        PoolOp: (MaxPoolFirst(),),
        SliceOp: (LastStepIsCarry(),),
    }
    for kind in SHAPE_OPERAND:
        by_type[kind] = (*by_type.get(kind, ()), EarliestShapeSource())
    return by_type


@dataclass
class _Dispatch(RewritePattern):
    """Erase an op left dead, else try the patterns of its type until one rewrites it:
    asking each of 14 patterns about every op was most of this pass."""

    by_type: dict[type[Operation], tuple[RewritePattern, ...]]

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if is_trivially_dead(op):
            rewriter.erase(op)
            return
        for pattern in self.by_type.get(type(op), ()):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


@dataclass(frozen=True)
class AotkSimplifyPass(ModulePass):
    """Algebraic clean-ups on the aotk dialect."""

    name = "aotk-simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(_Dispatch(_by_type())).rewrite_module(op)
