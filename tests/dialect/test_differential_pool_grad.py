"""aotk.pool_grad on static spatial sizes, where it takes one pass if every window lies
inside the input and none overlap: compiled against the oracle, and both against
gradients worked by hand."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import FLOATS, emit, placeholder, random_array, run_both

from aotk import interp
from aotk.dialect.pool import PoolOp
from aotk.dialect.pool_grad import PoolGradOp
from aotk.function import Function

CHANNELS = 19  # not a multiple of any vector width: the channel loop has a tail

# mode, padding, window, strides, spatial sizes
CASES = [
    ("max", "valid", (2, 2), (2, 2), (4, 6)),  # the windows tile the image
    ("max", "valid", (2, 2), (2, 2), (5, 7)),  # a row and a column under no window
    ("avg", "valid", (2, 3), (3, 4), (7, 9)),  # gaps between the windows
    ("max", "same", (2, 2), (2, 2), (6, 4)),  # 'same' that pads nothing
    ("avg", "same", (3, 3), (3, 3), (6, 9)),
    ("max", "valid", (2, 2, 2), (2, 2, 2), (4, 4, 3)),  # 3-D, the last axis partly covered
    # not one pass:
    ("max", "valid", (3, 3), (2, 2), (7, 7)),  # overlapping windows
    ("max", "same", (3, 3), (1, 1), (5, 6)),  # overlapping, padded on every side
    ("avg", "same", (2, 2), (2, 2), (5, 5)),  # padded: the last windows are cut
    ("max", "valid", (9, 8), (9, 8), (9, 17)),  # more taps than are unrolled
]


def _attrs(mode: str, padding: str, window: tuple[int, ...], strides: tuple[int, ...]) -> dict:
    return {"window": window, "strides": strides, "padding": padding, "mode": mode}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(("mode", "padding", "window", "strides", "sizes"), CASES)
def test_static_sizes_match_interpreted(dtype, mode, padding, window, strides, sizes):
    """Ties (values in halves), a NaN and an infinite cotangent, and three calls, so that
    an output buffer comes back holding an earlier call's values."""
    rng = np.random.default_rng(1)
    attrs = _attrs(mode, padding, window, strides)
    x = placeholder((None, *sizes, CHANNELS), dtype, "x")
    y = emit(PoolOp, x, **attrs)
    g = placeholder(y.shape, dtype, "g")
    dx = emit(PoolGradOp, g, x, y, **attrs)
    calls = []
    for batch in (2, 3, 2):
        xs = np.round(random_array(rng, (batch, *sizes, CHANNELS), dtype) * 2) / 2
        pooled = [
            -(-s // st) if padding == "same" else (s - w) // st + 1
            for s, w, st in zip(sizes, window, strides, strict=True)
        ]
        gs = random_array(rng, (batch, *pooled, CHANNELS), dtype)
        gs.flat[[5, 40]] = [np.nan, np.inf]
        calls.append([xs, gs])
    run_both([x, g], [dx], calls, scales=[10.0])


def _by_hand(mode: str, x: list[list[float]], g: float) -> np.ndarray:
    """The gradient of one 2x2 window pooled from a 1x2x2x1 input, compiled; the oracle's
    must be the same array."""
    attrs = _attrs(mode, "valid", (2, 2), (2, 2))
    xp = placeholder((1, 2, 2, 1), "float32", "x")
    gp = placeholder((1, 1, 1, 1), "float32", "g")
    f = Function([xp, gp], [emit(PoolGradOp, gp, xp, emit(PoolOp, xp, **attrs), **attrs)])
    xs = np.array(x, np.float32).reshape(1, 2, 2, 1)
    args = [xs, np.full((1, 1, 1, 1), g, np.float32)]
    got, want = f(args)[0], interp.run_module(f.module, args)[0]
    np.testing.assert_array_equal(got, want)
    return got.reshape(2, 2)


def test_max_goes_to_the_first_maximum_in_row_major_order():
    np.testing.assert_array_equal(_by_hand("max", [[1, 3], [3, 2]], 5), [[0, 5], [0, 0]])
    np.testing.assert_array_equal(_by_hand("max", [[4, 4], [4, 4]], -2), [[-2, 0], [0, 0]])
    got = _by_hand("max", [[1, 2], [3, 3]], np.nan)
    np.testing.assert_array_equal(np.isnan(got), [[False, False], [True, False]])
    np.testing.assert_array_equal(np.nan_to_num(got), 0)


def test_avg_shares_the_cotangent_evenly():
    np.testing.assert_array_equal(_by_hand("avg", [[1, 3], [3, 2]], 4), [[1, 1], [1, 1]])
