"""The layers of a CNN's training step other than its plain convs and matmuls, against NumPy.

Max-pool gradients (2x2/2, and 3x3/2 'same' whose windows overlap), dropout, a stride-2
transposed convolution (the input gradient of every stride-2 conv has its form) and a
depthwise conv with its kernel gradient; float32, batch 64, 32x32 images of 32 channels.
The NumPy side is written the way a NumPy user would: strided views and one matmul or
einsum per tap. Run alone with `python -m bench.bench_backprop`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bench.common import Case, compiled_side, run

B, H, C = 64, 32, 32
IMAGES = (B, H, H, C)
POOL_2X2 = {"pool_size": (2, 2), "strides": (2, 2)}
POOL_3X3 = {"pool_size": (3, 3), "strides": (2, 2), "padding": "same"}


def _max_pool_grad_2x2(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """The cotangent to the first maximum of each 2x2 window (row-major)."""
    n, h, w, c = x.shape
    windows = x.reshape(n, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4)
    first = windows.reshape(n, h // 2, w // 2, c, 4).argmax(-1)
    dx = np.zeros((n, h // 2, w // 2, c, 4), x.dtype)
    np.put_along_axis(dx, first[..., None], g[..., None], -1)
    return dx.reshape(n, h // 2, w // 2, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(x.shape)


def _max_pool_grad_3x3s2_same(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """3x3 windows, stride 2, 'same' (one padding row and column after): taps in order,
    each window's cotangent to its first maximum."""
    h, w = x.shape[1:3]
    xp = np.pad(x, [(0, 0), (0, 1), (0, 1), (0, 0)], constant_values=-np.inf)
    taps = [xp[:, a : a + h : 2, b : b + w : 2] for a in range(3) for b in range(3)]
    y = np.max(taps, axis=0)
    dx = np.zeros(xp.shape, x.dtype)
    left = g.copy()
    for t, tap in enumerate(taps):
        hit = tap == y
        a, b = divmod(t, 3)
        dx[:, a : a + h : 2, b : b + w : 2] += np.where(hit, left, 0)
        left = np.where(hit, 0, left)
    return dx[:, :h, :w]


def _transposed_conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """TF's conv2d_transpose, 3x3, stride 2, 'same': 16x16 -> 32x32 (the odd padding
    after); w is (3, 3, out, in)."""
    n, h, width, _ = x.shape
    out = np.zeros((n, 2 * h + 1, 2 * width + 1, w.shape[2]), x.dtype)
    flat = x.reshape(-1, x.shape[-1])
    for a in range(3):
        for b in range(3):
            part = (flat @ w[a, b].T).reshape(n, h, width, -1)
            out[:, a : a + 2 * h : 2, b : b + 2 * width : 2] += part
    return out[:, : 2 * h, : 2 * width]


def _depthwise(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """3x3 'same' depthwise conv; w is (3, 3, channels, 1)."""
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    h, width = x.shape[1:3]
    out = np.zeros_like(x)
    for a in range(3):
        for b in range(3):
            out += xp[:, a : a + h, b : b + width] * w[a, b, :, 0]
    return out


def _depthwise_kernel_grad(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    h, width = x.shape[1:3]
    taps = [
        (xp[:, a : a + h, b : b + width] * g).sum(axis=(0, 1, 2))
        for a in range(3)
        for b in range(3)
    ]
    return np.stack(taps).reshape(3, 3, -1, 1)


def _pool_grad_case(
    with_aotk: bool, name: str, pool: dict[str, Any], reference: Callable[..., Any]
) -> Case:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(IMAGES).astype(np.float32)
    pooled = (B, H // 2, H // 2, C)
    g = rng.standard_normal(pooled).astype(np.float32)

    def grad(xp: Any, gp: Any) -> Any:
        from aotk import backend as K

        return K.gradients(K.sum(K.pool2d(xp, **pool) * gp), [xp])[0]

    aotk = compiled_side(with_aotk, grad, [x, g])
    return Case(name, lambda: reference(x, g), aotk, nbytes=2 * x.nbytes)


def _dropout_case(with_aotk: bool) -> Case:
    x = np.random.default_rng(2).standard_normal(IMAGES).astype(np.float32)
    rng = np.random.default_rng(3)

    def dropout(xp: Any) -> Any:
        from aotk import backend as K

        return K.dropout(xp, 0.5)

    aotk = compiled_side(with_aotk, dropout, [x])

    def numpy() -> np.ndarray:
        return np.where(rng.random(IMAGES, np.float32) >= 0.5, x * 2.0, 0.0).astype(np.float32)

    def check() -> None:
        assert aotk is not None
        got = np.asarray(aotk())
        kept = got != 0
        assert 0.49 < kept.mean() < 0.51, f"dropout kept {kept.mean():.3f} of the elements"
        np.testing.assert_allclose(got[kept], 2.0 * x[kept], rtol=1e-6)

    name = "dropout 0.5, 64x32x32x32"
    return Case(name, numpy, aotk, nbytes=2 * x.nbytes, check=check)


def _transposed_conv_case(with_aotk: bool) -> Case:
    rng = np.random.default_rng(4)
    small = (B, H // 2, H // 2, C)
    x = rng.standard_normal(small).astype(np.float32)
    w = (rng.standard_normal((3, 3, C, C)) * 0.2).astype(np.float32)

    def build(xp: Any, wp: Any) -> Any:
        from aotk import backend as K

        return K.conv2d_transpose(xp, wp, IMAGES, strides=(2, 2), padding="same")

    aotk = compiled_side(with_aotk, build, [x, w])
    name, flops = "conv2d_transpose 3x3/2 16->32", 2.0 * x.size * C * 9
    return Case(name, lambda: _transposed_conv(x, w), aotk, flops=flops)


def _depthwise_cases(with_aotk: bool) -> list[Case]:
    rng = np.random.default_rng(5)
    x = rng.standard_normal(IMAGES).astype(np.float32)
    g = rng.standard_normal(IMAGES).astype(np.float32)
    w = rng.standard_normal((3, 3, C, 1)).astype(np.float32)

    def forward(xp: Any, wp: Any) -> Any:
        from aotk import backend as K

        return K.depthwise_conv2d(xp, wp, padding="same")

    def kernel_grad(xp: Any, wp: Any, gp: Any) -> Any:
        from aotk import backend as K

        return K.gradients(K.sum(forward(xp, wp) * gp), [wp])[0]

    conv = compiled_side(with_aotk, forward, [x, w])
    backward = compiled_side(with_aotk, kernel_grad, [x, w, g])
    return [
        Case("depthwise 3x3 same", lambda: _depthwise(x, w), conv),
        Case("depthwise 3x3 kernel gradient", lambda: _depthwise_kernel_grad(x, g), backward),
    ]


def cases(with_aotk: bool = True) -> list[Case]:
    """Every case; without aotk, NumPy's sides alone."""
    return [
        _pool_grad_case(with_aotk, "max-pool 2x2/2 gradient", POOL_2X2, _max_pool_grad_2x2),
        _pool_grad_case(
            with_aotk, "max-pool 3x3/2 same gradient", POOL_3X3, _max_pool_grad_3x3s2_same
        ),
        _dropout_case(with_aotk),
        _transposed_conv_case(with_aotk),
        *_depthwise_cases(with_aotk),
    ]


if __name__ == "__main__":
    run(["bench.bench_backprop"])
