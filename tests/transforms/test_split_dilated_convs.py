"""aotk-split-dilated-convs: a conv of a dilated input becomes one plain conv per output
phase, interleaved; the values stay the oracle's, and what the rewrite does not take is
left alone."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from conftest import conv_attrs, emit, placeholder, random_array, run_both

from aotk.dialect.conv import ConvOp
from aotk.dialect.linalg import MatMulOp
from aotk.function import Function
from aotk.lowering import pipeline

# x with a dynamic batch, the kernel, the conv's attributes, and the phases that hold a tap
CASES = {
    "transpose_same": (
        (5, 6, 8),
        (3, 3, 8, 16),
        {"lhs_dilation": (2, 2), "pad_before": (1, 1), "pad_after": (2, 2)},
        4,
    ),
    "gapped_taps": (
        (4, 5, 8),
        (3, 2, 8, 16),
        {"lhs_dilation": (2, 3), "dilation": (2, 1), "pad_before": (1, 0), "pad_after": (0, 2)},
        1 * 2,
    ),
    "one_by_one": ((4, 5, 8), (1, 1, 8, 16), {"lhs_dilation": (2, 2), "pad_after": (1, 1)}, 1),
    "cut_input": ((5, 4, 8), (3, 3, 8, 16), {"lhs_dilation": (2, 2), "pad_after": (2, 2)}, 4),
    "wide_pads": (
        (3, 4, 8),
        (3, 3, 8, 16),
        {"lhs_dilation": (2, 2), "pad_before": (4, 3), "pad_after": (0, 5)},
        4,
    ),
    "depthwise": (
        (5, 6, 8),
        (3, 3, 1, 8),
        {"lhs_dilation": (2, 2), "pad_before": (1, 1), "pad_after": (2, 2), "groups": 8},
        4,
    ),
    "one_axis_3": (
        (7, 8),
        (4, 8, 16),
        {"lhs_dilation": (3,), "pad_before": (1,), "pad_after": (2,)},
        3,
    ),
}


def _case(name: str, dtype: str = "float32") -> tuple[Any, Any, Any]:
    x_shape, w_shape, attrs, _ = CASES[name]
    x = placeholder((None, *x_shape), dtype, "x")
    w = placeholder(w_shape, dtype, "w")
    return x, w, emit(ConvOp, x, w, **conv_attrs(len(x_shape) - 1, **attrs))


def _matmuls(f: Function) -> int:
    graph = pipeline.lower(f.module.clone(), stop_after="graph")
    return sum(isinstance(op, MatMulOp) for op in graph.walk())


def _convs(f: Function) -> list[ConvOp]:
    graph = pipeline.lower(f.module.clone(), stop_after="graph")
    return [op for op in graph.walk() if isinstance(op, ConvOp)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_phases_compute_the_dilated_conv(name: str, dtype: str) -> None:
    x, w, y = _case(name, dtype)
    rng = np.random.default_rng(2)
    w_value = random_array(rng, w.shape, dtype)
    calls = [[random_array(rng, (batch, *x.shape[1:]), dtype), w_value] for batch in (2, 1, 0)]
    f = run_both([x, w], [y], calls, scales=[10.0 * math.prod(w.shape[:-1])])
    convs = _convs(f)
    # phases of a 1 x 1 window are matmuls (`aotk-pointwise-convs` runs after the split)
    assert len(convs) + _matmuls(f) == CASES[name][3]
    assert all(set(op.attrs()["lhs_dilation"]) == {1} for op in convs)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ((None, 5, 6, 8), (3, 3, 8, 16), {"lhs_dilation": (2, 2), "strides": (2, 1)}),
        ((None, 5, 6, 8), (3, 3, 8, 2), {"lhs_dilation": (2, 2)}),  # under a vector of outputs
        ((None, 5, 6, 8), (3, 3, 4, 16), {"lhs_dilation": (2, 2), "groups": 2}),  # grouped
        ((None, 3, 3, 8), (9, 9, 8, 16), {"lhs_dilation": (8, 4)}),  # 32 phases: too many
        ((None, None, 6, 8), (3, 3, 8, 16), {"lhs_dilation": (2, 2)}),  # a dynamic row count
        ((None, 5, 6, 8), (3, 3, 8, 16), {"lhs_dilation": (1, 1)}),  # nothing dilated
    ],
)
def test_what_the_rewrite_leaves_alone(x_shape, w_shape, attrs) -> None:
    x, w = placeholder(x_shape, "float32", "x"), placeholder(w_shape, "float32", "w")
    f = Function([x, w], [emit(ConvOp, x, w, **conv_attrs(2, **attrs))])
    convs = _convs(f)
    assert [op.attrs()["lhs_dilation"] for op in convs] == [attrs["lhs_dilation"]]
