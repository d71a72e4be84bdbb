"""`fold_integers`, through `aotk-canonicalize`: each fold against a value worked out by
hand, signed and unsigned readings of negative operands, and what must stay."""

from __future__ import annotations

import pytest
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType, ModuleOp, i1, i32
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.lowering import pipeline

INDEX = IndexType()


def _fold(make, *operands: tuple[int, Attribute]) -> arith.ConstantOp | str:
    """What `make(operand values)` becomes: its constant, or the name of the op left."""
    block = Block()
    b = Builder(InsertPoint.at_end(block))
    values = [b.insert(arith.ConstantOp(IntegerAttr(v, t))).result for v, t in operands]
    result: SSAValue = b.insert(make(*values)).results[0]
    b.insert(func.ReturnOp(result))
    fn = func.FuncOp("f", ([], [result.type]), Region(block))
    pipeline.run(ModuleOp([fn]), "aotk-canonicalize")
    returned = fn.body.block.last_op
    assert isinstance(returned, func.ReturnOp)
    owner = returned.arguments[0].owner
    return owner if isinstance(owner, arith.ConstantOp) else owner.name  # type: ignore[union-attr]


def _value(folded: arith.ConstantOp | str) -> int:
    assert isinstance(folded, arith.ConstantOp), f"{folded} was not folded"
    assert isinstance(folded.value, IntegerAttr)
    return folded.value.value.data


@pytest.mark.parametrize(
    ("op", "a", "b", "expected"),
    [
        (arith.DivUIOp, 6143, 4096, 1),
        (arith.RemUIOp, 6143, 4096, 2047),
        (arith.MinSIOp, 6143, 4096, 4096),
        (arith.MaxSIOp, -3, 2, 2),
        (arith.MinSIOp, -3, 2, -3),
        (arith.MaxUIOp, -3, 2, -3),  # -3 is 2**64 - 3 unsigned
        (arith.MinUIOp, -3, 2, 2),
        (arith.DivUIOp, -2, 2, 2**63 - 1),
    ],
)
def test_index_arithmetic_folds(op, a: int, b: int, expected: int) -> None:
    assert _value(_fold(op, (a, INDEX), (b, INDEX))) == expected


def test_i32_wraps_at_its_width() -> None:
    # -1 as i32 is 2**32 - 1 unsigned: divided by 2, 2**31 - 1
    assert _value(_fold(arith.DivUIOp, (-1, i32), (2, i32))) == 2**31 - 1


def test_division_by_zero_stays() -> None:
    assert _fold(arith.DivUIOp, (7, INDEX), (0, INDEX)) == "arith.divui"
    assert _fold(arith.RemUIOp, (7, INDEX), (0, INDEX)) == "arith.remui"


@pytest.mark.parametrize(
    ("predicate", "a", "b", "expected"),
    [("slt", -1, 0, 1), ("ult", -1, 0, 0), ("uge", -1, 0, 1), ("eq", 5, 5, 1), ("sgt", 5, 5, 0)],
)
def test_comparisons_fold_to_i1(predicate: str, a: int, b: int, expected: int) -> None:
    folded = _fold(lambda x, y: arith.CmpiOp(x, y, predicate), (a, INDEX), (b, INDEX))
    assert isinstance(folded, arith.ConstantOp) and folded.result.type == IntegerType(1)
    assert _value(folded) & 1 == expected  # xDSL keeps an i1's true as -1


@pytest.mark.parametrize(("condition", "expected"), [(1, 10), (0, 20)])
def test_select_on_a_constant_condition_is_its_operand(condition: int, expected: int) -> None:
    folded = _fold(
        lambda c, x, y: arith.SelectOp(c, x, y), (condition, i1), (10, INDEX), (20, INDEX)
    )
    assert _value(folded) == expected
