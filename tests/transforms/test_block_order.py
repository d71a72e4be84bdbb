"""`BlockOrder` answers as xDSL's walk of the block does, while ops come and go."""

from __future__ import annotations

import itertools
import random

from xdsl.dialects import test
from xdsl.dialects.builtin import i32
from xdsl.ir import Block, Operation

from aotk.transforms.block_order import BlockOrder


def _op() -> Operation:
    return test.TestOp(result_types=[i32])


def _agrees(order: BlockOrder, block: Block) -> None:
    ops = list(block.ops)
    for a, b in itertools.product(ops, ops):
        assert order.is_before(a, b) == a.is_before_in_block(b), (ops.index(a), ops.index(b))


def test_insertions_at_one_place_renumber_the_block_and_stay_right() -> None:
    block = Block([_op() for _ in range(4)])
    order = BlockOrder()
    _agrees(order, block)
    second = list(block.ops)[1]
    for _ in range(40):  # each placed at once: more than the 32 halvings one gap allows
        new = _op()
        block.insert_op_before(new, second)
        assert order.is_before(new, second) and not order.is_before(second, new)
    _agrees(order, block)


def test_random_inserts_and_erasures_agree_with_a_walk() -> None:
    rng = random.Random(7)
    block = Block([_op() for _ in range(6)])
    order = BlockOrder()
    for _ in range(300):
        ops = list(block.ops)
        if rng.random() < 0.3 and len(ops) > 2:
            block.erase_op(rng.choice(ops))
        elif rng.random() < 0.5:
            block.insert_op_before(_op(), rng.choice(ops))
        else:
            block.insert_op_after(_op(), rng.choice(ops))
        a, b = rng.sample(list(block.ops), 2)
        assert order.is_before(a, b) == a.is_before_in_block(b)
    _agrees(order, block)


def test_ops_of_different_blocks_are_not_ordered() -> None:
    one, two = Block([_op()]), Block([_op()])
    order = BlockOrder()
    assert not order.is_before(one.first_op, two.first_op)  # type: ignore[arg-type]
    assert not order.is_before(two.first_op, one.first_op)  # type: ignore[arg-type]
