"""Which path a conv's kernel gradient takes: Winograd only on images where the direct
gradient's multiply-adds pay for the tiles' products (`conv_winograd_grad.costs`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import f32

from aotk.kernels import conv_winograd_grad
from aotk.kernels.dim_arith import STATIC
from aotk.kernels.winograd_tile import F4


@pytest.mark.parametrize(
    ("pad", "size", "out", "direct", "tiles"),
    [
        (1, 3, 3, 7 * 7, 1),  # 'same' 3 x 3: 49 of 81 taps inside; one tile
        (1, 6, 6, 16 * 16, 2 * 2),  # 'same' 6 x 6
        (0, 7, 5, 15 * 15, 2 * 2),  # 'valid' 7 x 7: every tap of the 5 x 5 outputs
        (0, 4, 2, 6 * 6, 1),  # 'valid' 4 x 4
    ],
)
def test_costs_count_the_taps_inside_the_image_and_whole_tiles(
    pad: int, size: int, out: int, direct: int, tiles: int
) -> None:
    ratio = conv_winograd_grad.RATIO
    costs = conv_winograd_grad.costs(STATIC, [pad] * 2, [size] * 2, [out] * 2, F4)
    assert costs == (direct * ratio[1], tiles * F4.points * ratio[0])


@pytest.mark.parametrize(
    ("channels", "side", "pays"),
    [
        (128, 6, True),  # register tiles: 256 taps against 144 products, at least 3/2
        (192, 6, False),  # the matmuls below 512 channels: twice the products needed
        (192, 8, True),  # 484 taps against 144
        (384, 6, False),
        (512, 6, True),  # the matmuls from 512 channels: 3/2 again
        (160, 5, False),  # 169 against 144: not 3/2
    ],
)
def test_the_matmuls_below_512_channels_take_images_of_twice_the_products(
    channels: int, side: int, pays: bool
) -> None:
    kernel = (3, 3, channels, channels)
    conv = {"strides": (1, 1), "dilation": (1, 1), "lhs_dilation": (1, 1), "padding": "same"}
    conv |= {"pad_before": (0, 0), "pad_after": (0, 0), "groups": 1}
    assert conv_winograd_grad.pays(f32, kernel, conv, (side, side)) == pays


@pytest.mark.parametrize("dynamic", [False, True])
def test_small_images_take_the_direct_kernel_gradient(
    monkeypatch: pytest.MonkeyPatch, dynamic: bool
) -> None:
    """'Same' 3 x 3 images (49 taps against a tile's 36 products) take the direct
    gradient, bit for bit a function's compiled with Winograd off, whether the image
    dims are known when compiling or at each call; 6 x 6 images (256 against 144) take
    Winograd, whose rounding differs."""
    from aotk import backend as K

    rng = np.random.default_rng(5)
    w0 = (rng.standard_normal((3, 3, 64, 64)) * 0.05).astype(np.float32)
    shape = (None, None, None, 64) if dynamic else (None, 3, 3, 64)

    def build(image: tuple[int | None, ...]) -> Any:
        x, dy, w = K.placeholder(image), K.placeholder(image), K.variable(w0)
        y = K.conv2d(x, w, padding="same")
        return K.function([x, dy], K.gradients(K.sum(y * dy), [w]))

    six = shape if dynamic else (None, 6, 6, 64)
    on = [build(shape), build(six)]
    monkeypatch.setenv("AOTK_CONV_WINOGRAD", "0")
    off = [build(shape), build(six)]
    for i, (side, same) in enumerate(((3, True), (6, False))):
        x, dy = (rng.standard_normal((32, side, side, 64)).astype(np.float32) for _ in range(2))
        [a], [b] = on[i]([x, dy]), off[i]([x, dy])
        assert np.array_equal(a, b) == same, side
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4 * np.abs(b).max())
