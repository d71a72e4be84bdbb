"""Compiled == interpreted for `aotk.conv` and `aotk.pool`.

One compiled function per dtype holds the cases as separate outputs and is called twice;
cases with dynamic dims get two different sizes. float32 runs every case (register tiles,
the row order on borders, groups, input dilation, 'same' padding on dynamic dims); the
other dtypes run the cases of their own code paths.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import FLOATS, INTS, conv_attrs, emit, placeholder, random_array, run_both

from aotk.dialect.arithmetic import AddOp, MaximumOp, MulOp
from aotk.dialect.conv import ConvOp, np_conv
from aotk.dialect.conv_backprop import ConvBackpropOp
from aotk.dialect.conv_fused import ConvFusedOp
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.pool import PoolOp
from aotk.dialect.pool_grad import PoolGradOp
from aotk.dialect.unary import TanhOp
from aotk.lowering import pipeline

COVERED_OPS = {ConvOp, ConvBackpropOp, ConvFusedOp, PoolOp, PoolGradOp}

Shape = tuple[int | None, ...]


@dataclass(frozen=True)
class Case:
    """One output: operand shapes as declared and per call, and the op's attributes."""

    name: str
    decl: tuple[Shape, ...]
    calls: tuple[tuple[tuple[int, ...], ...], ...]  # two calls, one shape per operand
    attrs: dict[str, Any] = field(default_factory=dict)


def _two_calls(x: Shape, calls: Any) -> list[tuple[int, ...]]:
    """The shapes of x in the two calls: `calls`, or x's static shape twice."""
    if calls is not None:
        return [tuple(c) for c in calls]
    static = tuple(d for d in x if d is not None)
    assert len(static) == len(x), f"{x} has dynamic dims: give the calls' shapes"
    return [static, static]


def _conv(name: str, x: Shape, w: Shape, calls: Any = None, **kw: Any) -> Case:
    static_w = tuple(d for d in w if d is not None)
    both = tuple((c, static_w) for c in _two_calls(x, calls))
    return Case(name, (x, w), both, conv_attrs(len(x) - 2, **kw))


CONV_CASES = [
    _conv(
        "tiled_same", (None, 7, 9, 3), (3, 3, 3, 16), [(2, 7, 9, 3), (1, 7, 9, 3)], padding="same"
    ),
    _conv(
        "tiled_padded_strided",
        (2, 9, 8, 2),
        (2, 3, 2, 12),
        strides=(2, 1),
        dilation=(1, 2),
        pad_before=(1, 0),
        pad_after=(0, 2),
    ),
    _conv(
        "dynamic_spatial_same",
        (None, None, None, 2),
        (3, 3, 2, 8),
        [(1, 5, 7, 2), (2, 9, 4, 2)],
        strides=(2, 2),
        padding="same",
    ),
    _conv("short_dynamic_rows", (1, 5, None, 2), (3, 3, 2, 8), [(1, 5, 4, 2), (1, 5, 12, 2)]),
    _conv("grouped", (2, 5, 5, 4), (3, 3, 2, 6), groups=2, padding="same"),
    _conv(
        "depthwise",
        (None, 6, 6, 3),
        (3, 3, 1, 3),
        [(2, 6, 6, 3), (1, 6, 6, 3)],
        groups=3,
        strides=(2, 2),
        pad_before=(1, 1),
        pad_after=(1, 1),
    ),
    _conv(
        "depthwise_wide",
        (None, 6, 7, 12),
        (3, 3, 1, 12),
        [(2, 6, 7, 12), (1, 6, 7, 12)],
        groups=12,
        padding="same",
    ),
    _conv(
        "lhs_dilated_1d", (2, 4, 3), (3, 3, 5), lhs_dilation=(2,), pad_before=(2,), pad_after=(3,)
    ),
    # more input channels than one part of the tiled kernel takes (64)
    _conv("two_channel_parts", (1, 4, 5, 70), (3, 3, 70, 8), padding="same"),
    _conv("conv_3d", (1, 4, 5, 3, 2), (2, 2, 2, 2, 8), padding="same"),
    # the tiles' lines: border columns and corners of a strided, dilated 2-D conv; the
    # one-position lines of other ranks across two channel parts; pads wider than the
    # window (rows with no tap inside the input)
    _conv(
        "lines_2d", (2, 11, 13, 3), (3, 3, 3, 16), strides=(2, 3), dilation=(2, 1), padding="same"
    ),
    _conv("lines_1d_parts", (2, 11, 70), (5, 70, 8), dilation=(2,), padding="same"),
    _conv("lines_3d_parts", (1, 3, 4, 6, 70), (3, 3, 3, 70, 16), padding="same"),
    _conv("pads_past_window", (1, 3, 7, 2), (2, 2, 2, 8), pad_before=(3, 1), pad_after=(2, 3)),
    _conv(
        "few_channels_1d",
        (None, 6, 3),
        (3, 3, 2),
        [(3, 6, 3), (1, 6, 3)],
        dilation=(2,),
        pad_before=(4,),
    ),
]
SHORT_CONV = ["tiled_same", "grouped", "lhs_dilated_1d"]


def _pool(
    name: str, x: Shape, calls: Any, window: Any, strides: Any, padding: str, mode: str
) -> Case:
    attrs = {"window": window, "strides": strides, "padding": padding, "mode": mode}
    return Case(name, (x,), tuple((c,) for c in _two_calls(x, calls)), attrs)


POOL_CASES = [
    _pool("max_same", (None, 5, 7, 3), [(2, 5, 7, 3), (1, 5, 7, 3)], (3, 3), (2, 2), "same", "max"),
    _pool("max_valid_1d", (2, 9, 4), None, (3,), (2,), "valid", "max"),
    _pool("avg_same", (1, 5, 4, 2), None, (3, 2), (1, 2), "same", "avg"),
    _pool(
        "avg_dynamic",
        (None, None, None, 2),
        [(1, 4, 6, 2), (2, 7, 3, 2)],
        (2, 3),
        (2, 1),
        "same",
        "avg",
    ),
    _pool("avg_3d", (1, 4, 3, 5, 2), None, (2, 2, 3), (2, 1, 2), "valid", "avg"),
]


def _run(cases: list[Case], op: Any, dtype: str, scales: list[float]) -> None:
    rng = np.random.default_rng(0)
    xs, ys = [], []
    for i, case in enumerate(cases):
        ins = [placeholder(s, dtype, f"in{i}_{j}") for j, s in enumerate(case.decl)]
        xs += ins
        ys.append(emit(op, *ins, **case.attrs))
    calls = [
        [random_array(rng, s, dtype) for case in cases for s in case.calls[k]] for k in range(2)
    ]
    run_both(xs, ys, calls, scales=scales, labels=[c.name for c in cases])


def _terms(case: Case) -> float:
    w = case.decl[1]
    return float(np.prod(w[:-1]))  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_compiled_matches_interpreted(dtype):
    cases = CONV_CASES if dtype == "float32" else [c for c in CONV_CASES if c.name in SHORT_CONV]
    # float16 accumulates in float32 and rounds once; wider types sum terms in their own type
    scales = [1.0 if dtype == "float16" else 10.0 * _terms(c) for c in cases]
    _run(cases, ConvOp, dtype, scales)


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_pool_compiled_matches_interpreted(dtype):
    if dtype == "float32":
        cases = POOL_CASES
    elif dtype in FLOATS:
        cases = [POOL_CASES[0], POOL_CASES[3]]
    else:
        cases = [c for c in POOL_CASES if c.attrs["mode"] == "max"]
    _run(cases, PoolOp, dtype, [10.0] * len(cases))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    ("mode", "padding", "window", "strides"),
    [
        ("max", "same", (2, 2), (2, 1)),
        ("avg", "same", (3, 2), (2, 2)),
        ("max", "valid", (2, 3), (1, 2)),
    ],
)
def test_pool_grad_compiled_matches_interpreted(dtype, mode, padding, window, strides):
    """The pool's gradient op, on dynamic batch and spatial dims, with ties for max."""
    rng = np.random.default_rng(0)
    attrs = {"window": window, "strides": strides, "padding": padding, "mode": mode}
    x = placeholder((None, None, 5, 3), dtype, "x")
    y = emit(PoolOp, x, **attrs)
    g = placeholder(y.shape, dtype, "g")
    dx = emit(PoolGradOp, g, x, y, **attrs)
    calls = []
    for batch, rows in ((2, 6), (1, 4)):
        xs = np.round(random_array(rng, (batch, rows, 5, 3), dtype) * 2) / 2  # ties
        out_rows = (
            -(-rows // strides[0]) if padding == "same" else (rows - window[0]) // strides[0] + 1
        )
        out_cols = -(-5 // strides[1]) if padding == "same" else (5 - window[1]) // strides[1] + 1
        calls.append([xs, random_array(rng, (batch, out_rows, out_cols, 3), dtype)])
    run_both([x, g], [dx], calls, scales=[10.0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("wrt", ["input", "kernel"])
def test_conv_backprop_compiled_matches_interpreted(dtype, wrt):
    """Both gradients of a strided, dilated, grouped, same-padded conv on dynamic dims."""
    rng = np.random.default_rng(0)
    attrs = {
        "strides": (2, 1),
        "dilation": (1, 2),
        "lhs_dilation": (1, 1),
        "pad_before": (0, 0),
        "pad_after": (0, 0),
        "padding": "same",
        "groups": 2,
    }
    x = placeholder((None, None, 6, 4), dtype, "x")
    w = placeholder((3, 2, 2, 6), dtype, "w")
    y = emit(ConvOp, x, w, **attrs)
    g = placeholder(y.shape, dtype, "g")
    out = emit(ConvBackpropOp, g, x, w, wrt=wrt, **attrs)
    calls = []
    for batch, rows in ((2, 5), (1, 3)):
        g_shape = (batch, -(-rows // 2), 6, 6)
        shapes = [(batch, rows, 6, 4), (3, 2, 2, 6), g_shape]
        calls.append([random_array(rng, s, dtype) for s in shapes])
    run_both([x, w, g], [out], calls, scales=[200.0])


def test_covered_ops_reject_what_they_do_not_accept():
    x = placeholder((1, 5, 5, 2), "int32")
    with pytest.raises(TypeError, match="avg pooling needs a float"):
        emit(PoolOp, x, window=(2, 2), strides=(1, 1), padding="valid", mode="avg")
    with pytest.raises(TypeError, match="expected float tensors"):
        emit(ConvOp, x, placeholder((2, 2, 2, 2), "int32"), **conv_attrs(2))
    y = placeholder((1, 5, 5, 2))
    with pytest.raises(ValueError, match="kernel shape must be static"):
        emit(ConvOp, y, placeholder((2, None, 2, 2)), **conv_attrs(2))
    with pytest.raises(ValueError, match="groups 3 must be >= 1 and divide"):
        emit(ConvOp, y, placeholder((2, 2, 2, 4)), **conv_attrs(2, groups=3))
    with pytest.raises(ValueError, match="'same' padding needs lhs_dilation 1"):
        emit(
            ConvOp,
            y,
            placeholder((2, 2, 2, 4)),
            **conv_attrs(2, padding="same", lhs_dilation=(2, 1)),
        )
    with pytest.raises(ValueError, match=r"pad_before must be 2 ints >= 0"):
        emit(ConvOp, y, placeholder((2, 2, 2, 4)), **conv_attrs(2, pad_before=(-1, 0)))
    with pytest.raises(ValueError, match="window 2 dilated by 5"):
        emit(ConvOp, y, placeholder((2, 2, 2, 4)), **conv_attrs(2, dilation=(5, 1)))
    with pytest.raises(ValueError, match="mode must be 'max' or 'avg'"):
        emit(PoolOp, y, window=(2, 2), strides=(1, 1), padding="valid", mode="min")
    with pytest.raises(ValueError, match="smaller than the window 6"):
        emit(PoolOp, y, window=(6, 1), strides=(1, 1), padding="valid", mode="max")


EPILOGUE_CASES = [
    (CONV_CASES[0], "relu"),  # tiled, 'same', dynamic batch
    (CONV_CASES[1], "tanh"),  # tiled, strided, dilated, explicit pads; a shifted block
    (_conv("epilogue_parts", (1, 5, 6, 70), (3, 3, 70, 20), padding="same"), "relu"),
    (_conv("epilogue_parts_tanh", (1, 5, 6, 70), (3, 3, 70, 20), padding="same"), "tanh"),
    (CONV_CASES[4], "relu"),  # grouped: the row order, then a pass
]


def _epilogue(conv: Any, bias: Any, activation: str, dtype: str) -> Any:
    """relu(conv + bias) * 0.5 (the tiles apply it to their registers) or tanh(conv +
    bias) (applied per line from memory)."""
    biased = emit(AddOp, conv, bias)
    if activation == "tanh":
        return emit(TanhOp, biased)
    zero, half = (emit(ConstantOp, value=v, dtype=dtype) for v in (0.0, 0.5))
    return emit(MulOp, emit(MaximumOp, biased, zero), half)


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_epilogue_compiled_matches_interpreted(dtype):
    """An epilogue with a per-channel bias, fused into the conv (aotk-fuse): in registers
    or per line, in the last part of several; the untiled orders take it in a pass."""
    cases = EPILOGUE_CASES if dtype == "float32" else EPILOGUE_CASES[:2]
    rng = np.random.default_rng(1)
    xs, ys, calls = [], [], [[], []]
    for i, (case, activation) in enumerate(cases):
        x, w = (placeholder(s, dtype, f"in{i}_{j}") for j, s in enumerate(case.decl))
        channels = case.decl[1][-1]
        bias = placeholder((channels,), dtype, f"bias{i}")
        xs += [x, w, bias]
        ys.append(_epilogue(emit(ConvOp, x, w, **case.attrs), bias, activation, dtype))
        for k in range(2):
            calls[k] += [random_array(rng, s, dtype) for s in case.calls[k]]
            calls[k].append(random_array(rng, (channels,), dtype))
    scales = [1.0 if dtype == "float16" else 10.0 * _terms(c) for c, _ in cases]
    f = run_both(xs, ys, calls, scales=scales, labels=[c.name for c, _ in cases])
    graph = f.module.clone()
    pipeline.lower(graph, stop_after="graph")
    fused = [op for op in graph.walk() if isinstance(op, ConvFusedOp)]
    assert len(fused) == len(cases), "each conv takes its epilogue"


FILTER_GRAD_CASES = [
    # (name, x decl, x shapes per call, kernel shape, strides, dilation, padding,
    # (pad_before, pad_after))
    (
        "same_3x3",
        (None, 9, 8, 7),
        [(2, 9, 8, 7), (1, 9, 8, 7)],
        (3, 3, 7, 20),
        (1, 1),
        (1, 1),
        "same",
        ((0, 0), (0, 0)),
    ),
    (
        "valid_strided_dilated",
        (None, None, 11, 3),
        [(2, 10, 11, 3), (3, 7, 11, 3)],
        (3, 2, 3, 33),
        (2, 3),
        (2, 1),
        "explicit",
        ((0, 0), (0, 0)),
    ),
    (
        "explicit_pads",
        (None, 6, 7, 5),
        [(2, 6, 7, 5), (1, 6, 7, 5)],
        (2, 4, 5, 16),
        (2, 2),
        (1, 1),
        "explicit",
        ((1, 0), (3, 2)),
    ),
    # whole output blocks: images in chunks that stay in L2 (2 per chunk here, 1 in
    # float64), a last channel tile shifted back over rows another tile owns
    (
        "owned_rows",
        (None, 40, 40, 8),
        [(3, 40, 40, 8), (1, 40, 40, 8)],
        (3, 3, 8, 32),
        (1, 1),
        (1, 1),
        "same",
        ((0, 0), (0, 0)),
    ),
    (
        "conv3d",
        (None, 4, 5, 3, 2),
        [(2, 4, 5, 3, 2), (1, 4, 5, 3, 2)],
        (2, 3, 2, 2, 17),
        (1, 2, 1),
        (1, 1, 1),
        "same",
        ((0, 0, 0), (0, 0, 0)),
    ),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", FILTER_GRAD_CASES, ids=lambda c: c[0])
def test_conv_kernel_gradient_tiles_match_interpreted(dtype, case):
    """The register-tiled kernel gradient (no groups): strides, dilation, same, valid and
    explicit pads, dynamic batch and rows, channel counts that leave partial tiles."""
    _, x_decl, x_shapes, w_shape, strides, dilation, padding, pads = case
    rng = np.random.default_rng(0)
    rank = len(w_shape) - 2
    attrs = {
        "strides": strides,
        "dilation": dilation,
        "lhs_dilation": (1,) * rank,
        "pad_before": pads[0],
        "pad_after": pads[1],
        "padding": padding,
        "groups": 1,
    }
    x = placeholder(x_decl, dtype, "x")
    w = placeholder(w_shape, dtype, "w")
    y = emit(ConvOp, x, w, **attrs)
    g = placeholder(y.shape, dtype, "g")
    out = emit(ConvBackpropOp, g, x, w, wrt="kernel", **attrs)
    calls, terms = [], 1
    for shape in x_shapes:
        y_shape = np_conv(np.zeros(shape), np.zeros(w_shape), **attrs).shape
        calls.append([random_array(rng, s, dtype) for s in (shape, w_shape, y_shape)])
        terms = max(terms, int(np.prod(y_shape[:-1])))  # products summed per element
    run_both([x, w, g], [out], calls, scales=[10.0 * terms])
