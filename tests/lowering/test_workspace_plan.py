"""The workspace plan: slices reused once their values die (`workspace_plan`,
`workspace_liveness`), dims keyed by how they are computed (`dim_keys`)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import emit, placeholder
from test_convert_aotk_to_loops import loops, workspace_size
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from aotk import backend as K
from aotk.dialect import arithmetic as ar
from aotk.dialect import linalg, reduce, shape
from aotk.dialect import unary as un
from aotk.kernels.kernel import Kernel
from aotk.lowering.dim_keys import DimKeys
from aotk.lowering.workspace_plan import WorkspacePlan, _Arena


def test_an_arena_takes_the_smallest_free_run_and_merges_what_is_given_back() -> None:
    arena = _Arena()
    a, b, c, d = (arena.take(size) for size in (64, 128, 64, 256))
    assert (a, b, c, d) == (0, 64, 192, 256) and arena.units == 512
    arena.give(b, 128)
    arena.give(a, 64)  # merges with the run after it
    assert arena.free == [(0, 192)]
    assert arena.take(64) == 0  # the smallest run that holds it, cut
    assert arena.free == [(64, 128)]
    arena.give(c, 64)  # merges with the run before it
    assert arena.free == [(64, 192)]
    arena.give(d, 256)  # and with both: one run to the end
    assert arena.free == [(64, 448)]
    assert arena.take(1024) == 64 and arena.units == 1088  # the last run, grown
    assert arena.take(0) == 0 and arena.free == []


def _keys() -> tuple[DimKeys, Kernel, list]:
    block = Block(arg_types=[IndexType(), IndexType()])
    keys = DimKeys()
    for i, arg in enumerate(block.args):
        keys.name(arg, (i, 0))
    return keys, Kernel(Builder(InsertPoint.at_end(block))), list(block.args)


def test_dims_computed_alike_have_one_key_however_shared() -> None:
    keys, k, (n, m) = _keys()
    first = k.index_op(arith.MuliOp, n, 7)
    k.pure.movable = n.owner  # as while op_memo records a range: made anew, a second value
    twice = [first, k.index_op(arith.MuliOp, n, 7)]
    k.pure.movable = None
    assert twice[0] is not twice[1] and keys.key(twice[0]) == keys.key(twice[1])
    assert keys.key(n) != keys.key(m)
    # broadcasting a batch with itself: max(n, n) is n; max(n, m) is neither
    assert keys.key(k.index_op(arith.MaxUIOp, n, n)) == keys.key(n)
    both = k.index_op(arith.MaxUIOp, n, m)
    assert keys.key(both) not in (keys.key(n), keys.key(m))
    assert keys.key(k.index_op(arith.MaxUIOp, both, n)) == keys.key(both)
    # a reshape's -1: (n * 7 * 2) / 14 is n; n * 7 is 7 times n
    rows = k.index_op(arith.MuliOp, k.index_op(arith.MuliOp, n, 7), 2)
    assert keys.key(k.index_op(arith.DivUIOp, rows, 14)) == keys.key(n)
    assert keys.scaled(keys.key(twice[0])) == (7, keys.key(n))  # type: ignore[arg-type]


def test_only_arith_on_input_dims_is_rebuilt_at_the_start() -> None:
    keys, k, (n, m) = _keys()
    both = k.index_op(arith.MaxUIOp, n, m)
    key = keys.key(both)
    assert key is not None and keys.at_start(key)
    made: dict = {}
    rebuilt = keys.rebuild(k, key, made)
    assert rebuilt is not both and isinstance(rebuilt.owner, arith.MaxUIOp)  # type: ignore[union-attr]
    assert keys.rebuild(k, key, made) is rebuilt  # shared once made
    unknown = Block(arg_types=[IndexType()]).args[0]  # a loop's index, say
    assert keys.key(k.index_op(arith.AddiOp, n, unknown)) is None


def test_a_chain_needs_two_intermediates_and_one_scratch_whatever_its_length() -> None:
    """Four matmuls of a batch of n rows: each product dies in the next, so two rows of
    1 KiB a row are live at once; the matmuls' packing scratch is given back after each
    and taken again by the next, so the static part is one matmul's scratch."""
    x = placeholder((None, 256), "float32", "x")
    w = placeholder((256, 256), "float32", "w")
    h = x
    for _ in range(4):
        h = emit(linalg.MatMulOp, h, w)
    chain = loops([x, w], [emit(reduce.ReduceSumOp, h, axes=(1,), keepdims=False)])
    one = loops([x, w], [emit(linalg.MatMulOp, x, w)])  # into its output: scratch alone
    scratch = workspace_size(one, 0)
    assert scratch > 0
    for n in (0, 1, 3, 100):
        assert workspace_size(chain, n) == scratch + 2 * 1024 * n


@pytest.mark.parametrize("kept", [False, True])
def test_a_view_keeps_its_source_alive(kept: bool) -> None:
    """e = x @ w, summed at once, read again through a reshape at the end must keep its
    slice while t = x @ w2 and t @ w are made: three rows of 1 KiB live then; when
    nothing reads the reshape, e dies in its sum and t takes its slice: two."""
    x = placeholder((None, 256), "float32", "x")
    w = placeholder((256, 256), "float32", "w")
    w2 = placeholder((256, 256), "float32", "w2")
    e = emit(linalg.MatMulOp, x, w)
    outs = [emit(reduce.ReduceSumOp, e, axes=(1,), keepdims=False)]
    v = emit(shape.ReshapeOp, e, shape=(-1, 16, 16))
    u = emit(linalg.MatMulOp, emit(linalg.MatMulOp, x, w2), w)
    outs.append(emit(reduce.ReduceSumOp, u, axes=(1,), keepdims=False))
    if kept:
        outs.append(emit(reduce.ReduceSumOp, v, axes=(1, 2), keepdims=False))
    module = loops([x, w, w2], outs)
    scratch = workspace_size(module, 0)
    rows = 3 if kept else 2
    assert [workspace_size(module, n) - scratch for n in (1, 10)] == [rows * 1024, rows * 10240]


def test_a_fused_result_does_not_hold_its_operands() -> None:
    """exp(tanh(x @ w)) three times: each fused elementwise loop (an op with a region)
    writes a slice of its own, so the product it reads dies in it: two rows of 1 KiB
    live at once, not three."""
    x = placeholder((None, 256), "float32", "x")
    w = placeholder((256, 256), "float32", "w")
    h = x
    for _ in range(3):
        h = emit(un.ExpOp, emit(un.TanhOp, emit(linalg.MatMulOp, h, w)))
    module = loops([x, w], [emit(reduce.ReduceSumOp, h, axes=(1,), keepdims=False)])
    scratch = workspace_size(module, 0)
    assert [workspace_size(module, n) - scratch for n in (1, 10)] == [2 * 1024, 2 * 10240]


def test_a_merged_run_at_the_end_taken_again_keeps_the_workspace_as_long() -> None:
    """Three scalars (4 bytes, 64 with padding) given back merge into one run of 192
    bytes at the end, which a 16-byte buffer then takes: the earlier ops wrote all 192,
    so the size stays 192 (it fell to 64: a kernel wrote past its workspace)."""
    block = Block()
    k = Kernel(Builder(InsertPoint.at_end(block)))
    plan = WorkspacePlan()
    plan.start_at(k.b.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))))
    scalars = [plan.take(k, [], 4, lambda: 64) for _ in range(3)]
    assert plan.size(k) == 192
    plan.give_back(scalars)
    plan.take(k, [4], 4, lambda: 64)
    assert plan.size(k) == 192


def test_a_max_of_batch_dims_is_at_least_each_of_them() -> None:
    keys, k, (n, m) = _keys()
    kn, km = keys.key(n), keys.key(m)
    both = keys.key(k.index_op(arith.MaxUIOp, n, m))
    least = keys.key(k.index_op(arith.MinUIOp, n, m))
    assert kn is not None and km is not None and both is not None and least is not None
    assert keys.at_least(both, kn) and keys.at_least(both, km) and keys.at_least(kn, kn)
    assert not keys.at_least(kn, both) and not keys.at_least(kn, km)
    assert not keys.at_least(least, kn) and not keys.at_least(kn, least)


def _forward_then_broadcast() -> tuple[list, list]:
    """Two matmuls of x's n rows, then the second plus y's rows (a batch of max(n, m),
    as a training step's loss makes its backward) and two matmuls of those."""
    x = placeholder((None, 256), "float32", "x")
    y = placeholder((None, 256), "float32", "y")
    w = placeholder((256, 256), "float32", "w")
    h = emit(linalg.MatMulOp, emit(linalg.MatMulOp, x, w), w)
    u = emit(linalg.MatMulOp, emit(linalg.MatMulOp, emit(ar.AddOp, h, y), w), w)
    return [x, y, w], [emit(reduce.ReduceSumOp, u, axes=(1,), keepdims=False)]


def test_rows_of_a_max_of_batches_reuse_the_rows_of_one_batch() -> None:
    """The forward's slices, of n rows, are free once the max(n, m) rows start: a unit of
    those holds one of n rows, so one arena of two rows of max(n, m) does (it took two
    rows of n and two of max(n, m) in arenas apart)."""
    inputs, outputs = _forward_then_broadcast()
    module = loops(inputs, outputs)
    scratch = workspace_size(module, 0, 0)
    for n, m in ((1, 1), (10, 10), (10, 1), (1, 10), (0, 7)):
        assert workspace_size(module, n, m) - scratch == 2 * 1024 * max(n, m), (n, m)


def test_two_classes_of_rows_go_side_by_side_in_one_of_their_max() -> None:
    """x @ w (n rows) and y @ w (m rows) live when their sum (max(n, m) rows) is made:
    both arenas move into the new one, one after the other, and the sum's next matmul
    takes their two rows, merged: three rows of max(n, m) in all."""
    x = placeholder((None, 256), "float32", "x")
    y = placeholder((None, 256), "float32", "y")
    w = placeholder((256, 256), "float32", "w")
    t = emit(ar.AddOp, emit(linalg.MatMulOp, x, w), emit(linalg.MatMulOp, y, w))
    u = emit(linalg.MatMulOp, emit(linalg.MatMulOp, t, w), w)
    module = loops([x, y, w], [emit(reduce.ReduceSumOp, u, axes=(1,), keepdims=False)])
    scratch = workspace_size(module, 0, 0)
    for n, m in ((1, 1), (10, 3), (3, 10)):
        assert workspace_size(module, n, m) - scratch == 3 * 1024 * max(n, m), (n, m)


@pytest.mark.parametrize("apart", [False, True])
@pytest.mark.parametrize(("n", "m"), [(5, 5), (5, 1), (1, 5)])
def test_rows_placed_in_a_larger_class_compute_what_numpy_does(n: int, m: int, apart: bool) -> None:
    """Both graphs compiled, with the workspace guard on (conftest): broadcasting either
    way, no write past the workspace and the values NumPy gives."""
    rng = np.random.default_rng(0)
    x, y = (K.placeholder((None, 256)) for _ in range(2))
    w = rng.standard_normal((256, 256)).astype(np.float32) / 16
    c = K.constant(w)
    t = K.dot(x, c) + K.dot(y, c) if apart else K.dot(K.dot(x, c), c) + y
    f = K.function([x, y], [K.sum(K.dot(K.dot(t, c), c), axis=1)])
    xv, yv = rng.standard_normal((n, 256)), rng.standard_normal((m, 256))
    tv = xv @ w + yv @ w if apart else xv @ w @ w + yv
    np.testing.assert_allclose(f([xv, yv])[0], (tv @ w @ w).sum(axis=1), rtol=1e-4, atol=1e-4)
