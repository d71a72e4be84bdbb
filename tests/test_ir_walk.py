"""aotk's walker yields what xDSL's `walk()` yields, in the same order, as a snapshot."""

from __future__ import annotations

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IndexType, ModuleOp, i32
from xdsl.ir import Block, Operation, Region

from aotk.ir_walk import ops_in_block, ops_in_region, ops_within
from aotk.kernels.make import constant_op


def _loop(depth: int, lb: Operation, ub: Operation) -> scf.ForOp:
    """A loop nest `depth` deep; each body adds an i32 constant to itself."""
    body = Block(arg_types=[IndexType()])
    one = constant_op(depth, i32)
    body.add_ops([one, arith.AddiOp(one, one)])
    if depth > 1:
        body.add_op(_loop(depth - 1, lb, ub))
    body.add_op(scf.YieldOp())
    return scf.ForOp(lb, ub, ub, [], Region(body))


def _module() -> ModuleOp:
    """Two functions: a loop nest three deep between straight-line ops, and an empty one."""
    block = Block()
    lb, ub = constant_op(0, IndexType()), constant_op(4, IndexType())
    block.add_ops([lb, ub, _loop(3, lb, ub), _loop(1, lb, ub), func.ReturnOp()])
    empty = Block()
    empty.add_op(func.ReturnOp())
    return ModuleOp(
        [
            func.FuncOp("nest", ([], []), Region(block)),
            func.FuncOp("empty", ([], []), Region(empty)),
        ]
    )


def test_the_walk_is_xdsls_pre_order():
    module = _module()
    expected = list(module.walk())
    # the module, 2 functions, 5 ops, 11 in the nest, 3 in the single loop, 1 return
    assert len(expected) == 23
    assert ops_within(module) == expected
    nest = module.body.block.first_op
    assert isinstance(nest, func.FuncOp)
    assert ops_in_region(nest.body) == list(nest.body.walk())
    assert ops_in_block(nest.body.block) == list(nest.body.block.walk())
    inner = [op for op in expected if isinstance(op, scf.ForOp)][1]
    assert ops_within(inner) == list(inner.walk())
    assert [type(op) for op in ops_within(inner)] == [
        scf.ForOp,
        *(arith.ConstantOp, arith.AddiOp, scf.ForOp),
        *(arith.ConstantOp, arith.AddiOp, scf.YieldOp),
        scf.YieldOp,
    ]


def test_ops_may_be_erased_while_going_through_the_snapshot():
    module = _module()
    before = ops_within(module)
    loops = [op for op in before if isinstance(op, scf.ForOp)]
    for op in before:
        if op is loops[0]:
            op.detach()
            op.erase()
    assert len(before) == 23
    assert loops[0].parent is None
    assert len(ops_within(module)) == 23 - 12  # the nest and the 11 ops in it
