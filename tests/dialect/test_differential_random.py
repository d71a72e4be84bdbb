"""Compiled == interpreted for the random, print and sparse primitives.

`aotk.random_uniform` and `aotk.random_normal` read and advance a state operand, so each
test runs the compiled function and the interpreter from equal copies of the state and
compares the samples and the advanced states; `aotk.print_tensor` compares the text the
kernel printed (captured at the file-descriptor level) with the interpreter's;
`aotk.sparse_to_dense` compares dense results over every dtype.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ALL_DTYPES, FLOATS, assert_close, emit, placeholder, random_array

from aotk import dtypes, interp
from aotk.dialect.base import tensor
from aotk.dialect.debug import PrintTensorOp
from aotk.dialect.elementwise import CastOp
from aotk.dialect.random import RandomNormalOp, RandomUniformOp, infer_normal, infer_uniform
from aotk.dialect.random_numpy import philox
from aotk.dialect.registry import lookup
from aotk.dialect.sparse import SparseToDenseOp
from aotk.function import Function
from aotk.lowering import pipeline

COVERED_OPS = {RandomUniformOp, RandomNormalOp, PrintTensorOp, SparseToDenseOp}


@pytest.mark.parametrize(
    ("counter", "key", "want"),
    [
        ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
        ((2**32 - 1,) * 4, (2**32 - 1,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
        (
            (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
            (0xA4093822, 0x299F31D0),
            (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
        ),
    ],
)
def test_the_oracles_philox_gives_random123s_known_answers(counter, key, want):
    block = np.array([counter[1] << 32 | counter[0]], np.uint64)
    words = philox(block, key[1] << 32 | key[0], counter[3] << 32 | counter[2])
    assert [int(w[0]) for w in words] == list(want)


def _random_ops(dtype: str, state, like) -> list:
    common = {"dtype": dtype}
    return [
        emit(RandomUniformOp, state, like, shape=(-1, 5), like_axes=(0, -1), minval=-1.5,
             maxval=2.5, **common),
        # the same op again: not merged, and it draws the next call's numbers
        emit(RandomUniformOp, state, like, shape=(-1, 5), like_axes=(0, -1), minval=-1.5,
             maxval=2.5, **common),
        emit(RandomNormalOp, state, like, shape=(3, -1), like_axes=(1, 0), mean=0.5, stddev=3.0,
             truncated=False, **common),
        emit(RandomNormalOp, state, shape=(1001,), like_axes=(-1,), mean=-1.0, stddev=0.5,
             truncated=True, **common),
        emit(RandomNormalOp, state, like, shape=(-1, 2), like_axes=(0, -1), mean=0.0,
             stddev=1.0, truncated=True, **common),
        emit(RandomNormalOp, state, shape=(), like_axes=(), mean=0.0, stddev=1.0,
             truncated=False, **common),
    ]  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS)
def test_random_ops_compiled_match_interpreted_and_advance_the_state(dtype):
    state = placeholder((2,), "int64", "state")
    like = placeholder((None, 3), "float32", "like")
    outs = _random_ops(dtype, state, like)
    f = Function([state, like], outs)
    graph = pipeline.lower(f.module.clone(), "graph")
    assert sum(isinstance(op, RandomUniformOp) for op in graph.walk()) == 2
    rng = np.random.default_rng(0)
    for rows in (9, 0):
        start = np.array([rng.integers(-(2**62), 2**62), rng.integers(0, 2**40)], np.int64)
        s_compiled, s_interp = start.copy(), start.copy()
        x = np.zeros((rows, 3), np.float32)
        got = f([s_compiled, x])
        want = interp.run_module(f.module, [s_interp, x])
        np.testing.assert_array_equal(s_compiled, start + np.array([0, len(outs)]))
        np.testing.assert_array_equal(s_interp, s_compiled)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, msg=f"{dtype} output {i} with {rows} rows")
        np.testing.assert_array_equal(got[0], want[0])  # uniforms agree bit for bit
        assert rows == 0 or not np.array_equal(got[0], got[1])
        assert got[3].shape == (1001,) and np.abs(got[3] + 1.0).max() <= 1.0


@pytest.mark.parametrize(
    ("infer", "args", "attrs", "error", "match"),
    [
        (infer_uniform, [("int32", (2,))], {}, TypeError, r"tensor<2xi64>"),
        (infer_uniform, [("int64", (3,))], {}, TypeError, r"tensor<2xi64>"),
        (infer_uniform, [("int64", (2,))], {"dtype": "int32"}, TypeError, r"dtype must be"),
        (infer_uniform, [("int64", (2,))], {"like_axes": (0,)}, ValueError, r"like operand"),
        (infer_uniform, [("int64", (2,))], {"shape": (2, 3)}, ValueError, r"differ in rank"),
        (infer_uniform, [("int64", (2,))], {"shape": (-2,)}, ValueError, r"dims must be >= 0"),
        (
            infer_uniform,
            [("int64", (2,)), ("float32", (None,))],
            {"shape": (-1,), "like_axes": (1,)},
            ValueError,
            r"like axis 1 is out of range",
        ),
        (
            infer_uniform,
            [("int64", (2,)), ("float32", (None,))],
            {},
            ValueError,
            r"exactly when like_axes uses it",
        ),
        (infer_uniform, [("int64", (2,))], {"maxval": -1.0}, ValueError, r"less than maxval"),
        (
            infer_uniform,
            [("int64", (2,))],
            {"dtype": "float16", "minval": 1.0001, "maxval": 1.0002},
            ValueError,
            r"no float16 value lies in",
        ),
        (infer_normal, [("float32", (2,))], {}, TypeError, r"tensor<2xi64>"),
    ],
)
def test_random_infer_rules_reject_bad_operands(infer, args, attrs, error, match):
    types = [tensor(dtypes.element_type(d), s) for d, s in args]
    base = {"dtype": "float32", "shape": (4,), "like_axes": (-1,), "minval": 0.0, "maxval": 1.0}
    if infer is infer_normal:
        base = {"dtype": "float32", "shape": (4,), "like_axes": (-1,), "mean": 0.0, "stddev": 1.0}
    with pytest.raises(error, match=match):
        infer(*types, **{**base, **attrs})


PRINT_DTYPES = ("float16", "float32", "float64", "int8", "int64", "uint8", "bool")


def test_print_tensor_prints_what_the_interpreter_prints(capfd):
    x = placeholder((None, 2), "float32", "x")
    s = placeholder((), "int32", "s")
    z = placeholder((2, None, 2), "int16", "z")
    outs = [emit(PrintTensorOp, x, message="x: ")]
    for dt in PRINT_DTYPES:
        cast = emit(CastOp, x, dtype=dt)
        outs.append(emit(PrintTensorOp, cast, message=f"{dt} 100% é: "))
    outs += [emit(PrintTensorOp, s, message="scalar "), emit(PrintTensorOp, z, message="")]
    f = Function([x, s, z], outs)
    value = np.array([[0.0, 0.5], [2.0, 1.5], [100.25, 3e-5]], np.float32)
    for rows, zcols in ((3, 1), (0, 0)):
        args = [value[:rows], np.array(-7, np.int32), np.arange(4 * zcols, dtype=np.int16)]
        args[2] = args[2].reshape(2, zcols, 2)
        capfd.readouterr()
        got = f(args)
        compiled = capfd.readouterr().out
        want = interp.run_module(f.module, args)
        interpreted = capfd.readouterr().out
        assert compiled == interpreted
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g, w)
    f([value[:2], np.array(5, np.int32), np.arange(4, dtype=np.int16).reshape(2, 1, 2)])
    lines = capfd.readouterr().out.splitlines()
    assert lines[:2] == ["x:  [[0.  0.5]", " [2.  1.5]]"]
    assert "int8 100% é:  [[0 0]" in lines
    assert "bool 100% é:  [[False  True]" in lines
    assert lines[-4:] == ["scalar  5", " [[[0 1]]", "", " [[2 3]]]"]


def _sparse_case(rng: np.random.Generator, nnz: int, dims: tuple[int, ...]) -> np.ndarray:
    """Indices with duplicates, and with one negative and one too-large coordinate."""
    idx = np.stack([rng.integers(0, max(d, 1), nnz) for d in dims], axis=1).astype(np.int64)
    if nnz >= 4:
        idx[1] = idx[0]
        idx[2, 0] = -1
        idx[3, -1] = dims[-1]
    return idx


def test_sparse_to_dense_compiled_matches_interpreted_in_every_dtype():
    rng = np.random.default_rng(0)
    idx2, idx3 = placeholder((None, 2), "int64", "i2"), placeholder((None, 3), "int64", "i3")
    like2 = placeholder((None, 4, 0), "bool", "like2")
    like3 = placeholder((2, None, 3, 0), "bool", "like3")
    values = [placeholder((None,), dt, f"v_{dt}") for dt in ALL_DTYPES]
    outs = [emit(SparseToDenseOp, idx2, v, like2) for v in values]
    outs.append(emit(SparseToDenseOp, idx3, values[1], like3))
    f = Function([idx2, idx3, like2, like3, *values], outs)
    for nnz, rows in ((7, 3), (0, 0)):
        args = [
            _sparse_case(rng, nnz, (rows, 4)),
            _sparse_case(rng, nnz, (2, rows, 3)),
            np.empty((rows, 4, 0), bool),
            np.empty((2, rows, 3, 0), bool),
            *(random_array(rng, (nnz,), dt, "small") for dt in ALL_DTYPES),
        ]
        got = f(args)
        want = interp.run_module(f.module, args)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, w, msg=f"output {i} with {nnz} values")
        if nnz:
            dense = np.zeros((rows, 4), np.float32)
            for (r, c), v in zip(args[0], args[5], strict=True):
                if 0 <= r < rows and 0 <= c < 4:
                    dense[r, c] += v
            np.testing.assert_allclose(got[1], dense, rtol=1e-6)


@pytest.mark.parametrize(
    ("types", "match"),
    [
        ((("int32", (None, 2)), ("float32", (None,)), ("bool", (3, 4, 0))), r"int64"),
        ((("int64", (None, 2)), ("float32", (None, 1)), ("bool", (3, 4, 0))), r"rank 1"),
        ((("int64", (None, 2)), ("float32", (None,)), ("bool", (3, 4))), r"last dim of 0"),
        ((("int64", (None, 3)), ("float32", (None,)), ("bool", (3, 4, 0))), r"3 coordinates"),
        ((("int64", (5, 2)), ("float32", (4,)), ("bool", (3, 4, 0))), r"5 indices but 4"),
    ],
)
def test_sparse_to_dense_infer_rejects_bad_operands(types, match):
    args = [tensor(dtypes.element_type(d), s) for d, s in types]
    with pytest.raises((TypeError, ValueError), match=match):
        lookup(SparseToDenseOp).infer(*args)
