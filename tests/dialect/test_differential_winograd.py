"""Compiled == interpreted for the 3 x 3 convs `kernels.conv_winograd` computes, as
`aotk.conv` and as `aotk.conv_fused` (an epilogue on vectors, and one element by element),
by F(4 x 4, 3 x 3) in register tiles and, with more channels, by matmuls; the pooled ones are in
`test_differential_conv_pool`; their kernel gradients (`kernels.conv_winograd_grad`).
Also which convs take the paths, and the transforms' matrices.

The cases reach the kernel's edges: tiles that overhang an odd output (masked stores),
channels that are no multiple of a vector (shifted vectors), more tiles than a block
(the last block shifted back), fewer tiles than a register tile, dynamic dims and a batch
of 0.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from conftest import conv_attrs, emit, placeholder, random_array, run_both
from xdsl.builder import Builder
from xdsl.dialects.builtin import Float16Type, Float32Type, Float64Type
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from aotk import backend as K
from aotk.dialect.arithmetic import AddOp, MaximumOp, MulOp
from aotk.dialect.conv import ConvOp, np_conv
from aotk.dialect.conv_backprop import ConvBackpropOp
from aotk.dialect.conv_fused import ConvFusedOp
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.unary import TanhOp
from aotk.kernels import (
    conv_winograd,
    conv_winograd_gemm,
    conv_winograd_grad,
    conv_winograd_grad_gemm,
    winograd_tile,
)
from aotk.kernels.kernel import DimV, Kernel
from aotk.kernels.window import Window
from aotk.lowering import pipeline

Shape = tuple[int | None, ...]
# name, x as declared, the kernel, x in the two calls, conv attributes
Case = tuple[str, Shape, tuple[int, int, int, int], list[tuple[int, ...]], dict[str, Any]]


def _case(name: str, x: Shape, w: Any, calls: Any, **kw: Any) -> Case:
    return name, x, w, calls, conv_attrs(2, **kw)


# Each case's first call has at least MIN_TILES tiles (Winograd's); a second call with
# fewer runs the direct conv (a batch of 0, or small images of a dynamic size).
CASES = [
    _case("same", (None, 8, 10, 32), (3, 3, 32, 64), [(3, 8, 10, 32), (0, 8, 10, 32)],
          padding="same"),
    # 8 x 7 outputs: the last tile of a row overhangs; 20 and 40 channels
    _case("odd_width_uneven", (4, 9, 7, 20), (3, 3, 20, 40), [(4, 9, 7, 20)] * 2,
          pad_before=(1, 0), pad_after=(0, 2)),
    _case("odd_height", (12, 5, 6, 16), (3, 3, 16, 16), [(12, 5, 6, 16)] * 2),
    # 3 x 6 x 7 tiles: blocks in several runs, the last block shifted back
    _case("many_tiles", (3, 12, 14, 16), (3, 3, 16, 24), [(3, 12, 14, 16)] * 2, padding="same"),
    # 5 x 5 outputs an image: 2 x 2 tiles, overhanging both ways by 3 (fewer outputs
    # take the direct conv: `fills_tiles`)
    _case("overhanging", (None, 7, 7, 16), (3, 3, 16, 16), [(12, 7, 7, 16), (2, 7, 7, 16)]),
    _case("dynamic_spatial", (None, None, None, 16), (3, 3, 16, 32),
          [(2, 9, 10, 16), (1, 3, 4, 16)], padding="same"),
]  # fmt: skip
FLOAT64_CASES = ["odd_width_uneven", "many_tiles", "overhanging"]
# Channels whose F4 blocks overflow L2 take matmuls (in float64, half as many): odd
# outputs, channels no multiple of a vector, two blocks of 128 tiles (the last shifted
# back), and a second call of fewer tiles than Winograd takes.
WIDE_CASES = {
    "float32": _case("wide", (None, 7, 8, 330), (3, 3, 330, 300),
                     [(35, 7, 8, 330), (2, 7, 8, 330)], padding="same"),
    "float64": _case("wide", (None, 7, 8, 170), (3, 3, 170, 150),
                     [(35, 7, 8, 170), (2, 7, 8, 170)], padding="same"),
}  # fmt: skip


def _tiles(case: Case, call: int, m: int = 4) -> int:
    """F(m x m, 3 x 3) tiles of the case's conv in call `call`."""
    _, _, w, shapes, attrs = case
    out = np_conv(np.zeros(shapes[call]), np.zeros(w), **attrs).shape
    return out[0] * -(-out[1] // m) * -(-out[2] // m)


def _transform(case: Case, dtype: str) -> winograd_tile.Transform:
    plan = conv_winograd.plan_for(ELEMS[dtype], case[2])
    assert plan is not None
    return plan.tf


def _scale(case: Case) -> float:
    return 10.0 * float(np.prod(case[2][:-1]))


def _epilogue(conv: Any, bias: Any, activation: str, dtype: str) -> Any:
    """relu(conv + bias) * 0.5 (on vectors) or tanh(conv + bias) (element by element)."""
    biased = emit(AddOp, conv, bias)
    if activation == "tanh":
        return emit(TanhOp, biased)
    zero, half = (emit(ConstantOp, value=v, dtype=dtype) for v in (0.0, 0.5))
    return emit(MulOp, emit(MaximumOp, biased, zero), half)


def _check(cases: list[Case], dtype: str, activations: list[str | None]) -> Any:
    """One function of every case (with `activations[i]` fused, or a plain conv),
    compiled against interpreted on two calls."""
    rng = np.random.default_rng(3)
    inputs, outputs, calls = [], [], [[], []]
    for i, ((_, x, w, shapes, attrs), activation) in enumerate(
        zip(cases, activations, strict=True)
    ):
        xs = [placeholder(x, dtype, f"x{i}"), placeholder(w, dtype, f"w{i}")]
        y = emit(ConvOp, *xs, **attrs)
        for call, shape in zip(calls, shapes, strict=True):
            call += [random_array(rng, shape, dtype), random_array(rng, w, dtype)]
        if activation is not None:
            xs.append(placeholder((w[-1],), dtype, f"b{i}"))
            y = _epilogue(y, xs[-1], activation, dtype)
            for call in calls:
                call.append(random_array(rng, (w[-1],), dtype))
        inputs += xs
        outputs.append(y)
    scales = [_scale(c) for c in cases]
    return run_both(inputs, outputs, calls, scales=scales, labels=[c[0] for c in cases])


ELEMS = {"float16": Float16Type(), "float32": Float32Type(), "float64": Float64Type()}


def _applies(case: Case, dtype: str) -> bool:
    """Whether Winograd computes the case, in its first call at least."""
    attrs = {name: v for name, v in case[4].items() if name != "rank"}
    win = Window.of_conv(case[2][:2], **attrs)
    if not conv_winograd.applies(ELEMS[dtype], case[2], win, None, case[1][1:3]):
        return False
    tf = _transform(case, dtype)
    return not case[3] or _tiles(case, 0, tf.m) >= conv_winograd.min_tiles(tf)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_winograd_convs_match_interpreted(dtype: str) -> None:
    cases = CASES if dtype == "float32" else [c for c in CASES if c[0] in FLOAT64_CASES]
    cases = [*cases, WIDE_CASES[dtype]]
    assert all(_applies(c, dtype) for c in cases)
    plans = [conv_winograd.plan_for(ELEMS[dtype], c[2]) for c in cases]
    assert [(p.tf, p.gemms) for p in plans if p is not None] == [
        (winograd_tile.F4, c is cases[-1]) for c in cases
    ]
    wide, least = cases[-1], conv_winograd.min_tiles(winograd_tile.F4)
    assert _tiles(wide, 1) < least and _tiles(wide, 0) > conv_winograd_gemm.BLOCK
    _check(cases, dtype, [None] * len(cases))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_winograd_epilogues_match_interpreted(dtype: str) -> None:
    """The epilogue on a tile's four output vectors before their (masked) stores."""
    cases = [c for c in CASES if c[0] in FLOAT64_CASES]
    activations: list[str | None] = ["relu", "tanh", "relu"]
    f = _check(cases, dtype, activations)
    graph = f.module.clone()
    pipeline.lower(graph, stop_after="graph")
    assert sum(isinstance(op, ConvFusedOp) for op in graph.walk()) == len(cases)


# the kernel gradient: sums over tiles, so the edges are the partial last block and the
# remainders of the register tiles (input channels not a multiple of its rows, output
# vectors not a multiple of its vectors), and a batch of 0 (a gradient of zeros)
GRAD_CASES = [
    _case("same", (None, 8, 10, 32), (3, 3, 32, 64), [(3, 8, 10, 32), (0, 8, 10, 32)],
          padding="same"),
    _case("odd_width_uneven", (4, 9, 7, 20), (3, 3, 20, 16), [(4, 9, 7, 20)] * 2,
          pad_before=(1, 0), pad_after=(0, 2)),
    _case("partial_block", (3, 12, 14, 16), (3, 3, 16, 80), [(3, 12, 14, 16)] * 2,
          padding="same"),
    _case("overhanging", (None, 7, 7, 16), (3, 3, 16, 16), [(12, 7, 7, 16), (2, 7, 7, 16)]),
    _case("dynamic_spatial", (None, None, None, 16), (3, 3, 16, 32),
          [(2, 9, 10, 16), (1, 3, 4, 16)], padding="same"),
    # 17 blocks: runs with sums of their own on up to 4 threads (RUN_BLOCKS); then 32
    # tiles, one block whose steps the threads share
    _case("runs_then_shared", (None, 16, 16, 16), (3, 3, 16, 16),
          [(56, 16, 16, 16), (2, 16, 16, 16)], padding="same"),
]  # fmt: skip
# channels whose F4 sums (36 C K) would overflow the runs' budget take the matmuls; a
# second call of fewer tiles than Winograd takes
WIDE_GRAD_CASES = {
    "float32": _case("wide", (None, 7, 8, 160), (3, 3, 160, 192),
                     [(4, 7, 8, 160), (2, 7, 8, 160)], padding="same"),
    "float64": _case("wide", (None, 7, 8, 128), (3, 3, 128, 128),
                     [(4, 7, 8, 128), (2, 7, 8, 128)], padding="same"),
}  # fmt: skip


# more channels by the matmuls: two blocks of tiles (the second partial), input
# channels no multiple of a register tile's rows, and a second call by the same path
# (its sums start again from 0)
GEMM_GRAD_CASES = {
    "float32": _case("gemms", (None, 7, 8, 264), (3, 3, 264, 256),
                     [(35, 7, 8, 264), (33, 7, 8, 264)], padding="same"),
    "float64": _case("gemms", (None, 7, 8, 200), (3, 3, 200, 176),
                     [(35, 7, 8, 200), (33, 7, 8, 200)], padding="same"),
}  # fmt: skip


def _grad_pays(case: Case, dtype: str) -> bool:
    attrs = {name: v for name, v in case[4].items() if name != "rank"}
    return conv_winograd_grad.pays(ELEMS[dtype], case[2], attrs, case[1][1:3])


def _grad_scratch(case: Case, dtype: str) -> DimV:
    attrs = {name: v for name, v in case[4].items() if name != "rank"}
    k = Kernel(Builder(InsertPoint.at_end(Block())))
    return conv_winograd_grad.scratch_elems(k, ELEMS[dtype], case[2], attrs, case[1][1:3])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_winograd_kernel_gradients_match_interpreted(dtype: str) -> None:
    cases = [*GRAD_CASES, WIDE_GRAD_CASES[dtype], GEMM_GRAD_CASES[dtype]]
    assert all(_grad_scratch(c, dtype) for c in cases)
    transforms = [conv_winograd_grad.transform_for(ELEMS[dtype], c[2]) for c in cases]
    assert transforms == [winograd_tile.F4] * len(GRAD_CASES) + [None, None]
    for case, tf in zip(cases, transforms, strict=True):
        tf = tf or winograd_tile.F4
        assert _tiles(case, 0, tf.m) >= conv_winograd.min_tiles(tf)
    runs = next(c for c in cases if c[0] == "runs_then_shared")
    blocks = [-(-_tiles(runs, call) // conv_winograd_grad.block()) for call in (0, 1)]
    assert blocks[0] >= 4 * conv_winograd_grad.RUN_BLOCKS > 1 == blocks[1], blocks
    gemms = cases[-1]
    assert _tiles(gemms, 0) > conv_winograd_grad_gemm.BLOCK > _tiles(gemms, 0) % 128 > 0
    _check_gradients(cases, dtype, np.random.default_rng(4))


def _check_gradients(cases: list[Case], dtype: str, rng: np.random.Generator) -> None:
    """One function of every case's kernel gradient, compiled against interpreted."""
    inputs, outputs, calls, scales = [], [], [[], []], []
    for i, (_, x_decl, w_shape, shapes, attrs) in enumerate(cases):
        x, w = placeholder(x_decl, dtype, f"x{i}"), placeholder(w_shape, dtype, f"w{i}")
        g = placeholder(emit(ConvOp, x, w, **attrs).shape, dtype, f"g{i}")
        inputs += [x, w, g]
        outputs.append(emit(ConvBackpropOp, g, x, w, wrt="kernel", **attrs))
        terms = 1
        for call, shape in zip(calls, shapes, strict=True):
            y_shape = np_conv(np.zeros(shape), np.zeros(w_shape), **attrs).shape
            call += [random_array(rng, s, dtype) for s in (shape, w_shape, y_shape)]
            terms = max(terms, int(np.prod(y_shape[:-1])))  # products summed per element
        scales.append(10.0 * terms)
    run_both(inputs, outputs, calls, scales=scales, labels=[c[0] for c in cases])


def test_kernel_gradients_with_partial_vectors_keep_the_direct_kernel() -> None:
    """Its sums add up register tiles, which must not overlap: 40 output channels (two
    vectors and a half) take the direct kernel gradient. 160 x 160 channels (3.5 MiB of
    sums a run) take register tiles, 256 x 512 (18 MiB) the matmuls."""
    case = _case("direct", (1, 8, 8, 16), (3, 3, 16, 40), [])
    assert _applies(case, "float32") and not _grad_scratch(case, "float32")
    for kernel, tf in (((3, 3, 160, 160), winograd_tile.F4), ((3, 3, 256, 512), None)):
        assert _grad_scratch(_case("wide", (1, 8, 8, 256), kernel, []), "float32")
        assert conv_winograd_grad.transform_for(ELEMS["float32"], kernel) == tf


@pytest.mark.parametrize(
    ("why", "dtype", "kernel", "attrs"),
    [
        ("float16", "float16", (3, 3, 16, 16), {}),
        ("a 5 x 5 window", "float32", (5, 5, 16, 16), {}),
        ("a 3 x 1 window", "float32", (3, 1, 16, 16), {}),
        ("stride 2", "float32", (3, 3, 16, 16), {"strides": (2, 1)}),
        ("dilation 2", "float32", (3, 3, 16, 16), {"dilation": (1, 2)}),
        ("input dilation", "float32", (3, 3, 16, 16), {"lhs_dilation": (2, 2)}),
        ("groups", "float32", (3, 3, 8, 16), {"groups": 2}),
        ("3 input channels", "float32", (3, 3, 3, 16), {}),
        ("4 output channels", "float32", (3, 3, 16, 4), {}),
        ("V and M of a block larger than L2", "float32", (3, 3, 512, 1024), {}),
    ],
)
def test_other_convs_keep_the_direct_kernels(why: str, dtype: str, kernel: Any, attrs: Any) -> None:
    case = _case(why, (1, 8, 8, kernel[2] * attrs.get("groups", 1)), kernel, [], **attrs)
    assert not _applies(case, dtype)
    assert _applies(_case(why, (1, 8, 8, 16), (3, 3, 16, 16), []), "float32")
    assert _applies(_case(why, (1, 8, 8, 256), (3, 3, 256, 256), []), "float32")


@pytest.mark.parametrize(
    ("image", "padding", "winograd", "gradient"),
    [
        ((1, 1), "same", False, False),
        ((2, 2), "same", False, False),
        ((4, 4), "explicit", False, False),  # no pads: 2 x 2 outputs
        ((2, 5), "same", False, False),  # 10 outputs in two tiles: 0.31 of them
        ((3, 3), "same", True, False),  # 0.56; the gradient's 49 taps, a tile's 36
        ((5, 5), "same", True, False),  # 0.39; 169 taps, 144 products
        ((6, 6), "same", True, True),  # 0.56; 256 taps, 144 products
        ((None, None), "same", True, True),  # known at run time: decided at each call
    ],
)
def test_outputs_that_fill_few_of_the_f4_tiles_keep_the_direct_kernels(
    image: tuple[int | None, int | None], padding: str, winograd: bool, gradient: bool
) -> None:
    """A third of the F4 tiles over the outputs must be outputs, whatever the batch; the
    kernel gradient also needs the direct gradient's taps to pay for the tiles'
    products (`conv_winograd_grad.costs`)."""
    case = _case("small", (None, *image, 64), (3, 3, 64, 64), [], padding=padding)
    assert _applies(case, "float32") == winograd
    assert bool(_grad_scratch(case, "float32")) == gradient


def test_a_batch_of_2_x_2_images_runs_the_direct_conv_without_winograd_scratch() -> None:
    """64 images of 2 x 2 (64 F4 tiles, which took Winograd): the direct conv, no U or
    V in the workspace, values as interpreted."""
    case = _case("tiny", (None, 2, 2, 64), (3, 3, 64, 64), [(64, 2, 2, 64), (3, 2, 2, 64)],
                 padding="same")  # fmt: skip
    f = _check([case], "float32", [None])
    assert int(f._ws_size(64)) == 0


def test_the_transform_is_a_correlation_and_its_kernel_gradient() -> None:
    """F4's matrices, in float64 to rounding: a tile's 4 x 4 outputs are the 3 x 3
    correlation of its 6 x 6 patch, and G^T [V * (A e A^T)] G is the kernel gradient of
    sum(outputs * e)."""
    tf = winograd_tile.F4
    bt, g_mat, at = (np.array(m, float) for m in (tf.bt, tf.g, tf.at))
    assert bt.shape == (6, 6) and g_mat.shape == (6, 3) and at.shape == (4, 6)
    rng = np.random.default_rng(1)
    d, g, e = rng.normal(size=(6, 6)), rng.normal(size=(3, 3)), rng.normal(size=(4, 4))
    y = at @ ((g_mat @ g @ g_mat.T) * (bt @ d @ bt.T)) @ at.T
    direct = np.array([[np.sum(d[i : i + 3, j : j + 3] * g) for j in range(4)] for i in range(4)])
    np.testing.assert_allclose(y, direct, rtol=1e-12, atol=1e-12)
    dg = g_mat.T @ ((bt @ d @ bt.T) * (at.T @ e @ at)) @ g_mat
    want = np.array([[np.sum(d[r : r + 4, s : s + 4] * e) for s in range(3)] for r in range(3)])
    np.testing.assert_allclose(dg, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.array(tf.a, float), at.T)
    np.testing.assert_array_equal(np.array(tf.gt, float), g_mat.T)


def test_toom_cook_gives_the_usual_f4_matrices_for_its_usual_points() -> None:
    """From 0, 1, -1, 2, -2 and infinity, the F(4, 3) matrices as published (Lavin and
    Gray's), written out by hand here."""
    tf = winograd_tile.toom_cook([Fraction(p) for p in (0, 1, -1, 2, -2)])
    bt = [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
          [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]]  # fmt: skip
    g = [[1 / 4, 0, 0], [-1 / 6, -1 / 6, -1 / 6], [-1 / 6, 1 / 6, -1 / 6],
         [1 / 24, 1 / 12, 1 / 6], [1 / 24, -1 / 12, 1 / 6], [0, 0, 1]]  # fmt: skip
    at = [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]]
    np.testing.assert_array_equal(np.array(tf.bt), bt)
    np.testing.assert_array_equal(np.array(tf.g), g)
    np.testing.assert_array_equal(np.array(tf.at), at)


def _random_case(rng: np.random.Generator, i: int) -> Case:
    """A conv Winograd computes: random channels (a vector or more, partial vectors
    among them), image sizes from 1, and pads of 0 to 2 on each side (2 on both sides:
    outputs larger than the image), whose outputs fill F4's tiles enough."""
    cin, cout = (int(c) for c in rng.choice([16, 20, 33, 48], 2))
    pads = [tuple(int(p) for p in rng.integers(0, 3, 2)) for _ in range(2)]
    kw = {"pad_before": pads[0], "pad_after": pads[1]}
    win = Window.of_conv((3, 3), **conv_attrs(2, **kw))
    while True:
        size = tuple(int(s) for s in rng.integers(1, 14, 2))
        fits = all(s + lo + hi >= 3 for s, lo, hi in zip(size, *pads, strict=True))
        if fits and conv_winograd.fills_tiles(win, size):
            break
    one = _case("one", (1, *size, cin), (3, 3, cin, cout), [(1, *size, cin)], **kw)
    # images enough for Winograd's tiles, and a few more
    batch = -(-conv_winograd.MIN_TILES // _tiles(one, 0)) + int(rng.integers(0, 3))
    calls = [(batch, *size, cin)] * 2
    return _case(f"random_{i}", (None, *size, cin), (3, 3, cin, cout), calls, **kw)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_winograd_convs_and_gradients_match_interpreted(dtype: str) -> None:
    rng = np.random.default_rng({"float32": 21, "float64": 22}[dtype])
    cases = [_random_case(rng, i) for i in range(8)]
    assert all(_applies(c, dtype) for c in cases)
    _check(cases, dtype, [None, "relu", "tanh", None] * 2)
    # the kernel gradients of those with whole vectors of output channels, on images
    # where Winograd pays (`conv_winograd_grad.costs`)
    lanes = 16 if dtype == "float32" else 8
    grads = [c for c in cases if c[2][3] % lanes == 0 and _grad_pays(c, dtype)]
    while len(grads) < 4:  # and more random convs, to check four
        case = _random_case(rng, len(cases) + len(grads))
        if case[2][3] % lanes == 0 and _grad_pays(case, dtype):
            grads.append(case)
    assert all(_grad_scratch(c, dtype) for c in grads)
    _check_gradients(grads, dtype, rng)


def test_winograd_conv_in_a_scan_step_and_its_gradients_match_interpreted() -> None:
    """A recurrent conv (x_t + h) * w, 16 channels: the step's conv, the input gradient
    through the steps and the kernel gradient summed over them all take the Winograd
    kernels, with their scratch planned before the loops that run them."""
    shapes = {"x": (2, 3, 12, 12, 16), "w": (3, 3, 16, 16), "s0": (2, 12, 12, 16)}
    x, w, s0 = (placeholder(shape, "float32", name) for name, shape in shapes.items())
    same = conv_attrs(2, padding="same")

    def step(xt: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        h = K.tanh(emit(ConvOp, xt + states[0], w, **same))
        return h, [h]

    last, _, _ = K.rnn(step, x, [s0])
    gw, gx = K.gradients(K.sum(last * last), [w, x])
    step_case = _case("step", (2, 12, 12, 16), (3, 3, 16, 16), [(2, 12, 12, 16)], padding="same")
    assert _applies(step_case, "float32")
    rng = np.random.default_rng(2)
    calls = [[random_array(rng, shape, "float32") * 0.3 for shape in shapes.values()]]
    # terms per element: 16 x 9 products a step; the kernel gradient sums 3 steps x 2
    # images x 144 positions of them, the input gradient 3 steps x 16 x 9
    run_both([x, w, s0], [last, gw, gx], calls, scales=[10.0 * 144, 10.0 * 864, 10.0 * 432])


def test_images_of_run_time_dims_that_fill_few_tiles_take_the_direct_kernels(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Image dims known only at run time: 64 images of 2 x 2 (64 tiles, a quarter of them
    outputs) take the direct conv and kernel gradient, bit for bit a function's compiled
    with Winograd off; 16 images of 8 x 8 take Winograd, whose rounding differs."""
    from aotk import backend as K

    rng = np.random.default_rng(9)
    w0 = (rng.standard_normal((3, 3, 64, 64)) * 0.05).astype(np.float32)

    def build() -> Any:
        x, w = K.placeholder((None, None, None, 64)), K.variable(w0)
        y = K.conv2d(x, w, padding="same")
        return K.function([x], [y, *K.gradients(K.sum(y * y), [w])])

    on = build()
    monkeypatch.setenv("AOTK_CONV_WINOGRAD", "0")
    off = build()
    tiny = rng.standard_normal((64, 2, 2, 64)).astype(np.float32)
    for a, b in zip(on([tiny]), off([tiny]), strict=True):
        np.testing.assert_array_equal(a, b)
    big = rng.standard_normal((16, 8, 8, 64)).astype(np.float32)
    for a, b in zip(on([big]), off([big]), strict=True):
        assert not np.array_equal(a, b)
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-3 * np.abs(b).max())
