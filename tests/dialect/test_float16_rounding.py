"""float16 computes in float32 and rounds after every op, as NumPy does: a fused chain of
float16 ops gives the oracle's values exactly, not more precise ones."""

from __future__ import annotations

import numpy as np

from aotk import backend as K
from aotk import interp


def _compiled_and_interpreted(x: K.KTensor, y: K.KTensor, value: np.ndarray) -> tuple:
    f = K.function([x], [y])
    captured = [c.storage for c in f.captures]
    return f([value])[0], interp.run_module(f.module, [value, *captured])[0]


def test_a_fused_float16_chain_rounds_after_each_op() -> None:
    """Each +, -, *, / rounded to float16 from float32 is float16's own correctly
    rounded op (24 bits >= 2 x 11 + 2), so compiled and NumPy agree to the bit."""
    x = K.placeholder((4096,), dtype="float16")
    y = ((x * 3.0 + 1.0) / 7.0 - x) * x + 0.1
    value = np.random.default_rng(0).uniform(-4, 4, 4096).astype(np.float16)
    got, want = _compiled_and_interpreted(x, y, value)
    assert got.dtype == want.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_a_float16_constant_is_rounded_where_it_is_used() -> None:
    """1 - 1e-7 is 1.0 in float16: a clip to it and 1 minus that is 0 at x = 1, and a
    binary cross-entropy is inf there, as in NumPy (float32 intermediates gave 1e-7
    and 16)."""
    x = K.placeholder((3,), dtype="float16")
    value = np.array([1.0, 0.5, 2.0], np.float16)
    got, want = _compiled_and_interpreted(x, 1.0 - K.clip(x, 1e-7, 1 - 1e-7), value)
    np.testing.assert_array_equal(got, [0.0, 0.5, 0.0])
    np.testing.assert_array_equal(want, got)
    target = K.constant(np.array([1.0, 0.0, 1.0], np.float16), dtype="float16")
    with np.errstate(invalid="ignore"):  # NumPy's inf - inf
        got, want = _compiled_and_interpreted(x, K.binary_crossentropy(target, x), value)
    assert np.isnan(got[0]) and np.isnan(want[0])
    np.testing.assert_array_equal(got[1:], want[1:])


def test_a_round_trip_through_float16_inside_a_chain_rounds() -> None:
    """cast(cast(x, float16), float32) fused into a chain had been x itself: 70000 stayed
    70000 (float16: inf) and 1/3 kept float32's bits."""
    x = K.placeholder((4,))
    value = np.array([0.1, 1 / 3, 1e-8, 70000.0], np.float32)
    y = K.cast(K.cast(x, "float16"), "float32") * 2.0
    with np.errstate(over="ignore"):  # 70000 is inf in float16
        got, want = _compiled_and_interpreted(x, y, value)
        expected = value.astype(np.float16).astype(np.float32) * 2
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(want, expected)
