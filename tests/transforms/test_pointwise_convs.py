"""`aotk-pointwise-convs`: 1 x 1 convolutions and their gradients become matmuls that
compute what the convolutions computed; other convolutions stay."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.parser import Parser

from aotk import backend as K
from aotk import interp
from aotk.context import make_context
from aotk.dialect import trace
from aotk.lowering import pipeline


def _names_after_pass(inputs: list, outputs: list) -> list[str]:
    module, _ = trace.extract(inputs, outputs)
    pipeline.run(module, "aotk-pointwise-convs")
    return [op.name for op in module.walk()]


def _conv_and_gradients(rank: int, strides: tuple, padding: str):
    """conv of a [batch, 3, (4, 5,) 6] input with a 1 x .. x 1 kernel of 6 -> 7 channels,
    and the gradients of a loss of it in the input and the kernel (float64)."""
    spatial = (3, 4, 5)[:rank]
    x = K.placeholder(shape=(None, *spatial, 6), dtype="float64")
    kernel = np.random.default_rng(0).normal(0, 0.5, (*[1] * rank, 6, 7))
    w = K.variable(kernel, dtype="float64")
    conv = {1: K.conv1d, 2: K.conv2d, 3: K.conv3d}[rank]
    y = conv(x, w, strides=strides[0] if rank == 1 else strides, padding=padding)
    scale = K.constant(np.linspace(0.5, 1.5, 7), dtype="float64")
    loss = K.sum(K.square(y) * scale)
    return x, kernel, [y, *K.gradients(loss, [x, w])]


@pytest.mark.parametrize(
    ("rank", "strides", "padding"),
    [
        (1, (1,), "same"),
        (2, (1, 1), "same"),
        (3, (1, 1, 1), "valid"),
        (1, (2,), "valid"),
        (2, (2, 3), "same"),
        (2, (2, 2), "valid"),
    ],
)
def test_a_pointwise_conv_and_its_gradients_are_matmuls_computing_the_same(
    rank: int, strides: tuple, padding: str
) -> None:
    x, kernel, outputs = _conv_and_gradients(rank, strides, padding)
    names = _names_after_pass([x], outputs)
    # a strided conv's input gradient is a transposed conv (of an input dilated by the
    # strides), left to aotk-split-dilated-convs, whose phases are pointwise again
    assert names.count("aotk.matmul") == (3 if max(strides) == 1 else 2)
    assert "aotk.conv_backprop" not in names
    # autodiff's input gradient convolves with the kernel transposed; the matmul reads
    # the kernel itself, transposed by its packing: no copy of the weights per call
    graph, _ = trace.extract([x], outputs)
    pipeline.lower(graph, "graph")
    assert "aotk.transpose" not in [op.name for op in graph.walk()]
    xs = np.random.default_rng(1).normal(size=(2, *(3, 4, 5)[:rank], 6))
    module, captures = trace.extract([x], outputs)
    want = interp.run_module(module, [xs, *(c.storage for c in captures)])
    got = K.function([x], outputs)([xs])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    # by hand: the positions every stride reads, their channels times the kernel
    every = (slice(None), *(slice(None, None, s) for s in strides), slice(None))
    w2, read = kernel.reshape(6, 7), xs[every]
    np.testing.assert_allclose(got[0], read @ w2, rtol=1e-12)
    dy = 2 * (read @ w2) * np.linspace(0.5, 1.5, 7)
    dx = np.zeros_like(xs)
    dx[every] = dy @ w2.T
    np.testing.assert_allclose(got[1], dx, rtol=1e-12)
    rows = read.reshape(-1, 6)
    np.testing.assert_allclose(got[2], (rows.T @ dy.reshape(-1, 7)).reshape(kernel.shape))


@pytest.mark.parametrize(
    ("window", "attrs", "dtype"),
    [
        ((1, 1), {"dilation_rate": (2, 2)}, "float16"),
        ((3, 3), {"padding": "same"}, "float32"),
        ((1, 3), {"padding": "valid"}, "float64"),
    ],
)
def test_other_convs_stay(window: tuple, attrs: dict, dtype: str) -> None:
    x = K.placeholder(shape=(2, 8, 8, 4), dtype=dtype)
    w = K.variable(np.ones((*window, 4, 5)), dtype=dtype)
    names = _names_after_pass([x], [K.conv2d(x, w, **attrs)])
    assert "aotk.conv" in names and "aotk.matmul" not in names


def test_a_depthwise_conv_stays() -> None:
    x = K.placeholder(shape=(2, 8, 8, 4))
    depthwise = K.depthwise_conv2d(x, K.variable(np.ones((1, 1, 4, 1), np.float32)))
    names = _names_after_pass([x], [depthwise])
    assert "aotk.conv" in names and "aotk.matmul" not in names


def test_a_strided_pointwise_convs_input_gradient_is_a_matmul_after_the_graph_stage() -> None:
    # split into phases by aotk-split-dilated-convs, its one phase with a tap is a
    # pointwise conv again, rewritten by the second run of the pass
    x = K.placeholder(shape=(None, 6, 6, 16))
    kernel = np.random.default_rng(0).normal(0, 0.1, (1, 1, 16, 32)).astype(np.float32)
    y = K.conv2d(x, K.variable(kernel), strides=(2, 2), padding="same")
    outputs = [y, K.gradients(K.sum(K.square(y)), [x])[0]]
    module, _ = trace.extract([x], outputs)
    pipeline.lower(module, stop_after="graph")
    names = [op.name for op in module.walk()]
    assert names.count("aotk.matmul") == 2 and "aotk.conv" not in names
    xs = np.random.default_rng(1).normal(size=(3, 6, 6, 16)).astype(np.float32)
    got = K.function([x], outputs)([xs])
    w2 = kernel.reshape(16, 32)
    want_y = xs[:, ::2, ::2, :] @ w2
    want_dx = np.zeros_like(xs)
    want_dx[:, ::2, ::2, :] = (2 * want_y) @ w2.T
    np.testing.assert_allclose(got[0], want_y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want_dx, rtol=1e-5, atol=1e-6)


_G, _X, _W = "tensor<2x2x3x4xf64>", "tensor<2x4x5x3xf64>", "tensor<1x1x3x4xf64>"
_PAIR = "array<i64: {0}, {0}>"
_ATTRS = ", ".join(
    [
        "wrt = #aotk<wrt input>",
        f"strides = {_PAIR.format(2)}",
        f"dilation = {_PAIR.format(1)}",
        f"lhs_dilation = {_PAIR.format(1)}",
        f"pad_before = {_PAIR.format(0)}",
        f"pad_after = {_PAIR.format(0)}",
        "padding = #aotk<conv_padding same>",
        "groups = 1 : i64",
    ]
)
STRIDED_INPUT_GRADIENT = f"""
func.func @main(%g: {_G}, %x: {_X}, %w: {_W}) -> {_X} {{
  %dx = "aotk.conv_backprop"(%g, %x, %w) <{{{_ATTRS}}}> : ({_G}, {_X}, {_W}) -> {_X}
  func.return %dx : {_X}
}}
"""


def test_a_strided_input_gradient_op_is_written_every_stride_and_zero_elsewhere() -> None:
    # what autodiff emits when no transposed conv serves: aotk.conv_backprop itself
    module = Parser(make_context(), STRIDED_INPUT_GRADIENT).parse_module()
    rewritten = module.clone()
    pipeline.run(rewritten, "aotk-pointwise-convs")
    names = [op.name for op in rewritten.walk()]
    assert "aotk.unslice" in names and "aotk.conv_backprop" not in names
    rng = np.random.default_rng(3)
    g, x, w = (
        rng.normal(size=(2, 2, 3, 4)),
        rng.normal(size=(2, 4, 5, 3)),
        rng.normal(size=(1, 1, 3, 4)),
    )
    want = np.zeros_like(x)
    want[:, ::2, ::2, :] = g @ w.reshape(3, 4).T
    for m in (module, rewritten):
        np.testing.assert_allclose(interp.run_module(m, [g, x, w])[0], want, rtol=1e-12)
