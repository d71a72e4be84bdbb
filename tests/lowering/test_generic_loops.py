"""`generic_loops`: elementwise ops of one form share a function of their sizes, compute
what NumPy computes at each size, and an op alone in its form is put back in place."""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp

from aotk import backend as K
from aotk import interp
from aotk.dialect import metadata, trace
from aotk.kernels.kernel import PARALLEL_ATTR
from aotk.lowering import pipeline


def _loops(inputs: list, outputs: list) -> ModuleOp:
    module, _ = trace.extract(inputs, outputs)
    return pipeline.lower(module, stop_after="loops")


def _functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {f.sym_name.data: f for f in module.ops if isinstance(f, func.FuncOp)}


def _shared(module: ModuleOp) -> list[func.FuncOp]:
    return [f for f in _functions(module).values() if metadata.SHARED_LOOPS in f.attributes]


def _calls(module: ModuleOp) -> list[func.CallOp]:
    entry = _functions(module)["main"]
    return [op for op in entry.walk() if isinstance(op, func.CallOp)]


def _arg_types(fn: func.FuncOp) -> list[str]:
    return [str(t) for t in fn.function_type.inputs]


def _random(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def test_tanh_of_three_shapes_is_one_function_of_the_element_count() -> None:
    shapes = [(4, 8), (8, 8), (3, 5, 7)]
    xs = [K.placeholder(shape=s) for s in shapes]
    ys = [K.tanh(x) * 2.0 for x in xs]
    module = _loops(xs, ys)
    (fn,) = _shared(module)
    # same dims throughout: flat, whatever the rank
    assert _arg_types(fn) == ["memref<?xf32>", "memref<?xf32>", "index"]
    counts = [
        c.arguments[-1].owner for c in _calls(module) if c.callee.string_value() == "main_op0"
    ]
    assert [c.value.value.data for c in counts if isinstance(c, arith.ConstantOp)] == [32, 64, 105]
    values = [_random(*s, seed=i) for i, s in enumerate(shapes)]
    got = K.function(xs, ys)(values)
    for g, v in zip(got, values, strict=True):
        np.testing.assert_allclose(g, np.tanh(v) * 2.0, rtol=2e-6, atol=2e-6)


def test_bodies_that_differ_do_not_share() -> None:
    # one form of buffers, three fused bodies: only the two equal ones share
    x, y = K.placeholder(shape=(4, 8)), K.placeholder(shape=(6, 8))
    outputs = [K.tanh(x) * 2.0, K.tanh(y) * 2.0, K.sigmoid(y) + 1.0, K.sigmoid(x) - 1.0]
    module = _loops([x, y], outputs)
    (fn,) = _shared(module)
    calls = [c for c in _calls(module) if c.callee.string_value() == fn.sym_name.data]
    assert len(calls) == 2
    a, b = _random(4, 8, seed=1), _random(6, 8, seed=2)
    got = K.function([x, y], outputs)([a, b])
    sigmoid = [1 / (1 + np.exp(-v)) for v in (b, a)]
    want = [np.tanh(a) * 2, np.tanh(b) * 2, sigmoid[0] + 1, sigmoid[1] - 1]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


def test_an_op_alone_in_its_form_is_put_back_with_its_sizes_constant() -> None:
    x = K.placeholder(shape=(4, 8))
    module = _loops([x], [K.tanh(x)])
    assert not _shared(module)
    assert not any(c.callee.string_value().startswith("main_op") for c in _calls(module))
    # the kernel (outlined from main) bounds its loop by the constant 32
    ops = list(module.walk())
    bounds = [op.ub.owner for op in ops if isinstance(op, scf.ForOp)]
    assert any(isinstance(b, arith.ConstantOp) and b.value.value.data == 32 for b in bounds)
    assert not any(isinstance(op, arith.DivUIOp | arith.MinSIOp) for op in ops)


def test_a_loop_put_back_too_short_to_share_is_no_task() -> None:
    # emitted for any sizes, its outer loop is marked parallel from 683 trips on; put
    # back with 2 trips, it must not be outlined as a task for the threads
    x, scale = K.placeholder(shape=(2, 4, 8)), K.placeholder(shape=(8,))
    module, _ = trace.extract([x, scale], [x * scale])
    pipeline.lower(module, stop_after="llvm")
    names = [op.sym_name.data for op in module.ops if hasattr(op, "sym_name")]
    assert not [n for n in names if "_par" in n or n == "aotk_parallel_for"]


def test_per_channel_affines_of_two_widths_share_and_broadcast() -> None:
    shapes = [(2, 3, 4, 8), (5, 3, 2, 16)]  # rows of 96 elements
    xs = [K.placeholder(shape=s) for s in shapes]
    scales = [K.placeholder(shape=(s[-1],)) for s in shapes]
    ys = [K.relu(x * a + 1.0) for x, a in zip(xs, scales, strict=True)]
    module = _loops([*xs, *scales], ys)
    (fn,) = _shared(module)
    # x, scale and result, then the dims: the channel dim is one size for both buffers
    assert _arg_types(fn).count("index") == 4
    values = [_random(*s, seed=i) for i, s in enumerate(shapes)]
    channels = [_random(s[-1], seed=9 + i) for i, s in enumerate(shapes)]
    got = K.function([*xs, *scales], ys)([*values, *channels])
    for g, v, a in zip(got, values, channels, strict=True):
        np.testing.assert_allclose(g, np.maximum(v * a + 1.0, 0), rtol=1e-6, atol=1e-6)


def test_a_dim_of_1_against_a_shared_size_is_a_broadcast_known_when_compiling() -> None:
    # a shared size is never 1 (a 1 stays in the form): no run-time test for whether
    # the column matches the rows, and no second, flat copy of the loops
    xs = [K.placeholder(shape=(4, 8)), K.placeholder(shape=(6, 12))]
    columns = [K.placeholder(shape=(4, 1)), K.placeholder(shape=(6, 1))]
    ys = [x - c for x, c in zip(xs, columns, strict=True)]
    module = _loops([*xs, *columns], ys)
    assert len(_shared(module)) == 1
    assert not [op for op in module.walk() if isinstance(op, scf.IfOp)]
    values = [_random(4, 8, seed=1), _random(6, 12, seed=2)]
    cols = [_random(4, 1, seed=3), _random(6, 1, seed=4)]
    got = K.function([*xs, *columns], ys)([*values, *cols])
    for g, v, c in zip(got, values, cols, strict=True):
        np.testing.assert_array_equal(g, v - c)


def test_a_shared_nest_is_costed_at_its_first_ops_sizes() -> None:
    # 3-d broadcasts: the nest's outer loop is the parallel one, its inner trips known
    # only at run time. At the first op's sizes (128 x 256 elements a row) a row is
    # worth a task, so two rows are enough to split.
    shapes = [(8, 128, 256), (16, 128, 256)]
    xs = [K.placeholder(shape=s) for s in shapes]
    bias = K.placeholder(shape=(256,))
    ys = [x + bias for x in xs]
    module = _loops([*xs, bias], ys)
    assert len(_shared(module)) == 1
    loops = [op for op in module.walk() if isinstance(op, scf.ForOp)]
    marks = [op.attributes.get(PARALLEL_ATTR) for op in loops]
    marks = [m.value.data for m in marks if isinstance(m, IntegerAttr)]
    assert marks == [2]
    values = [_random(*s, seed=i) for i, s in enumerate(shapes)]
    b = _random(256, seed=5)
    got = K.function([*xs, bias], ys)([*values, b])
    for g, v in zip(got, values, strict=True):
        np.testing.assert_array_equal(g, v + b)


def test_nests_whose_rows_differ_more_than_twofold_do_not_share() -> None:
    # their outer loops' costs would be hinted wrong: each op is alone in its form
    xs = [K.placeholder(shape=(8, 4, 8)), K.placeholder(shape=(8, 64, 8))]
    bias = K.placeholder(shape=(8,))
    assert not _shared(_loops([*xs, bias], [x + bias for x in xs]))


def test_slices_read_in_place_share_with_their_strides_as_arguments() -> None:
    # gates of a recurrent step: two halves of one product, multiplied, at two widths
    zs = [K.placeholder(shape=(3, 8)), K.placeholder(shape=(5, 12))]
    ys = [z[:, : z.shape[1] // 2] * z[:, z.shape[1] // 2 :] for z in zs]
    module = _loops(zs, ys)
    shared = _shared(module)
    assert len(shared) == 1 and _arg_types(shared[0]).count("index") >= 3
    values = [_random(3, 8, seed=1), _random(5, 12, seed=2)]
    got = K.function(zs, ys)(values)
    for g, v in zip(got, values, strict=True):
        half = v.shape[1] // 2
        np.testing.assert_array_equal(g, v[:, :half] * v[:, half:])


def _dense_block(x, dtype: str) -> tuple[list, list]:
    """A DenseNet-style block at widths 4, 6, 8 of 5 x 5 images: per-channel
    normalization, relu, a 3 x 3 conv to 2 channels, concatenated on; the loss and its
    gradients in every parameter."""
    rng = np.random.default_rng(7)
    h, params = x, []
    for width in (4, 6, 8):
        gamma = K.variable(rng.uniform(0.5, 1.5, width), dtype=dtype)
        beta = K.variable(rng.normal(0, 0.1, width), dtype=dtype)
        k = K.variable(rng.normal(0, 0.3, (3, 3, width, 2)), dtype=dtype)
        mean, var = K.mean(h, axis=[0, 1, 2]), K.var(h, axis=[0, 1, 2])
        a = K.relu((h - mean) / K.sqrt(var + 1e-3) * gamma + beta)
        h = K.concatenate([h, K.conv2d(a, k, padding="same")])
        params += [gamma, beta, k]
    loss = K.sum(K.square(h)) / 100.0
    return [loss], [loss, *K.gradients(loss, params)]


def test_a_dense_blocks_gradients_compiled_match_the_interpreter() -> None:
    # one layer at three widths: its elementwise forward and backward kernels shared
    # across the widths (float64, so that only the order of sums differs)
    x = K.placeholder(shape=(None, 5, 5, 4), dtype="float64")
    _, outputs = _dense_block(x, "float64")
    module, captures = trace.extract([x], outputs)
    assert _shared(_loops([x], outputs))
    xs = np.random.default_rng(8).normal(size=(3, 5, 5, 4))
    want = interp.run_module(module, [xs, *(c.storage for c in captures)])
    got = K.function([x], outputs)([xs])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
