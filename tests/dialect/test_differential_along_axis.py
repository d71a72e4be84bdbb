"""Compiled == interpreted for the scan primitives (cumsum, cumprod, argmax, argmin).

One compiled function per op and selection holds its cases as separate outputs; it is
called twice, dynamic cases with two sizes (one making the dims after the axis 1, which
selects the register-carried loop at run time, one not). Float argmax and argmin inputs
carry NaN and infinities on the second call. Compilation dominates, so by default the
primary dtype runs every case and the other dtypes the two static layouts; `-m slow` runs
every case in every dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    FLOATS,
    NUMERIC,
    assert_close,
    emit,
    placeholder,
    random_array,
)

from aotk import dtypes, interp
from aotk.dialect import REGISTRY
from aotk.dialect.along_axis import ArgMaxOp, ArgMinOp, CumProdOp, CumSumOp
from aotk.dialect.base import tensor
from aotk.function import Function

COVERED_OPS = {CumSumOp, CumProdOp, ArgMaxOp, ArgMinOp}

Shape = tuple[int | None, ...]
Concrete = tuple[int, ...]
Case = tuple[str, Shape, tuple[Concrete, Concrete], int]
# (name, declared shape, (first call shape, second call shape), axis)
CASES: list[Case] = [
    ("last_axis", (3, 5), ((3, 5), (3, 5)), 1),
    ("first_axis", (4, 3), ((4, 3), (4, 3)), 0),
    ("middle_axis", (2, 3, 4), ((2, 3, 4), (2, 3, 4)), 1),
    ("vector", (7,), ((7,), (7,)), 0),
    ("dynamic_inner", (None, 3, None), ((2, 3, 4), (5, 3, 1)), 1),
    ("dynamic_axis", (None, 4), ((1, 4), (6, 4)), 0),
    ("dynamic_last", (3, None), ((3, 1), (3, 9)), 1),
]
# scans accept an empty axis: nothing is written
SCAN_ONLY_CASES: list[Case] = [
    ("dynamic_empty_axis", (2, None, 3), ((2, 0, 3), (2, 2, 3)), 1),
    ("dynamic_empty_last", (None, None), ((3, 0), (0, 4)), 1),
]
OPS = sorted(COVERED_OPS, key=lambda o: o.name)
DTYPES = {CumSumOp: NUMERIC, CumProdOp: NUMERIC, ArgMaxOp: ALL_DTYPES, ArgMinOp: ALL_DTYPES}


def _input(rng: np.random.Generator, op: Any, shape: Concrete, dtype: str, call: int) -> np.ndarray:
    if op is CumProdOp:  # factors near 1 keep float products finite and meaningful
        x = random_array(rng, shape, dtype, "small")
        return (x * np.asarray(0.6, dtype)).astype(dtype) if dtype in FLOATS else x
    if op is CumSumOp:
        return random_array(rng, shape, dtype, "any")
    if dtype == "bool":
        return rng.random(shape) < 0.5
    x = rng.integers(-3, 4, shape).astype(dtype)  # few values: ties must keep the first index
    if dtype in FLOATS and call == 1:
        specials = np.array([np.nan, np.inf, -np.inf], dtype)
        mask = rng.random(shape) < 0.15
        x[mask] = rng.choice(specials, int(mask.sum()))
    return x


def _cases(op: Any) -> list[Case]:
    return CASES + (SCAN_ONLY_CASES if op in (CumSumOp, CumProdOp) else [])


def test_covered_ops_are_registered():
    assert set(REGISTRY) >= COVERED_OPS


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_dtypes_are_what_infer_accepts(op):
    accepted = []
    for dtype in ALL_DTYPES:
        try:
            REGISTRY[op].infer(tensor(dtypes.element_type(dtype), (2, 3)), axis=1)
        except TypeError:
            continue
        accepted.append(dtype)
    assert tuple(accepted) == DTYPES[op]


PRIMARY = "float32"
LAYOUT_CASES = ("last_axis", "middle_axis")


def _selection(op: Any, mode: str) -> list[tuple[Case, str]]:
    if mode == "primary":
        return [(case, PRIMARY) for case in _cases(op)]
    if mode == "others":
        others = [d for d in DTYPES[op] if d != PRIMARY]
        return [(case, d) for d in others for case in _cases(op) if case[0] in LAYOUT_CASES]
    return [(case, d) for d in DTYPES[op] for case in _cases(op)]


def _params() -> list[Any]:
    out = []
    for op in OPS:
        out.append(pytest.param(op, "primary", id=f"{op.name}-{PRIMARY}"))
        out.append(pytest.param(op, "others", id=f"{op.name}-other-dtypes"))
        out.append(pytest.param(op, "slow", id=f"{op.name}-all", marks=pytest.mark.slow))
    return out


@pytest.mark.parametrize(("op", "mode"), _params())
def test_compiled_matches_interpreted(op, mode):
    pairs = _selection(op, mode)
    inputs, outputs = [], []
    for n, ((_, decl, _, axis), dt) in enumerate(pairs):
        x = placeholder(decl, dt, f"c{n}")
        inputs.append(x)
        outputs.append(emit(op, x, axis=axis))
    f = Function(inputs, outputs)
    rng = np.random.default_rng(0)
    for call in (0, 1):
        arrays = [_input(rng, op, case[2][call], dt, call) for case, dt in pairs]
        got = f(arrays)
        want = interp.run_module(f.module, arrays)
        for (case, dt), a, g, w in zip(pairs, arrays, got, want, strict=True):
            n = a.shape[case[3]] if a.ndim else 1
            assert_close(g, w, scale=n, rscale=n, msg=f"{op.name} {dt} {case[0]} call {call}")


@pytest.mark.parametrize(
    ("op", "values", "expected"),
    [
        (ArgMaxOp, [1.0, np.nan, 3.0, np.nan], 1),
        (ArgMinOp, [1.0, 0.0, np.nan, -1.0], 2),
        (ArgMaxOp, [-np.inf, -np.inf, -np.inf], 0),
        (ArgMinOp, [np.inf, 2.0, np.inf, 2.0], 1),
        (ArgMaxOp, [2.0, 5.0, 5.0, np.inf, np.inf], 3),
    ],
)
def test_arg_extremum_rows_against_hand_written_indices(op, values, expected):
    # Each row goes through both layouts: as a contiguous row and as a strided column.
    row = np.array([values], np.float32)
    xs = [placeholder(row.shape, "float32", "row"), placeholder(row.T.shape, "float32", "col")]
    outs = [emit(op, xs[0], axis=1), emit(op, xs[1], axis=0)]
    for got in _both(xs, outs, [row, np.ascontiguousarray(row.T)]):
        np.testing.assert_array_equal(got, [expected])


def _both(xs: list[Any], outs: list[Any], arrays: list[np.ndarray]) -> list[np.ndarray]:
    """Compiled results, after checking that the interpreter agrees exactly."""
    f = Function(xs, outs)
    got = f(arrays)
    for g, w in zip(got, interp.run_module(f.module, arrays), strict=True):
        np.testing.assert_array_equal(g, w)
    return got


def test_scans_against_hand_written_values():
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    a, b = placeholder((2, 3), "int32", "a"), placeholder((2, 3), "int32", "b")
    s0, p1 = _both([a, b], [emit(CumSumOp, a, axis=0), emit(CumProdOp, b, axis=1)], [x, x])
    np.testing.assert_array_equal(s0, [[1, 2, 3], [5, 7, 9]])
    np.testing.assert_array_equal(p1, [[1, 2, 6], [4, 20, 120]])


def test_float16_scan_rounds_every_step_as_stored():
    # 2048 + 1 is not a float16; a float32 register sum would keep the ones and drift away
    x = np.full((1, 64), 1.0, np.float16)
    x[0, 0] = 2048.0
    r, c = placeholder((1, 64), "float16", "r"), placeholder((64, 1), "float16", "c")
    outs = [emit(CumSumOp, r, axis=1), emit(CumSumOp, c, axis=0)]
    row, col = _both([r, c], outs, [x, x.reshape(64, 1)])
    np.testing.assert_array_equal(row[0], np.full(64, 2048.0, np.float16))
    np.testing.assert_array_equal(col[:, 0], np.full(64, 2048.0, np.float16))


@pytest.mark.parametrize(
    ("op", "shape", "dtype", "axis", "message"),
    [
        (CumSumOp, (2, 3), "bool", 0, "cannot scan a bool tensor"),
        (CumSumOp, (), "float32", 0, "axis 0 is out of range for rank 0"),
        (ArgMaxOp, (2, 0), "float32", 1, "axis 1 of size 0"),
        (ArgMinOp, (2, 3), "int8", 2, "axis 2 is out of range for rank 2"),
    ],
)
def test_infer_rejects_bad_input(op, shape, dtype, axis, message):
    with pytest.raises((TypeError, ValueError), match=message):
        REGISTRY[op].infer(tensor(dtypes.element_type(dtype), shape), axis=axis)


def test_argmax_of_a_dynamic_axis_that_is_empty_at_call_time_is_an_error():
    x = placeholder((None, 3), "float32")
    f = Function([x], [emit(ArgMaxOp, x, axis=0)])
    np.testing.assert_array_equal(f([np.eye(3, dtype=np.float32)])[0], [0, 1, 2])
    with pytest.raises(ValueError, match="axis 0 of size 0"):
        f([np.zeros((0, 3), np.float32)])


def test_results_are_int64_without_the_axis():
    t = REGISTRY[ArgMaxOp].infer(tensor(dtypes.element_type("uint8"), (None, 3, 4)), axis=1)
    assert t == tensor(dtypes.element_type("int64"), (None, 4))
