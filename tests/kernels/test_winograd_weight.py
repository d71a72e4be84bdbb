"""The micro-kernels that put a 3 x 3 conv kernel into Winograd's points once
(`winograd_weight_<layout>_<dtype>`), against G g G^T in float64."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type

from aotk import dtypes, micro_kernels, runtime
from aotk.kernels import library, winograd_weight

SENTINEL = 12345.0


def _expected(layout: winograd_weight.Layout, w: np.ndarray) -> np.ndarray:
    """U in float64: U[xi, c, o] = (G w[:, :, c, o] G^T) flattened over its points; in
    slivers, each point's C x K cut into K-wide column blocks of the sliver width, the
    last padded with zeros."""
    g = np.array(layout.tf.g, dtype=np.float64)
    u = np.einsum("ia,abco,jb->ijco", g, w.astype(np.float64), g).reshape(-1, *w.shape[2:])
    dims = layout.dims(dtypes.element_type(w.dtype.name), w.shape[2:])
    if not layout.slivers:
        return u
    points, slivers, cin, width = dims
    padded = np.zeros((points, cin, slivers * width))
    padded[:, :, : w.shape[3]] = u
    return padded.reshape(points, cin, slivers, width).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("key", list(winograd_weight.LAYOUTS))
@pytest.mark.parametrize("cin, cout", [(1, 8), (3, 20), (16, 33), (5, 64), (2, 100)])
def test_weight_in_winograds_points(
    rng: np.random.Generator, key: str, dtype: str, cin: int, cout: int
) -> None:
    """Output channels in whole vectors and a last one shifted back (20, 33 in float32),
    or masked in slivers, whose padding comes out zero; nothing written past U's end."""
    layout = winograd_weight.LAYOUTS[key]
    symbol = library.lookup(winograd_weight.name(layout, dtypes.element_type(dtype))).symbol
    w = rng.standard_normal((3, 3, cin, cout)).astype(dtype)
    want = _expected(layout, w)
    u = runtime.aligned_empty((want.size + 16,), dtype)
    u[:] = SENTINEL
    micro_kernels.function(symbol)(runtime.address(u), runtime.address(w), cout, cin)
    tol = {"float32": 1e-5, "float64": 1e-13}[dtype]
    got = u[: want.size].reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    assert (u[want.size :] == SENTINEL).all()


def test_the_transform_of_a_known_kernel() -> None:
    """By hand, F(4 x 4, 3 x 3) from the points 0, 1, -1, 2, -1/2 and infinity: G's rows
    (1, 0, 0), -(1, 1, 1)/3, (1, -1, 1)/3, (1, 2, 4)/15, (-16, 8, -4)/15, (0, 0, 1), so a
    kernel of ones gives G 1 G^T = r r^T with r = (1, -1, 1/3, 7/15, -4/5, 1), the row
    sums of G."""
    w = np.ones((3, 3, 1, 8), np.float32)
    r = np.array([1.0, -1.0, 1 / 3, 7 / 15, -4 / 5, 1.0])
    u = runtime.aligned_empty((36 * 8,), "float32")
    layout = winograd_weight.LAYOUTS["f4"]
    symbol = library.lookup(winograd_weight.name(layout, Float32Type())).symbol
    micro_kernels.function(symbol)(runtime.address(u), runtime.address(w), 8, 1)
    want = np.repeat(np.outer(r, r).reshape(36, 1), 8, 1)
    np.testing.assert_allclose(u.reshape(36, 8), want, rtol=3e-7, atol=1e-7)
