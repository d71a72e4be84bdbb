"""`aotk-pointwise-convs`: 1 x 1 convolutions and their gradients become matmuls that
compute what the convolutions computed; other convolutions stay."""

from __future__ import annotations

import numpy as np
import pytest

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.lowering import pipeline


def _names_after_pass(inputs: list, outputs: list) -> list[str]:
    module, _ = trace.extract(inputs, outputs)
    pipeline.run(module, "aotk-pointwise-convs")
    return [op.name for op in module.walk()]


def _conv_and_gradients(rank: int, batch: int | None, dtype: str = "float64"):
    """conv of a [batch, 3, (4, 5,) 6] input with a 1 x .. x 1 kernel of 6 -> 7 channels,
    and the gradients of a loss of it in the input and the kernel."""
    spatial = (3, 4, 5)[:rank]
    x = K.placeholder(shape=(batch, *spatial, 6), dtype=dtype)
    kernel = np.random.default_rng(0).normal(0, 0.5, (*[1] * rank, 6, 7))
    w = K.variable(kernel, dtype=dtype)
    conv = {1: K.conv1d, 2: K.conv2d, 3: K.conv3d}[rank]
    y = conv(x, w, padding="same")
    loss = K.sum(K.square(y) * K.constant(np.linspace(0.5, 1.5, 7), dtype=dtype))
    return x, kernel, [y, *K.gradients(loss, [x, w])]


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_a_pointwise_conv_and_its_gradients_are_matmuls_computing_the_same(rank: int) -> None:
    x, kernel, outputs = _conv_and_gradients(rank, None)
    names = _names_after_pass([x], outputs)
    assert names.count("aotk.matmul") == 3
    assert "aotk.conv" not in names and "aotk.conv_backprop" not in names
    xs = np.random.default_rng(1).normal(size=(2, *(3, 4, 5)[:rank], 6))
    module, captures = trace.extract([x], outputs)
    want = interp.run_module(module, [xs, *(c.storage for c in captures)])
    got = K.function([x], outputs)([xs])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    # by hand: each position's channels times the kernel
    w2 = kernel.reshape(6, 7)
    np.testing.assert_allclose(got[0], xs @ w2, rtol=1e-12)
    scale = np.linspace(0.5, 1.5, 7)
    dy = 2 * (xs @ w2) * scale
    np.testing.assert_allclose(got[1], dy @ w2.T, rtol=1e-12)
    rows = xs.reshape(-1, 6)
    np.testing.assert_allclose(got[2], (rows.T @ dy.reshape(-1, 7)).reshape(kernel.shape))


@pytest.mark.parametrize(
    ("window", "attrs", "dtype"),
    [
        ((1, 1), {"strides": (2, 2)}, "float32"),
        ((3, 3), {"padding": "same"}, "float32"),
        ((1, 1), {"dilation_rate": (2, 2)}, "float16"),
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
