"""Folding of the integer arithmetic xDSL's `arith` does not fold, on constant operands.

Loops emitted for sizes known only at run time divide, clamp and compare them
(`Kernel.div`, `min`, `max`, `select`). When those sizes become constants again (loops
of one size put back in place: `lowering.generic_loops`), the arithmetic must fold, or
LLVM would get a chunk count as a division of constants, and `aotk-parallelize` would
see no trip count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern

Fold = Callable[[int, int, int], int | None]  # (a, b, width) -> result, None: leave it


def _unsigned(v: int, width: int) -> int:
    return v % (1 << width)


def _signed(v: int, width: int) -> int:
    v = _unsigned(v, width)
    return v - (1 << width) if v >> (width - 1) else v


def _udiv(a: int, b: int, w: int) -> int | None:
    return None if _unsigned(b, w) == 0 else _unsigned(a, w) // _unsigned(b, w)


def _urem(a: int, b: int, w: int) -> int | None:
    return None if _unsigned(b, w) == 0 else _unsigned(a, w) % _unsigned(b, w)


_BINARY: dict[type[Operation], Fold] = {
    arith.DivUIOp: _udiv,
    arith.RemUIOp: _urem,
    arith.MinSIOp: lambda a, b, w: min(_signed(a, w), _signed(b, w)),
    arith.MaxSIOp: lambda a, b, w: max(_signed(a, w), _signed(b, w)),
    arith.MinUIOp: lambda a, b, w: min(_unsigned(a, w), _unsigned(b, w)),
    arith.MaxUIOp: lambda a, b, w: max(_unsigned(a, w), _unsigned(b, w)),
}

_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b,
    "sle": lambda a, b: a <= b,
    "sgt": lambda a, b: a > b,
    "sge": lambda a, b: a >= b,
}


def folds(op: Operation) -> bool:
    """Whether `fold` may apply to an op of `op`'s kind."""
    return type(op) in _BINARY or isinstance(op, arith.CmpiOp | arith.SelectOp)


def fold(op: Operation, rewriter: PatternRewriter) -> None:
    """Replace `op` by its value if its operands decide it."""
    if isinstance(op, arith.SelectOp):
        condition = _constant(op.cond)
        if condition is not None:
            rewriter.replace(op, [], [op.lhs if condition & 1 else op.rhs])
        return
    a, b = _constant(op.operands[0]), _constant(op.operands[1])
    width = _width(op.operands[0].type)
    if a is None or b is None or width is None:
        return
    if isinstance(op, arith.CmpiOp):
        value = _compare(op.predicate.value.data, a, b, width)
        result_type: IntegerType | IndexType = IntegerType(1)
    else:
        value = _BINARY[type(op)](a, b, width)
        result_type = cast(IntegerType | IndexType, op.results[0].type)
    if value is not None:
        signed = _signed(value, _width_of(result_type))  # as xDSL keeps it: true is -1
        rewriter.replace(op, arith.ConstantOp(IntegerAttr(signed, result_type)))


def _compare(predicate: int, a: int, b: int, width: int) -> int:
    name = arith.CMPI_COMPARISON_OPERATIONS[predicate]
    if name.startswith("u"):
        a, b, name = _unsigned(a, width), _unsigned(b, width), "s" + name[1:]
    else:
        a, b = _signed(a, width), _signed(b, width)
    return int(_COMPARE[name](a, b))


def _constant(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _width(t: Attribute) -> int | None:
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        return t.width.data
    return None


def _width_of(t: Attribute) -> int:
    width = _width(t)
    assert width is not None
    return width


class FoldIntegers(RewritePattern):
    """`fold` as a pattern, for a walker of one's own."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if folds(op):
            fold(op, rewriter)
