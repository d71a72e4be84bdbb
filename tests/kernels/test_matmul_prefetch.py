"""Which lines of B a packed matmul's tiles prefetch (`matmul_prefetch`), worked out by
hand for float32 (16 to a line) on static dims, where the plan folds to integers. That
the products stay right with the prefetches in is `test_matmul_kernel`'s part."""

from __future__ import annotations

import pytest
from xdsl.builder import Builder
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, VectorType, f32
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from aotk.kernels import heuristics
from aotk.kernels import matmul_prefetch as prefetch
from aotk.kernels.kernel import Buf, Kernel
from aotk.kernels.matmul_microkernel import Operands

KC = 256  # the K block of the tiles below
PANEL = 240  # columns of a panel: five slivers of 48


def _next(mnk: tuple[int, int, int], blocks, b_t: bool = False) -> prefetch.Region:
    """`next_panel` for C[M, N] = A @ B (B stored [N, K] with `b_t`), blocks = (K range,
    columns of this panel)."""
    m, n, kdim = mnk
    body = Block(arg_types=[MemRefType(f32, [DYNAMIC_INDEX])] * 3)
    k = Kernel(Builder(InsertPoint.at_end(body)))
    c, a, b = (Buf(arg, (), f32) for arg in body.args)
    ops = Operands(c, a, b, m, n, kdim, VectorType(f32, [16]), b_t=b_t)
    tiles = heuristics.MatmulTiles(16, ((1, 1),), 16, 16, 8, 3, KC, PANEL)
    n_main = n // 48 * 48
    return prefetch.next_panel(k, ops, tiles, blocks, (n_main, PANEL))


@pytest.mark.parametrize(
    ("mnk", "blocks", "want"),
    [
        # the next columns of the same K block: 15 lines of each of 256 rows of B
        ((128, 1024, 1024), ((0, 256), (0, 240)), (240, 1024, 256, 15)),
        # the last panel of a K block (1008 columns in whole slivers): the next K block
        ((128, 1024, 1024), ((0, 256), (960, 1008)), (256 * 1024, 1024, 256, 15)),
        # a short last K block (K = 784) is 16 rows
        ((128, 1024, 784), ((512, 768), (960, 1008)), (768 * 1024, 1024, 16, 15)),
        # the last panel of all names itself: 48 columns are 3 lines
        ((128, 1024, 1024), ((768, 1024), (960, 1008)), (768 * 1024 + 960, 1024, 256, 3)),
    ],
)
def test_next_panel_of_b(mnk, blocks, want) -> None:
    got = _next(mnk, blocks)
    assert (got.start, got.stride, got.rows, got.lines) == want
    assert got.per_line == 16


def test_next_panel_of_a_transposed_b() -> None:
    """B stored [N, K]: the next panel's 240 columns are 240 stored rows, of which the
    K block's 256 elements (16 lines) are read."""
    got = _next((128, 1024, 1024), ((256, 512), (0, 240)), b_t=True)
    assert (got.start, got.stride, got.rows, got.lines) == (240 * 1024 + 256, 1024, 240, 16)


def test_only_the_last_tiles_walk_down_columns_of_lines() -> None:
    """80 tiles to a block and 15 lines to a row: tiles 65-79 take a line column each,
    walking down all 256 rows; the earlier ones name the region's first line only."""
    region = prefetch.Region(5000, 1024, 256, 15, 16)
    k = Kernel(Builder(InsertPoint.at_end(Block())))
    walks = {t: prefetch.tile_walk(k, region, t, 80) for t in (0, 64, 65, 79)}
    assert [(w.start, w.stride, w.last) for w in walks.values()] == [
        (5000, 0, 255),
        (5000, 0, 255),
        (5000, 1024, 255),
        (5000 + 14 * 16, 1024, 255),
    ]


def test_a_run_of_lines_is_walked_by_the_first_tiles() -> None:
    """A sliver's stored rows (B stored [N, K]) are one run of lines: 100 here, 32 a tile.
    Tiles 0-3 cover it (the fourth only its last 4 lines); tile 4 names the last line."""
    k = Kernel(Builder(InsertPoint.at_end(Block())))
    walks = [prefetch.run_walk(k, (1000, 100), t, 32, 16) for t in (0, 3, 4)]
    assert [(w.start, w.stride, w.last) for w in walks] == [
        (1000, 16, 31),
        (1000 + 96 * 16, 16, 3),
        (1000 + 99 * 16, 0, 0),
    ]
