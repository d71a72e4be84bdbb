"""Max pooling before a non-decreasing elementwise op: max_pool(f(x)) == f(max_pool(x)).

A CNN's `relu -> max_pool` otherwise writes f(x) at full size only for the pool to read it
back; pooled first, f runs on a quarter of the elements (2x2 windows) and fuses into
whatever reads the pool. f is relu-like (maximum or minimum with a scalar constant), tanh
or exp. The rewrite needs f(x) read by the pool alone: a training graph that keeps f(x)
for its gradient is left as it is.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from aotk.dialect.arithmetic import MaximumOp, MinimumOp
from aotk.dialect.base import AotkOp, shape_of
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.pool import PoolMode, PoolOp
from aotk.dialect.unary import ExpOp, SigmoidOp, TanhOp

# one-operand ops whose function is non-decreasing
MONOTONE_UNARY = (TanhOp, ExpOp, SigmoidOp)


def monotone_operand(op: Operation) -> int | None:
    """The operand position of x when `op` is f(x) with f non-decreasing; else None."""
    if isinstance(op, MONOTONE_UNARY):
        return 0
    if isinstance(op, MaximumOp | MinimumOp):
        for position, other in ((0, op.rhs), (1, op.lhs)):
            if isinstance(other.owner, ConstantOp) and shape_of(other.type) == ():
                return position
    return None


class MaxPoolFirst(RewritePattern):
    """max_pool(f(x)) -> f(max_pool(x)) for a non-decreasing elementwise f read by the
    pool alone."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PoolOp, rewriter: PatternRewriter, /) -> None:
        inner = op.x.owner
        if op.attrs()["mode"] != PoolMode.MAX or not isinstance(inner, AotkOp):
            return
        position = monotone_operand(inner)
        if position is None or not op.x.has_one_use():
            return
        x = inner.operands[position]
        if x.type != op.x.type:  # f broadcasts x
            return
        pooled = PoolOp.make([x], op.result.type, **op.attrs())
        operands: list[SSAValue] = list(inner.operands)
        operands[position] = pooled.results[0]
        rewriter.replace(op, [pooled, type(inner).make(operands, op.result.type, **inner.attrs())])
