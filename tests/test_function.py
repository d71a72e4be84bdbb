"""`Function`: one compiled kernel per graph, call-time checks, and the arrays it returns.

Expected values are written with plain NumPy formulas, independent of the interpreter.
Functions are built once per module (`_mlp`) where a test only calls them.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from conftest import emit, placeholder

from aotk import function, host_code
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import linalg, reduce, trace
from aotk.dialect import unary as un
from aotk.function import Function

W = np.array([[1.0, -1.0, 0.5], [2.0, 0.0, -0.5], [0.0, 1.0, 1.0], [-1.0, 0.5, 2.0]], np.float32)


def _mlp_graph() -> tuple[list[trace.KTensor], list[trace.KTensor]]:
    """x: (None, 4), w: (4, 3) -> (tanh(x @ w), sum over axis 1 of x*x)."""
    x = placeholder((None, 4), "float32", "x")
    w = placeholder((4, 3), "float32", "w")
    h = emit(un.TanhOp, emit(linalg.MatMulOp, x, w))
    s = emit(reduce.ReduceSumOp, emit(ar.MulOp, x, x), axes=(1,), keepdims=False)
    return [x, w], [h, s]


@functools.cache
def _mlp() -> Function:
    trace.reset_graph()
    return Function(*_mlp_graph())


def _mlp_expected(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x64 = x.astype(np.float64)
    return np.tanh(x64 @ W.astype(np.float64)), (x64 * x64).sum(axis=1)


def _check_mlp(outs: list[np.ndarray], x: np.ndarray) -> None:
    h, s = _mlp_expected(x)
    assert outs[0].dtype == np.float32 and outs[1].dtype == np.float32
    np.testing.assert_allclose(outs[0], h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[1], s, rtol=1e-5, atol=1e-5)


def test_one_compilation_serves_every_batch_size(rng):
    f = _mlp()
    before = host_code.COMPILE_COUNT
    for batch in (1, 7, 256, 7):
        x = rng.standard_normal((batch, 4)).astype(np.float32)
        outs = f([x, W])
        assert outs[0].shape == (batch, 3) and outs[1].shape == (batch,)
        _check_mlp(outs, x)
    assert host_code.COMPILE_COUNT == before


def test_an_empty_batch_gives_empty_outputs():
    outs = _mlp()([np.zeros((0, 4), np.float32), W])
    assert outs[0].shape == (0, 3) and outs[1].shape == (0,)


def test_the_same_graph_traced_twice_compiles_once():
    trace.reset_graph()
    inputs, outputs = _mlp_graph()
    first = Function(inputs, outputs)
    before = host_code.COMPILE_COUNT
    trace.reset_graph()
    inputs2, outputs2 = _mlp_graph()
    second = Function(inputs2, outputs2)
    assert host_code.COMPILE_COUNT == before
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(first([x, W])[1], second([x, W])[1])
    # renaming the inputs changes nothing; a different graph compiles again
    y = placeholder((None, 4), "float32", "another_name")
    Function([y], [emit(ar.MulOp, y, y)])
    z = placeholder((None, 4), "float32", "z")
    count = host_code.COMPILE_COUNT
    Function([z], [emit(ar.MulOp, z, z)])
    assert host_code.COMPILE_COUNT == count
    Function([z], [emit(ar.AddOp, z, z)])
    assert host_code.COMPILE_COUNT == count + 1


def _unaligned(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `a` whose data does not start on a 64-byte boundary."""
    raw = np.empty(a.nbytes + 128, np.uint8)
    offset = (-raw.ctypes.data) % 64 + a.itemsize
    out = raw[offset : offset + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    assert out.ctypes.data % 64 != 0 and out.flags.c_contiguous
    return out


def test_unaligned_noncontiguous_and_wider_inputs_are_copied(rng):
    f = _mlp()
    x = rng.standard_normal((5, 4)).astype(np.float32)
    _check_mlp(f([_unaligned(x), _unaligned(W)]), x)
    big = np.zeros((5, 8), np.float32)
    big[:, ::2] = x
    strided = big[:, ::2]
    assert not strided.flags.c_contiguous
    _check_mlp(f([strided, np.asfortranarray(W)]), x)
    _check_mlp(f([x.astype(np.float64), W.astype(np.float64)]), x)
    _check_mlp(f([x.tolist(), W.tolist()]), x)
    np.testing.assert_array_equal(big[:, ::2], x)  # inputs are never written


def test_int_inputs_of_a_float_placeholder_are_converted():
    outs = _mlp()([np.array([[1, 2, 3, 4]], np.int32), W])
    _check_mlp(outs, np.array([[1, 2, 3, 4]], np.float32))


def test_float_inputs_of_an_int_placeholder_raise_type_error():
    i = placeholder((3,), "int32", "counts")
    f = Function([i], [emit(ar.AddOp, i, i)])
    with pytest.raises(TypeError, match="'counts' expects dtype int32, got float64"):
        f([np.array([1.0, 2.0, 3.0])])
    with pytest.raises(TypeError, match="list of 1 arrays"):
        f(np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(f([np.array([1, 2, 3], np.int32)])[0], [2, 4, 6])


@pytest.mark.parametrize(
    ("dtype", "bad", "good"),
    [
        ("int32", [2**32 + 5], [2**31 - 1, -(2**31)]),
        ("int32", [-(2**31) - 1], [0]),
        ("uint8", [-1], [0, 255]),
        ("uint8", np.array([256], np.uint16), np.array([7], np.uint16)),
        ("int8", np.array([2**63 - 1]), np.array([-128, 127])),
    ],
)
def test_integer_inputs_that_do_not_fit_are_refused_not_wrapped(dtype, bad, good):
    i = placeholder((None,), dtype, "counts")
    f = Function([i], [emit(ar.AddOp, i, i)])
    with pytest.raises(ValueError, match=f"'counts' expects dtype {dtype}, got the value"):
        f([bad])
    np.testing.assert_array_equal(f([good])[0], (np.asarray(good) * 2).astype(dtype))


def test_wrong_input_count_rank_or_static_dim_raise_value_error():
    f = _mlp()
    x = np.ones((2, 4), np.float32)
    with pytest.raises(ValueError, match=r"expected 2 inputs \(x, w\), got 1"):
        f([x])
    with pytest.raises(
        ValueError, match=r"'x' expects rank 2 shape \(None, 4\), got rank 1 shape \(4,\)"
    ):
        f([np.ones(4, np.float32), W])
    with pytest.raises(ValueError, match=r"'w' expects shape \(4, 3\), got \(4, 2\) \(axis 1\)"):
        f([x, np.ones((4, 2), np.float32)])
    with pytest.raises(ValueError, match=r"'x' expects shape \(None, 4\), got \(2, 5\) \(axis 1\)"):
        f([np.ones((2, 5), np.float32), W])


def test_dynamic_dims_that_cannot_broadcast_raise_value_error():
    x = placeholder((None, 3), "float32", "x")
    y = placeholder((None, 3), "float32", "y")
    f = Function([x, y], [emit(ar.AddOp, x, y)])
    with pytest.raises(ValueError, match=r"\(2, 3\), \(5, 3\).*aotk\.add.*do not broadcast"):
        f([np.ones((2, 3), np.float32), np.ones((5, 3), np.float32)])
    # a dynamic dim of 1 broadcasts, and the function still works afterwards
    [out] = f([np.ones((1, 3), np.float32), np.full((5, 3), 2.0, np.float32)])
    np.testing.assert_array_equal(out, np.full((5, 3), 3.0, np.float32))


def test_a_dynamic_reshape_that_does_not_fit_raises_value_error():
    from aotk.dialect import shape

    x = placeholder((None, 4), "float32", "x")
    f = Function([x], [emit(shape.ReshapeOp, x, shape=(8,))])
    np.testing.assert_array_equal(
        f([np.arange(8, dtype=np.float32).reshape(2, 4)])[0], np.arange(8)
    )
    with pytest.raises(ValueError, match=r"aotk\.reshape"):
        f([np.zeros((3, 4), np.float32)])


def test_held_outputs_are_never_overwritten(rng):
    f = _mlp()
    x1, x2 = (rng.standard_normal((3, 4)).astype(np.float32) for _ in range(2))
    first = f([x1, W])
    view = f([x1, W])[1][1:]  # only a view of the second call's output survives
    expected_view = view.copy()
    f([x2, W])
    f([x2, W])
    _check_mlp(first, x1)
    np.testing.assert_array_equal(view, expected_view)
    assert not np.shares_memory(first[0], f([x2, W])[0])


def test_released_outputs_are_reused():
    f = _mlp()
    x = np.ones((3, 4), np.float32)
    address = f([x, W])[0].ctypes.data
    assert f([2 * x, W])[0].ctypes.data == address
    _check_mlp(f([2 * x, W]), 2 * x)


def test_outputs_have_their_own_dtypes_and_several_shapes():
    x = placeholder((None, 3), "float32", "x")
    big = emit(cmp.GreaterOp, x, emit(ew.ConstantOp, value=0.5, dtype="float32"))
    as_int = emit(ew.CastOp, x, dtype="int8")
    total = emit(reduce.ReduceSumOp, x, axes=(0, 1), keepdims=False)
    f = Function([x], [big, as_int, total, x])
    data = np.array([[0.25, 0.75, -1.5], [2.9, -2.9, 1.5]], np.float32)
    outs = f([data])
    assert [o.dtype for o in outs] == [np.bool_, np.int8, np.float32, np.float32]
    np.testing.assert_array_equal(outs[0], [[False, True, False], [True, False, True]])
    np.testing.assert_array_equal(outs[1], [[0, 0, -1], [2, -2, 1]])
    np.testing.assert_allclose(outs[2], np.float32(1.0), rtol=1e-6)
    np.testing.assert_array_equal(outs[3], data)


def test_an_output_that_is_an_input_is_a_copy():
    x = placeholder((None,), "int16", "x")
    f = Function([x], x)
    data = np.array([1, -2, 3], np.int16)
    out = f([data])
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, data)
    assert not np.shares_memory(out, data)
    out[0] = 100
    assert data[0] == 1


def test_the_same_tensor_returned_twice_gives_two_arrays():
    x = placeholder((2,), "float64", "x")
    y = emit(un.ExpOp, x)
    a, b = Function([x], [y, y])([np.array([0.0, 1.0])])
    np.testing.assert_allclose(a, [1.0, np.e], rtol=1e-15)
    np.testing.assert_array_equal(a, b)
    assert not np.shares_memory(a, b)


def test_float32_and_float64_math_in_one_function():
    # regression: xDSL declared llvm.sqrt/fabs/pow once per module, whatever the float type
    x = placeholder((3,), "float32", "x")
    d = placeholder((3,), "float64", "d")
    outs = Function(
        [x, d], [emit(op, t) for op in (un.SqrtOp, un.AbsOp, un.TanhOp) for t in (x, d)]
    )([np.array([4.0, 9.0, 0.25], np.float32), np.array([-1.0, 16.0, 2.25])])
    np.testing.assert_allclose(outs[0], [2.0, 3.0, 0.5])
    np.testing.assert_allclose(outs[1], [np.nan, 4.0, 1.5])
    np.testing.assert_allclose(outs[2], [4.0, 9.0, 0.25])
    np.testing.assert_allclose(outs[3], [1.0, 16.0, 2.25])
    np.testing.assert_allclose(outs[4], [0.9993292997, 0.9999999695, 0.2449186624], rtol=1e-6)
    np.testing.assert_allclose(
        outs[5], [-0.7615941559557649, 0.9999999999999747, 0.9780261147388136], rtol=1e-14
    )


def test_a_function_without_inputs():
    c = emit(ew.ConstantOp, value=1.5, dtype="float64")
    out = Function([], [c])([])
    assert out[0].shape == () and out[0].dtype == np.float64 and out[0] == 1.5


def test_a_function_of_nothing_to_nothing_returns_no_outputs():
    """Still compiled: its entry points (the workspace size one too) exist."""
    assert Function([], [])([]) == []
    assert Function([placeholder((2,), "float32", "x")], [])([np.ones(2, np.float32)]) == []


def test_inputs_must_be_placeholders():
    x = placeholder((2,), "float32", "x")
    y = emit(un.NegOp, x)
    with pytest.raises(TypeError, match=r"inputs\[0\] must be a placeholder"):
        Function([y], [x])
    with pytest.raises(ValueError, match="placeholder 'x', which is not among the inputs"):
        Function([placeholder((2,), "float32", "other")], [y])


def test_end_to_end_dense_softmax_through_the_keras_backend(rng):
    from aotk import backend as K

    w = rng.standard_normal((4, 3)).astype(np.float32)
    bias = np.array([0.1, -0.2, 0.3], np.float32)
    x = K.placeholder(shape=(None, 4))
    weights = K.variable(w)
    p = K.softmax(K.relu(K.bias_add(K.dot(x, weights), K.variable(bias))))
    f = K.function([x], [p, K.mean(p * 2.0, axis=-1)])

    def expected(data: np.ndarray, kernel: np.ndarray) -> np.ndarray:
        h = np.maximum(data.astype(np.float64) @ kernel + bias, 0.0)
        e = np.exp(h - h.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    for batch in (1, 9):
        data = rng.standard_normal((batch, 4)).astype(np.float32)
        probs, means = f([data])
        np.testing.assert_allclose(probs, expected(data, w), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(means, np.full(batch, 2.0 / 3.0), rtol=1e-5)
    K.set_value(weights, np.zeros((4, 3), np.float32))  # variables are read at call time
    np.testing.assert_allclose(f([data])[0], expected(data, np.zeros((4, 3))), rtol=1e-5, atol=1e-6)


def test_a_lazy_function_called_by_two_threads_at_once_compiles_once(monkeypatch):
    import threading
    import time

    compiles: list[int] = []
    real = function.compile_traced

    def slow_compile(module, text):
        compiles.append(1)
        time.sleep(0.2)  # the other thread arrives while this one compiles
        return real(module, text)

    monkeypatch.setattr(function, "compile_traced", slow_compile)
    x = placeholder((3,), "float32", "x")
    f = Function([x], [emit(un.NegOp, x)], lazy=True)
    assert compiles == []
    data = np.array([1.0, -2.0, 3.0], np.float32)
    start, results = threading.Barrier(2), []

    def call() -> None:
        start.wait()
        results.append(f([data])[0])

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert compiles == [1]
    for got in results:
        np.testing.assert_array_equal(got, -data)
    assert len(results) == 2


def test_a_lazy_function_exported_then_called_finds_its_structure_once(monkeypatch):
    texts: list[str] = []
    real = function.structure

    def counted(module):
        texts.append(real(module))
        return texts[-1]

    monkeypatch.setattr(function, "structure", counted)
    x = placeholder((3,), "float32", "x")
    f = Function([x], [emit(un.NegOp, emit(un.ExpOp, x))], lazy=True)
    assert "define" in f.host_source().source_ir  # the export's text, lowered once
    data = np.array([1.0, -2.0, 3.0], np.float32)
    np.testing.assert_allclose(f([data])[0], -np.exp(data), rtol=1e-6)
    assert len(texts) == 1
