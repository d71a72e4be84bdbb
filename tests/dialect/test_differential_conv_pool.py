"""Compiled == interpreted for `aotk.conv_pool`, which the graph stage builds from a conv,
its epilogue and a pool (`aotk-conv-pool`); its oracle against values worked by hand;
and what it rejects.

One compiled function per dtype holds the cases as separate outputs and is called twice
(dynamic dims get two sizes, a batch of 0 among them). The interpreter runs the graph as
traced: a conv, its activation and an `aotk.pool`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from conftest import conv_attrs, emit, placeholder, random_array, run_both
from xdsl.dialects.builtin import Float32Type, Float64Type
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from aotk import backend as K
from aotk import interp
from aotk.context import make_context
from aotk.dialect.arithmetic import AddOp, MaximumOp
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_pool import ConvPoolOp
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.pool import PoolOp
from aotk.dialect.unary import TanhOp
from aotk.kernels import conv_winograd, winograd_tile
from aotk.kernels.dim_arith import STATIC
from aotk.kernels.window import Window
from aotk.lowering import pipeline

COVERED_OPS = {ConvPoolOp}

Shape = tuple[int | None, ...]


@dataclass(frozen=True)
class Case:
    """conv(x, w) -> activation -> pool, with x's shape declared and in the two calls."""

    name: str
    x: Shape
    w: tuple[int, int, int, int]
    calls: tuple[tuple[int, ...], tuple[int, ...]]
    conv: dict[str, Any]
    window: tuple[int, int]
    mode: str = "max"
    activation: str | None = None  # "relu" (after a bias), "tanh", or none


def _conv_attrs(**kw: Any) -> dict[str, Any]:
    """A 2-D conv's attributes, 'same' padded unless `kw` says otherwise."""
    return conv_attrs(2, **({"padding": "same"} | kw))


def _case(name: str, x: Shape, w: Any, calls: Any, window: Any, **kw: Any) -> Case:
    conv = _conv_attrs(**kw.pop("conv", {}))
    return Case(name, x, w, calls, conv, window, **kw)


CASES = [
    # W5's shape, small: 'same', 2 x 2 max, relu after a bias (moved after the pool by
    # aotk-simplify, then back into the epilogue)
    _case("same_bias_relu", (None, 8, 8, 5), (3, 3, 5, 16), [(2, 8, 8, 5), (1, 8, 8, 5)],
          (2, 2), activation="relu"),
    # conv rows and columns past the last whole window: never computed
    _case("partial_windows", (2, 9, 7, 5), (3, 3, 5, 16), [(2, 9, 7, 5)] * 2, (2, 2)),
    _case("explicit_pads_avg", (2, 9, 7, 5), (3, 3, 5, 16), [(2, 9, 7, 5)] * 2, (2, 3),
          mode="avg", conv={"padding": "explicit", "pad_before": (1, 0), "pad_after": (0, 2)}),
    # a scalar epilogue (tanh), applied per line of the band
    _case("strided_dilated_tanh", (2, 17, 15, 4), (3, 3, 4, 16), [(2, 17, 15, 4)] * 2, (2, 2),
          mode="avg", activation="tanh", conv={"strides": (2, 1), "dilation": (1, 2)}),
    # two parts over input channels: the band accumulates, the epilogue in the last
    _case("channel_parts", (None, 9, 8, 70), (3, 3, 70, 16), [(2, 9, 8, 70), (0, 9, 8, 70)],
          (2, 2), activation="relu"),
    # output channels in blocks of 64, the last shifted back to end at 130
    _case("output_blocks", (1, 6, 6, 4), (3, 3, 4, 130), [(1, 6, 6, 4)] * 2, (3, 2)),
    _case("ymm_channels", (2, 6, 10, 3), (3, 3, 3, 8), [(2, 6, 10, 3)] * 2, (2, 2)),
    _case("dynamic_spatial", (None, None, None, 4), (3, 3, 4, 32), [(2, 9, 10, 4), (1, 2, 3, 4)],
          (2, 2)),
    # no position has every tap inside the input: border lines only
    _case("no_interior", (1, 4, 2, 3), (5, 5, 3, 16), [(1, 4, 2, 3)] * 2, (2, 2)),
    # an interior shorter than a tile
    _case("short_interior", (1, 6, 5, 3), (3, 3, 3, 16), [(1, 6, 5, 3)] * 2, (2, 3),
          conv={"padding": "explicit"}),
]  # fmt: skip
FLOAT64_CASES = ["same_bias_relu", "explicit_pads_avg", "channel_parts"]

# 3 x 3, stride 1, 2 x 2 windows, a vector of channels in and out: Winograd's F(4x4, 3x3),
# whose tile holds 2 x 2 windows (masked where it overhangs the pooled output)
WINOGRAD_CASES = [
    # W5's second conv, small, and a batch of 0 (no tiles: the direct conv)
    _case("w_same_bias_relu", (None, 8, 10, 32), (3, 3, 32, 64), [(3, 8, 10, 32), (0, 8, 10, 32)],
          (2, 2), activation="relu"),
    # channels that are no multiple of a vector; a pad on one side of each axis; the
    # last conv row and column under no window
    _case("w_uneven_avg", (4, 9, 7, 20), (3, 3, 20, 40), [(4, 9, 7, 20)] * 2, (2, 2), mode="avg",
          conv={"padding": "explicit", "pad_before": (1, 0), "pad_after": (0, 2)}),
    # 21 windows a row; a scalar epilogue
    _case("w_long_rows_tanh", (2, 6, 44, 16), (3, 3, 16, 16), [(2, 6, 44, 16)] * 2, (2, 2),
          activation="tanh", conv={"padding": "explicit"}),
    # one window an image
    _case("w_one_window", (None, 4, 5, 16), (3, 3, 16, 24), [(48, 4, 5, 16), (3, 4, 5, 16)],
          (2, 2), conv={"padding": "explicit"}),
    # small images of a dynamic size in the second call: fewer tiles than Winograd takes
    _case("w_dynamic_spatial", (None, None, None, 16), (3, 3, 16, 32),
          [(3, 9, 10, 16), (1, 2, 3, 16)], (2, 2), activation="relu"),
]  # fmt: skip
# channels whose F4 blocks overflow L2: the products by matmuls; odd channels, odd
# pooled dims
WIDE_CASES = {
    "float32": _case("w_wide", (None, 9, 8, 330), (3, 3, 330, 300), [(5, 9, 8, 330)] * 2, (2, 2),
                     mode="avg"),
    "float64": _case("w_wide", (None, 9, 8, 170), (3, 3, 170, 150), [(5, 9, 8, 170)] * 2, (2, 2),
                     activation="relu"),
}  # fmt: skip


def _graph(case: Case, i: int, dtype: str) -> tuple[list[Any], Any]:
    x, w = placeholder(case.x, dtype, f"x{i}"), placeholder(case.w, dtype, f"w{i}")
    y = emit(ConvOp, x, w, **case.conv)
    inputs = [x, w]
    if case.activation == "relu":
        bias = placeholder((case.w[-1],), dtype, f"b{i}")
        inputs.append(bias)
        y = emit(MaximumOp, emit(AddOp, y, bias), emit(ConstantOp, value=0.0, dtype=dtype))
    elif case.activation == "tanh":
        y = emit(TanhOp, y)
    window = case.window
    return inputs, emit(PoolOp, y, window=window, strides=window, padding="valid", mode=case.mode)


def _arrays(case: Case, call: int, rng: np.random.Generator, dtype: str) -> list[np.ndarray]:
    shapes = [case.calls[call], case.w] + ([(case.w[-1],)] if case.activation == "relu" else [])
    return [random_array(rng, s, dtype) for s in shapes]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_pool_compiled_matches_interpreted(dtype: str) -> None:
    cases = CASES if dtype == "float32" else [c for c in CASES if c.name in FLOAT64_CASES]
    _check(cases, dtype, np.random.default_rng(5))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_winograd_convs_match_interpreted(dtype: str) -> None:
    elem = {"float32": Float32Type(), "float64": Float64Type()}[dtype]
    cases = [*WINOGRAD_CASES, WIDE_CASES[dtype]]
    for c in cases:
        attrs = {name: value for name, value in c.conv.items() if name != "rank"}
        win = Window.of_conv(c.w[:2], **attrs)
        assert conv_winograd.applies(elem, c.w, win, c.window, c.x[1:3])
        plan = conv_winograd.plan_for(elem, c.w)
        assert plan is not None
        tf = plan.tf
        assert tf is winograd_tile.F4 and plan.gemms == (c is cases[-1]), c.name
        conv = win.out_dims(STATIC, c.calls[0][1:3])
        side = tf.m // 2  # windows along a tile's side
        tiles = c.calls[0][0] * -(-(conv[0] // 2) // side) * -(-(conv[1] // 2) // side)
        assert tiles >= conv_winograd.min_tiles(tf), f"{c.name}: the first call takes Winograd"
    _check(cases, dtype, np.random.default_rng(7))


def _check(cases: list[Case], dtype: str, rng: np.random.Generator) -> None:
    """One function of every case, compiled against interpreted on two calls; each case
    must have become a conv_pool, or (a 1 x 1 window with no explicit padding) a matmul
    (`aotk-pointwise-convs`)."""
    inputs, outputs = [], []
    for i, case in enumerate(cases):
        xs, y = _graph(case, i, dtype)
        inputs += xs
        outputs.append(y)
    calls = [[a for case in cases for a in _arrays(case, k, rng, dtype)] for k in range(2)]
    scales = [10.0 * float(np.prod(c.w[:-1])) for c in cases]
    f = run_both(inputs, outputs, calls, scales=scales, labels=[c.name for c in cases])
    graph = f.module.clone()
    pipeline.lower(graph, stop_after="graph")
    matmuls = sum(isinstance(op, MatMulOp) for op in graph.walk())
    assert matmuls == sum(_pointwise(case) for case in cases)
    assert sum(isinstance(op, ConvPoolOp) for op in graph.walk()) == len(cases) - matmuls
    assert not any(isinstance(op, ConvOp) for op in graph.walk())


def _pointwise(case: Case) -> bool:
    conv = case.conv
    padded = conv.get("padding") == "explicit" and any((*conv["pad_before"], *conv["pad_after"]))
    return set(case.w[:2]) == {1} and not padded


def _random_case(rng: np.random.Generator, i: int) -> Case:
    """A conv of random window, strides, dilation and padding, pooled over a random
    window, on images at least as large as it needs."""

    def ints(lo: int, hi: int) -> tuple[int, int]:
        a, b = rng.integers(lo, hi, 2)
        return int(a), int(b)

    taps, strides, dilation, window = ints(1, 5), ints(1, 3), ints(1, 3), ints(1, 4)
    conv: dict[str, Any] = {"strides": strides, "dilation": dilation}
    if rng.random() < 0.5:
        conv |= {"padding": "explicit", "pad_before": ints(0, 3), "pad_after": ints(0, 3)}
    cin, cout = int(rng.choice([1, 3, 8, 33, 70])), int(rng.choice([8, 16, 24, 64, 72]))
    attrs = _conv_attrs(**conv)
    while True:
        size = ints(1, 15)
        out = Window.of_conv(taps, **attrs).out_dims(STATIC, size)
        if all(o >= w for o, w in zip(out, window, strict=True)):
            break
    shapes = tuple((n, *size, cin) for n in (2, 1))
    mode = str(rng.choice(["max", "avg"]))
    activation = [None, "relu", "tanh"][int(rng.integers(3))]
    decl, kernel = (None, *size, cin), (*taps, cin, cout)
    return _case(
        f"random_{i}", decl, kernel, shapes, window, mode=mode, activation=activation, conv=conv
    )


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_geometries_match_interpreted(dtype: str) -> None:
    rng = np.random.default_rng({"float32": 11, "float64": 12}[dtype])
    _check([_random_case(rng, i) for i in range(12)], dtype, rng)


def _module(body: str, types: tuple[str, str], result: str) -> Any:
    """A function of one conv_pool whose epilogue is relu(acc + b), b per channel (8)."""
    elem = types[0].rsplit("x", 1)[1].rstrip(">")
    scalar, bias = f"tensor<{elem}>", f"tensor<8x{elem}>"
    text = f"""func.func @main(%x: {types[0]}, %w: {types[1]}, %b: {bias}) -> {result} {{
  %y = aotk.conv_pool %x, %w {body} epilogue(%acc, %c = %b) : ({types[0]}, {types[1]},
    {bias}) -> {result} {{
    %s = "aotk.add"(%acc, %c) : ({scalar}, {scalar}) -> {scalar}
    %zero = "aotk.constant"() <{{value = 0.0 : f64, dtype = {elem}}}> : () -> {scalar}
    %r = "aotk.maximum"(%s, %zero) : ({scalar}, {scalar}) -> {scalar}
    aotk.yield %r : {scalar}
  }}
  func.return %y : {result}
}}"""
    return Parser(make_context(), text).parse_module()


WINDOW = "strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0]"


def _props(mode: str = "max", pool: str = "[2, 2]", groups: int = 1) -> str:
    return f"pool_window {pool} pool_mode {mode} {WINDOW} padding explicit groups {groups}"


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        # a 1 x 1 conv scales x by w[c], the epilogue is relu(. + b[c]), then each 2 x 2
        # window of x, {1, 5, 4, 0} and {2, -3, 7, 1}, gives its max or its mean: relu
        # before the mean keeps the window's negative values out of it
        ("max", [[0, 1, 2, 8, 14, 20, 8.5, 7], [6, 4, 2, 10, 18, 26, 9.5, 8.5]]),
        (
            "avg",
            [
                [0, 0.25, 2, 5.5, 9, 12.5, 7.25, 5.75],
                [1.5, 1, 2, 4.75, 8, 11.25, 6.875, 6.125],
            ],
        ),
    ],
)
def test_oracle_matches_values_worked_by_hand(mode: str, expected: list[list[float]]) -> None:
    types = ("tensor<1x2x4x1xf32>", "tensor<1x1x1x8xf32>")
    module = _module(_props(mode), types, "tensor<1x1x2x8xf32>")
    module.verify()
    x = np.array([[1, 5, 2, -3], [4, 0, 7, 1]], np.float32).reshape(1, 2, 4, 1)
    w = np.array([-2, -1, 0, 1, 2, 3, 0.5, -0.5], np.float32).reshape(1, 1, 1, 8)
    (y,) = interp.run_module(module, [x, w, np.arange(8, dtype=np.float32)])
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.array(expected, np.float32).reshape(1, 1, 2, 8))


@pytest.mark.parametrize(
    ("props", "types", "result", "message"),
    [
        (_props(groups=2), ("tensor<1x4x4x2xf32>", "tensor<1x1x1x8xf32>"), "tensor<1x2x2x8xf32>",
         "expected groups 1 and no input dilation"),
        (_props(), ("tensor<1x4x4x1xf16>", "tensor<1x1x1x8xf16>"), "tensor<1x2x2x8xf16>",
         "expected float32 or float64, got float16"),
        (_props(), ("tensor<1x4x4x1xf32>", "tensor<1x1x1x4xf32>"), "tensor<1x2x2x4xf32>",
         "output channels of at least 32 bytes, got 4"),
        (_props(pool="[2, 2, 2]"), ("tensor<1x4x4x1xf32>", "tensor<1x1x1x8xf32>"),
         "tensor<1x2x2x8xf32>", r"pool_window must be 2 ints >= 1, got \[2, 2, 2\]"),
        (_props(pool="[5, 1]"), ("tensor<1x4x4x1xf32>", "tensor<1x1x1x8xf32>"),
         "tensor<1x2x2x8xf32>", "smaller than the window 5"),
        (_props(), ("tensor<1x4x4x1xf32>", "tensor<1x1x1x8xf32>"), "tensor<1x4x4x8xf32>",
         r"result type should be tensor<1x2x2x8xf32>"),
    ],
)  # fmt: skip
def test_conv_pool_rejects_what_its_kernel_does_not_compute(props, types, result, message) -> None:
    module = _module(props, types, result)
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_a_1d_conv_is_rejected() -> None:
    text = """func.func @main(%x: tensor<1x4x1xf32>, %w: tensor<1x1x8xf32>) -> tensor<1x2x8xf32> {
  %y = aotk.conv_pool %x, %w pool_window [2] pool_mode max strides [1] dilation [1]
    lhs_dilation [1] pad_before [0] pad_after [0] padding explicit groups 1 epilogue(%acc)
    : (tensor<1x4x1xf32>, tensor<1x1x8xf32>) -> tensor<1x2x8xf32> {
    aotk.yield %acc : tensor<f32>
  }
  func.return %y : tensor<1x2x8xf32>
}"""
    module = Parser(make_context(), text).parse_module()
    with pytest.raises(VerifyException, match="expected a 2-D convolution, got a kernel of rank 3"):
        module.verify()


def test_conv_pool_in_a_scan_step_matches_interpreted() -> None:
    """A conv and its pool in an RNN's step: the bands are planned once, before the loop
    that emits the step (a second slice from inside the loop overran the workspace)."""
    shapes = {"x": (2, 3, 8, 8, 4), "w": (3, 3, 4, 16), "s0": (2, 16)}
    x, w, s0 = (placeholder(shape, "float32", name) for name, shape in shapes.items())

    def step(xt: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        pooled = K.pool2d(K.relu(emit(ConvOp, xt, w, **_conv_attrs())), (2, 2), (2, 2))
        total = states[0] + K.sum(pooled, axis=[1, 2])
        return total, [total]

    last, _, _ = K.rnn(step, x, [s0])
    rng = np.random.default_rng(2)
    calls = [[random_array(rng, shape, "float32") for shape in shapes.values()]]
    f = run_both([x, w, s0], [last], calls, scales=[3 * 16 * 10.0 * 36])
    graph = f.module.clone()
    pipeline.lower(graph, stop_after="graph")
    assert any(isinstance(op, ConvPoolOp) for op in graph.walk())
