"""`aotk-simplify`: each fold fires where it should and nowhere else, and the graph computes
the same values before and after (interpreted)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from conftest import assert_close, emit, placeholder
from test_fuse import top_ops
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import BlockArgument, Operation

from aotk import interp
from aotk.context import make_context
from aotk.dialect import arithmetic as ar
from aotk.dialect import elementwise as ew
from aotk.dialect import shape, trace
from aotk.dialect import unary as un
from aotk.dialect.pool import PoolOp
from aotk.dialect.scan import ScanOp
from aotk.transforms.simplify import AotkSimplifyPass


def simplify(
    inputs: Sequence[trace.KTensor], outputs: Sequence[trace.KTensor], arrays: Sequence[np.ndarray]
) -> ModuleOp:
    module, _ = trace.extract(list(inputs), list(outputs))
    before = interp.run_module(module, arrays)
    AotkSimplifyPass().apply(make_context(), module)
    module.verify()
    after = interp.run_module(module, arrays)
    for b, a in zip(before, after, strict=True):
        assert_close(a, b, msg="after aotk-simplify")
    return module


def returned_args(module: ModuleOp) -> list[int | None]:
    """For each returned value, the index of the function argument it is, or None."""
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    args = list(fn.body.block.args)
    return [args.index(v) if v in args else None for v in ret.arguments]


def _main_ops(module: ModuleOp) -> list[Operation]:
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return [op for op in fn.body.block.ops if not isinstance(op, func.ReturnOp)]


def const(value: float, dtype: str = "float32") -> trace.KTensor:
    return emit(ew.ConstantOp, value=value, dtype=dtype)


@pytest.mark.parametrize(
    ("op", "zero_first"),
    [(ar.AddOp, False), (ar.AddOp, True), (ar.SubOp, False), (ar.MulOp, False), (ar.MulOp, True)],
)
def test_adding_zero_and_multiplying_by_one_forward_the_operand(rng, op, zero_first):
    x = placeholder((None, 3), "float32", "x")
    c = const(1.0 if op is ar.MulOp else 0.0)
    y = emit(op, c, x) if zero_first else emit(op, x, c)
    module = simplify([x], [y], [rng.standard_normal((4, 3), np.float32)])
    assert returned_args(module) == [0]
    assert "aotk.add" not in top_ops(module) and "aotk.mul" not in top_ops(module)


def test_a_zero_filled_tensor_added_and_a_one_filled_multiplied_are_dropped(rng):
    """Autodiff seeds sums with fill_like(0): the SGD update bodies read it otherwise."""
    g, like = placeholder((None, 3), "float32", "g"), placeholder((None, 3), "float32", "like")
    zeros = emit(ew.FillLikeOp, like, value=0.0, dtype="float32")
    ones = emit(ew.FillLikeOp, like, value=1.0, dtype="float32")
    twos = emit(ew.FillLikeOp, like, value=2.0, dtype="float32")
    outputs = [emit(ar.AddOp, zeros, g), emit(ar.MulOp, g, ones), emit(ar.AddOp, g, twos)]
    arrays = [rng.standard_normal((4, 3), np.float32) for _ in range(2)]
    module = simplify([g, like], outputs, arrays)
    assert returned_args(module) == [0, 0, None]
    assert top_ops(module).count("aotk.add") == 1 and "aotk.mul" not in top_ops(module)


def test_zero_minus_x_is_not_x(rng):
    x = placeholder((3,), "int32", "x")
    module = simplify(
        [x], [emit(ar.SubOp, const(0.0, "int32"), x)], [np.array([1, -2, 3], np.int32)]
    )
    assert "aotk.sub" in top_ops(module)


def test_folds_that_would_change_the_shape_do_not_fire(rng):
    x = placeholder((), "float32", "x")
    y = placeholder((2, 3), "float32", "y")
    zeros = emit(ew.FillLikeOp, y, value=0.0, dtype="float32")
    broadcast = emit(ar.AddOp, x, zeros)  # still has to materialize the broadcast
    ones = emit(ew.FillLikeOp, y, value=1.0, dtype="float32")
    module = simplify(
        [x, y],
        [broadcast, emit(ar.MulOp, x, ones)],
        [np.float32(2.5), np.zeros((2, 3), np.float32)],
    )
    assert top_ops(module).count("aotk.add") == 1 and top_ops(module).count("aotk.mul") == 1
    assert returned_args(module) == [None, None]


def test_other_constants_are_kept(rng):
    x = placeholder((4,), "float32", "x")
    module = simplify(
        [x],
        [emit(ar.AddOp, x, const(2.0)), emit(ar.MulOp, x, const(-1.0))],
        [rng.standard_normal(4, np.float32)],
    )
    assert top_ops(module).count("aotk.add") == 1 and top_ops(module).count("aotk.mul") == 1


def test_double_negation_cancels_even_for_wrapping_ints():
    x = placeholder((3,), "int8", "x")
    module = simplify([x], [emit(un.NegOp, emit(un.NegOp, x))], [np.array([-128, 0, 127], np.int8)])
    assert returned_args(module) == [0]
    assert "aotk.neg" not in top_ops(module)


def test_a_single_negation_stays():
    x = placeholder((3,), "int8", "x")
    module = simplify(
        [x],
        [emit(un.NegOp, emit(un.NegOp, emit(un.NegOp, x)))],
        [np.array([-128, 1, 127], np.int8)],
    )
    assert top_ops(module).count("aotk.neg") == 1


def test_a_cast_to_the_same_dtype_is_dropped_and_a_real_one_kept():
    x = placeholder((3,), "float32", "x")
    same = emit(ew.CastOp, x, dtype="float32")
    real = emit(ew.CastOp, emit(ew.CastOp, x, dtype="int32"), dtype="float32")  # truncates
    module = simplify([x], [same, real], [np.array([-1.5, 0.25, 2.75], np.float32)])
    assert returned_args(module) == [0, None]
    assert top_ops(module).count("aotk.cast") == 2


def test_reshape_chains_collapse_and_a_same_type_reshape_vanishes(rng):
    x = placeholder((None, 6), "float32", "x")
    chain = emit(shape.ReshapeOp, emit(shape.ReshapeOp, x, shape=(-1, 2, 3)), shape=(-1, 3, 2))
    same = emit(shape.ReshapeOp, x, shape=(-1, 6))
    module = simplify([x], [chain, same], [rng.standard_normal((4, 6), np.float32)])
    assert top_ops(module) == ["aotk.reshape"]
    assert returned_args(module) == [None, 0]


def test_only_the_identity_transpose_is_dropped(rng):
    x = placeholder((2, 3, 4), "float32", "x")
    identity = emit(shape.TransposeOp, x, perm=(0, 1, 2))
    swap = emit(shape.TransposeOp, x, perm=(0, 2, 1))
    module = simplify([x], [identity, swap], [rng.standard_normal((2, 3, 4), np.float32)])
    assert returned_args(module) == [0, None]
    assert top_ops(module) == ["aotk.transpose"]


def test_folds_compose(rng):
    """-(-(x * 1)) + 0 reshaped to its own shape is x."""
    x = placeholder((None, 2), "float64", "x")
    y = emit(un.NegOp, emit(un.NegOp, emit(ar.MulOp, x, const(1.0, "float64"))))
    y = emit(shape.ReshapeOp, emit(ar.AddOp, y, const(0.0, "float64")), shape=(-1, 2))
    module = simplify([x], [y], [rng.standard_normal((3, 2))])
    assert returned_args(module) == [0]
    assert set(top_ops(module)) <= {"aotk.constant"}


def test_the_gradient_of_slices_tiling_an_axis_is_one_concatenation(rng):
    """d/dx of functions of three column slices of x: autodiff's sum of three unslices
    becomes one concat of the slices' gradients, with the same values."""
    from aotk import backend as K

    x = K.placeholder((3, 8))
    loss = K.sum(K.sin(x[:, :2])) + K.sum(K.square(x[:, 2:5])) + K.sum(K.exp(x[:, 5:]))
    [grad] = K.gradients(loss, [x])
    data = rng.standard_normal((3, 8)).astype(np.float32)
    module = simplify([x], [grad], [data])
    names = [op.name for op in module.walk()]
    assert "aotk.unslice" not in names and names.count("aotk.concat") == 1
    [got] = interp.run_module(module, [data])
    want = np.concatenate([np.cos(data[:, :2]), 2 * data[:, 2:5], np.exp(data[:, 5:])], axis=1)
    assert_close(got, want)


def _max_pool(x: trace.KTensor, mode: str = "max") -> trace.KTensor:
    return emit(PoolOp, x, window=(2, 2), strides=(2, 2), padding="same", mode=mode)


MONOTONE = {
    "relu": lambda x: emit(ar.MaximumOp, x, const(0.0)),
    "clip_first": lambda x: emit(ar.MinimumOp, const(0.5), x),
    "tanh": lambda x: emit(un.TanhOp, x),
    "exp": lambda x: emit(un.ExpOp, x),
    "sigmoid": lambda x: emit(un.SigmoidOp, x),
}


@pytest.mark.parametrize("name", sorted(MONOTONE))
def test_max_pool_runs_before_a_non_decreasing_op(rng, name):
    x = placeholder((None, 5, 7, 3), "float32", "x")
    arrays = [rng.standard_normal((2, 5, 7, 3), np.float32)]
    module = simplify([x], [_max_pool(MONOTONE[name](x))], arrays)
    ops = _main_ops(module)
    pool = next(op for op in ops if isinstance(op, PoolOp))
    assert isinstance(pool.x, BlockArgument), "the pool reads x itself"
    assert ops.index(pool) < len(ops) - 1 and ops[-1].name != "aotk.pool"


def test_max_pool_stays_after_other_ops(rng):
    x = placeholder((None, 4, 4, 2), "float32", "x")
    relu = emit(ar.MaximumOp, x, const(0.0))
    outputs = [
        _max_pool(relu, mode="avg"),  # an average does not commute with relu
        _max_pool(relu),  # relu is an output too: it is written anyway
        relu,
        _max_pool(emit(un.NegOp, x)),  # decreasing
        _max_pool(emit(ar.MaximumOp, x, emit(un.AbsOp, x))),  # a bound that is a tensor
    ]
    module = simplify([x], outputs, [rng.standard_normal((2, 4, 4, 2), np.float32)])
    pools = [op for op in _main_ops(module) if isinstance(op, PoolOp)]
    assert len(pools) == 4
    assert not any(isinstance(pool.x, BlockArgument) for pool in pools)


def _rnn(carried_output: bool) -> tuple[list[trace.KTensor], trace.KTensor]:
    """K.rnn over 5 steps whose step output is its new state (or twice it), returning
    the last output as K.rnn does: outputs[-1]."""
    from aotk import backend as K

    x, h0 = placeholder((None, 5, 4), "float32", "x"), placeholder((None, 4), "float32", "h0")

    def step(x_t, states):
        h = K.tanh(x_t + states[0])
        return (h if carried_output else h * 2.0), [h]

    last, _, _ = K.rnn(step, x, [h0])
    return [x, h0], last


@pytest.mark.parametrize("carried_output", [True, False])
def test_the_last_output_of_a_scan_is_its_final_carry(rng, carried_output):
    inputs, last = _rnn(carried_output)
    arrays = [rng.standard_normal((3, 5, 4), np.float32), rng.standard_normal((3, 4), np.float32)]
    module = simplify(inputs, [last], arrays)
    scan = next(op for op in module.walk() if isinstance(op, ScanOp))
    stacked_read = any(r.uses for r in list(scan.results)[scan.num_carries :])
    assert stacked_read is not carried_output
    assert ("aotk.slice" in top_ops(module)) is not carried_output
