"""The micro-kernels that put a 3 x 3 conv kernel into Winograd's points once
(`winograd_weight_f4_<dtype>`), against G g G^T in float64."""

from __future__ import annotations

import numpy as np
import pytest

from aotk import dtypes, micro_kernels, runtime
from aotk.kernels import library, winograd_weight

SENTINEL = 12345.0


def _expected(tf_key: str, w: np.ndarray) -> np.ndarray:
    """U[xi, c, o] = (G w[:, :, c, o] G^T) flattened over its points, in float64."""
    g = np.array(winograd_weight.TRANSFORMS[tf_key].g, dtype=np.float64)
    u = np.einsum("ia,abco,jb->ijco", g, w.astype(np.float64), g)
    return u.reshape(g.shape[0] ** 2, *w.shape[2:])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("tf_key", list(winograd_weight.TRANSFORMS))
@pytest.mark.parametrize("cin, cout", [(1, 8), (3, 20), (16, 33), (5, 64)])
def test_weight_in_winograds_points(
    rng: np.random.Generator, tf_key: str, dtype: str, cin: int, cout: int
) -> None:
    """Output channels in whole vectors and a last one shifted back (20, 33 in float32);
    nothing written past U's end."""
    tf = winograd_weight.TRANSFORMS[tf_key]
    symbol = library.lookup(winograd_weight.name(tf, dtypes.element_type(dtype))).symbol
    w = rng.standard_normal((3, 3, cin, cout)).astype(dtype)
    size = tf.points * cin * cout
    u = runtime.aligned_empty((size + 16,), dtype)
    u[:] = SENTINEL
    micro_kernels.function(symbol)(runtime.address(u), runtime.address(w), cout, cin)
    want = _expected(tf_key, w)
    tol = {"float32": 1e-5, "float64": 1e-13}[dtype]
    got = u[:size].reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())
    assert (u[size:] == SENTINEL).all()


def test_the_transform_of_a_known_kernel() -> None:
    """By hand, F(4 x 4, 3 x 3) from the points 0, 1, -1, 2, -1/2 and infinity: G's rows
    (1, 0, 0), -(1, 1, 1)/3, (1, -1, 1)/3, (1, 2, 4)/15, (-16, 8, -4)/15, (0, 0, 1), so a
    kernel of ones gives G 1 G^T = r r^T with r = (1, -1, 1/3, 7/15, -4/5, 1), the row
    sums of G."""
    w = np.ones((3, 3, 1, 8), np.float32)
    r = np.array([1.0, -1.0, 1 / 3, 7 / 15, -4 / 5, 1.0])
    u = runtime.aligned_empty((36 * 8,), "float32")
    symbol = library.lookup("winograd_weight_f4_float32").symbol
    micro_kernels.function(symbol)(runtime.address(u), runtime.address(w), 8, 1)
    want = np.repeat(np.outer(r, r).reshape(36, 1), 8, 1)
    np.testing.assert_allclose(u.reshape(36, 8), want, rtol=3e-7, atol=1e-7)
