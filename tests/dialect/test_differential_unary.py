"""Compiled == interpreted for the primitives of `aotk.dialect.unary`.

One compiled function per op holds a case per (dtype, shape) as separate outputs and is
called twice: dynamic dims with two sizes, and float inputs the second time on NaN, inf,
zeros, tiny and huge values (`special_values`).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    FLOATS,
    INTS,
    assert_close,
    emit,
    placeholder,
    random_array,
    special_values,
)

from aotk import dtypes, interp
from aotk.dialect import REGISTRY
from aotk.dialect import unary as un
from aotk.dialect.base import tensor
from aotk.function import Function

COVERED_OPS = {un.RoundOp, un.SinOp, un.CosOp, un.Log1pOp, un.Expm1Op, un.SigmoidOp}

ACCEPTED = {
    un.RoundOp: FLOATS + INTS,
    un.SinOp: FLOATS,
    un.CosOp: FLOATS,
    un.Log1pOp: FLOATS,
    un.Expm1Op: FLOATS,
    un.SigmoidOp: FLOATS,
}
OPS = sorted(COVERED_OPS, key=lambda op: op.name)
# (declared shape, shapes of the two calls)
SHAPES = [
    ((16,), ((16,), (16,))),
    ((None, 3), ((2, 3), (5, 3))),
    ((), ((), ())),
    ((None, None), ((0, 4), (3, 1))),
]


def _inputs(rng: np.random.Generator, op: type, dtype: str, shape: tuple[int, ...], call: int):
    if dtype in FLOATS and call == 1 and shape == (16,):
        return special_values(dtype)
    if op is un.Log1pOp:
        return rng.uniform(-0.99, 5.0, shape).astype(dtype)
    if op is un.RoundOp and dtype in FLOATS:  # halves, so ties to even are exercised
        return (rng.integers(-40, 40, shape) / 2 + rng.uniform(-0.1, 0.1, shape) * call).astype(
            dtype
        )
    if op is un.SigmoidOp and call == 1:  # past where e**-x overflows, and denormal results
        return rng.uniform(-110.0, 110.0, shape).astype(dtype)
    if op in (un.SinOp, un.CosOp) and call == 1:
        return rng.uniform(-1e4, 1e4, shape).astype(dtype)
    return random_array(rng, shape, dtype)


# unary.py's other ops have their cases in test_differential.py's SPECS
IN_SPECS = {un.NegOp, un.AbsOp, un.SqrtOp, un.ExpOp, un.LogOp, un.TanhOp, un.SignOp}


def test_every_unary_op_is_covered():
    in_module = {cls for cls in REGISTRY if cls.__module__ == un.__name__}
    assert COVERED_OPS == set(ACCEPTED)
    assert in_module == COVERED_OPS | IN_SPECS


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_infer_accepts_exactly_the_listed_dtypes(op):
    accepted = []
    for dtype in ALL_DTYPES:
        try:
            REGISTRY[op].infer(tensor(dtypes.element_type(dtype), (None, 2)))
        except TypeError:
            continue
        accepted.append(dtype)
    assert tuple(accepted) == ACCEPTED[op]


@pytest.mark.parametrize("op", OPS, ids=[op.name for op in OPS])
def test_compiled_matches_interpreted(op):
    cases = [
        (d, s) for d in ACCEPTED[op] for s in SHAPES if d in ("float32", "int32") or s[0] == (16,)
    ]
    xs = [placeholder(decl, d, f"x{i}") for i, (d, (decl, _)) in enumerate(cases)]
    f = Function(xs, [emit(op, x) for x in xs])
    rng = np.random.default_rng(0)
    for call in (0, 1):
        arrays = [_inputs(rng, op, d, calls[call], call) for d, (_, calls) in cases]
        got = f(arrays)
        want = interp.run_module(f.module, arrays)
        for (d, (decl, _)), a, g, w in zip(cases, arrays, got, want, strict=True):
            assert_close(g, w, msg=f"{op.name} {d} {decl} call {call} on {a.shape}")


def test_float16_is_computed_in_float32():
    x = placeholder((4,), "float16")
    f = Function([x], [emit(un.SinOp, x), emit(un.Expm1Op, x), emit(un.RoundOp, x)])
    values = np.array([1e4, 0.5, 2.5, -3.0], np.float16)
    sin, expm1, rnd = f([values])
    wide = values.astype(np.float32)
    np.testing.assert_array_equal(sin, np.sin(wide).astype(np.float16))
    with np.errstate(over="ignore"):
        assert_close(expm1, np.expm1(wide).astype(np.float16))
    np.testing.assert_array_equal(rnd, np.array([1e4, 0.0, 2.0, -3.0], np.float16))


def test_the_interpreters_sigmoid_by_hand():
    x = placeholder((6,), "float32")
    module = Function([x], [emit(un.SigmoidOp, x)]).module
    values = np.array([0.0, np.log(3.0), -np.log(3.0), -200.0, 200.0, np.nan], np.float32)
    (got,) = interp.run_module(module, [values])
    assert got.dtype == np.float32
    np.testing.assert_allclose(got[:5], [0.5, 0.75, 0.25, 0.0, 1.0], rtol=1e-6, atol=0)
    assert np.isnan(got[5])
