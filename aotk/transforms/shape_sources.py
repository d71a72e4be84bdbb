"""Ops that read only an operand's dims take them from a value computed earlier.

`fill_like` (autodiff's seeds and zeros), `reshape_like`, `shape_of` and `dim_size` read
no element of their shape operand. When that operand is an elementwise result with the
dims of one of its own operands, the operand serves as well; so a value needed for
nothing else, like y in the vector-Jacobian product of sum(y * g), is no longer
computed. An operand surely has the result's dims where they are static and equal, or
where every other operand's is 1: a dynamic dim may be 1 at run time and broadcast.
"""

from __future__ import annotations

from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

from aotk.dialect.base import AotkOp, shape_of
from aotk.dialect.elementwise import FillLikeOp
from aotk.dialect.registry import REGISTRY, Kind
from aotk.dialect.shape_query import DimSizeOp, ShapeOfOp
from aotk.dialect.views import ReshapeLikeOp

# op -> the position of the operand whose dims alone it reads
SHAPE_OPERAND: dict[type[AotkOp], int] = {
    FillLikeOp: 0,
    ReshapeLikeOp: 1,
    ShapeOfOp: 0,
    DimSizeOp: 0,
}


def _dim_at(value: SSAValue, axis: int, rank: int) -> int | None:
    """`value`'s dim at `axis` of a broadcast to `rank` dims (1 where it has none)."""
    dims = shape_of(value.type)
    offset = rank - len(dims)
    return 1 if axis < offset else dims[axis - offset]


def _has_the_dims(x: SSAValue, others: list[SSAValue], dims: tuple[int | None, ...]) -> bool:
    """Whether operand `x` surely has the result's `dims`: on each axis its dim is the
    result's static one, or it is dynamic and every other operand's is 1 there."""
    own = shape_of(x.type)
    if len(own) != len(dims):
        return False
    for axis, (mine, result) in enumerate(zip(own, dims, strict=True)):
        if mine is not None and mine == result:
            continue
        if mine is None and all(_dim_at(o, axis, len(dims)) == 1 for o in others):
            continue
        return False
    return True


def same_dims_operand(value: SSAValue) -> SSAValue | None:
    """An operand of `value`'s elementwise op surely of the same dims, an argument if one
    is; else None."""
    owner = value.owner
    if not isinstance(owner, AotkOp):
        return None
    opdef = REGISTRY.get(type(owner))
    if opdef is None or opdef.kind is not Kind.ELEMENTWISE:
        return None
    dims = shape_of(value.type)
    operands = list(owner.operands)
    same = [
        x
        for i, x in enumerate(operands)
        if _has_the_dims(x, operands[:i] + operands[i + 1 :], dims)
    ]
    # an argument is there anyway; any other value may be needed for nothing else
    return next((x for x in same if isinstance(x, BlockArgument)), same[0] if same else None)


class EarliestShapeSource(RewritePattern):
    """Give an op that reads only dims the earliest value known to have them."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        position = SHAPE_OPERAND.get(type(op))  # type: ignore[arg-type]
        if position is None:
            return
        source = earlier = op.operands[position]
        while (hop := same_dims_operand(earlier)) is not None:
            earlier = hop
        if earlier is source:
            return
        operands = list(op.operands)
        operands[position] = earlier
        assert isinstance(op, AotkOp)
        rewriter.replace(op, type(op).make(operands, op.results[0].type, **op.attrs()))
