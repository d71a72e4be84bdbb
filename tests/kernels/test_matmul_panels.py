"""What the packed matmul, blocked over K, leaves in scratch: how wide a panel of B it
packs on one thread and on two, and that a transposed A is packed only for columns
that have packed B to meet. Values are checked against NumPy too."""

from __future__ import annotations

import numpy as np
import pytest
import scratch_matmul
from conftest import assert_product_close

from aotk.kernels import heuristics
from aotk.kernels import matmul_packed as packed


def _inputs(rng: np.random.Generator, m: int, kd: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    return (
        rng.standard_normal((m, kd)).astype(np.float32),
        rng.standard_normal((kd, n)).astype(np.float32),
    )


@pytest.mark.parametrize("threads", [1, 2])
def test_panel_width_follows_the_pool(rng: np.random.Generator, threads: int) -> None:
    """M > 2N is blocked over K on any pool (two K blocks here, the second 44 rows).
    One thread packs a panel of one column block (so its 288 whole columns go in two
    panels of three slivers), two threads PANEL_BLOCKS blocks (one panel). The last
    panel packed, of the last K block, is still in scratch: its first sliver's rows tell
    which columns it held."""
    tiles = heuristics.matmul_tiles(4, None, None, None)
    width, kc = tiles.nr * tiles.lanes, tiles.packed_kc
    n = 6 * width + 2
    m, kd = 2 * n + 20, kc + 44
    a, b = _inputs(rng, m, kd, n)
    c, scratch = scratch_matmul.run((a, b), threads)
    assert_product_close(c, a, b, f"{m}x{kd}x{n} on {threads} threads")
    limit = tiles.packed_nc if threads == 1 else packed.panel_cols(tiles)
    slivers = 6 if limit >= 6 * width else 3
    last_panel = 6 * width - slivers * width
    first_sliver = scratch[: 44 * width].reshape(44, width)
    np.testing.assert_array_equal(first_sliver, b[kc:, last_panel : last_panel + width])


@pytest.mark.parametrize("threads", [1, 2])
def test_transposed_a_is_not_packed_for_narrow_b(rng: np.random.Generator, threads: int) -> None:
    """A classifier's weight gradient, A^T (1000 x 64) @ B (64 x 10): B is narrower than a
    sliver, so its tiles read A and B in place and nothing lands in scratch."""
    a, b = _inputs(rng, 1000, 64, 10)
    c, scratch = scratch_matmul.run((a, b), threads, a_t=True)
    assert_product_close(c, a, b, f"A^T B on {threads} threads")
    assert np.isnan(scratch).all(), "scratch was written"


def test_transposed_a_is_packed_for_wide_b(rng: np.random.Generator) -> None:
    """With whole slivers of B, each K block of A^T is packed after the panel of B:
    scratch holds A's rows, mr at a time (the check above is not vacuous)."""
    tiles = heuristics.matmul_tiles(4, None, None, None)
    width = tiles.nr * tiles.lanes
    a, b = _inputs(rng, 128, 64, width)
    c, scratch = scratch_matmul.run((a, b), 1, a_t=True)
    assert_product_close(c, a, b, "A^T B, one sliver")
    a_block = scratch[tiles.packed_kc * width :][: 64 * tiles.mr].reshape(64, tiles.mr)
    np.testing.assert_array_equal(a_block, a[: tiles.mr].T)
