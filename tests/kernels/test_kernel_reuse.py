"""`Kernel` makes index arithmetic and views once per block, and only where the earlier
value still dominates the new use and no range `op_memo` records would be pinned."""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, ptr, scf
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, f32
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.kernels.kernel import PTR, Kernel

INDEX = IndexType()


def _kernel() -> tuple[Kernel, Block, SSAValue, SSAValue]:
    block = Block(arg_types=[INDEX, INDEX])
    n, m = block.args
    return Kernel(Builder(InsertPoint.at_end(block))), block, n, m


def test_the_same_arithmetic_in_one_block_is_one_value() -> None:
    k, block, n, m = _kernel()
    product = k.mul(n, 4)
    assert k.mul(n, 4) is product and k.mul(m, 4) is not product
    assert k.add(n, m) is k.add(n, m) and k.add(n, m) is not k.add(m, n)
    assert k.compare("slt", n, m) is k.compare("slt", n, m)
    assert k.compare("slt", n, m) is not k.compare("sle", n, m)  # the predicate counts
    bad = k.either(k.compare("slt", n, 0), k.compare("slt", m, 0))
    assert k.either(k.compare("slt", n, 0), k.compare("slt", m, 0)) is bad
    assert [op.name for op in block.ops].count("arith.muli") == 2


def test_a_value_made_in_a_loop_is_not_used_after_it() -> None:
    k, block, n, _ = _kernel()
    with k.loop(n):
        inner = k.mul(n, 4)
        assert k.mul(n, 4) is inner
    after = k.mul(n, 4)
    assert after is not inner and after.owner.parent is block  # type: ignore[union-attr]


def test_nothing_is_reused_where_ops_are_inserted_before_others() -> None:
    k, _, n, _ = _kernel()
    first = k.mul(n, 4)
    assert isinstance(first.owner, arith.MuliOp)
    k.b = Builder(InsertPoint.before(first.owner))
    earlier = k.mul(n, 4)  # a use here comes before `first`
    assert earlier is not first and earlier.owner.next_op is first.owner  # type: ignore[union-attr]


def test_an_erased_or_moved_op_is_made_again() -> None:
    k, block, n, _ = _kernel()
    first = k.mul(n, 4)
    block.erase_op(first.owner)  # type: ignore[arg-type]
    second = k.mul(n, 4)
    assert second is not first and second.owner.parent is block  # type: ignore[union-attr]
    other = Block()
    second.owner.detach()  # type: ignore[union-attr]
    other.add_op(second.owner)  # type: ignore[arg-type]
    assert k.mul(n, 4) is not second


def test_views_are_made_once_and_traced_to_their_pointer() -> None:
    k, block, n, _ = _kernel()
    base = Block(arg_types=[PTR]).args[0]
    flat = MemRefType(f32, [DYNAMIC_INDEX])
    mem = k.memref_at(k.moved(base, n), flat)
    assert k.memref_at(k.moved(base, n), flat) is mem
    assert k.memref_at(k.moved(base, n), MemRefType(f32, [16])) is not mem
    assert k.moved(base, 0) is base
    assert k.pointer(mem) is mem.owner.operands[0]  # no to_ptr of a from_ptr
    assert not any(isinstance(op, ptr.ToPtrOp) for op in block.ops)


def test_nothing_is_reused_or_traced_while_op_memo_records_a_range() -> None:
    k, block, n, _ = _kernel()
    product = k.mul(n, 4)
    view = k.memref_at(Block(arg_types=[PTR]).args[0], MemRefType(f32, [DYNAMIC_INDEX]))
    k.pure.movable = block
    assert k.mul(n, 4) is not product
    # a buffer's view from outside the range: the range takes it as a parameter, so its
    # pointer is taken here, not the one it was viewed from
    assert isinstance(k.pointer(view).owner, ptr.ToPtrOp)
    with k.loop(n) as i:  # a loop of the range may reuse within itself
        assert k.add(i, 1) is k.add(i, 1)
        assert isinstance(k.pointer(view).owner, ptr.ToPtrOp)
    k.pure.movable = None
    assert k.mul(n, 4) is product
    assert isinstance(block.last_op, scf.ForOp)
