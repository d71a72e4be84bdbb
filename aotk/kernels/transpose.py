"""Batched 2-D transposes as micro-kernels: dst[b, j, i] = src[b, i, j].

Any permutation that, once adjacent axes moving together are merged, swaps the last two
of at most three groups (`(1, 0)`, `(0, 2, 1)`) is one of these: the weight transposes of
every dense layer's gradient, `K.permute_dimensions` on sequences. A transpose only moves
bits, so one kernel per element size serves every dtype. Square tiles of `TILE` keep both
the rows read and the rows written in L1 (a naive nest over 4 KiB-strided rows misses on
every element); threads take tiles of rows.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerType
from xdsl.ir import SSAValue

from aotk.kernels import library
from aotk.kernels.kernel import Buf, DimV, Kernel

TILE = 32
ELEMENT_BYTES = (1, 2, 4, 8)


def as_batched_2d(dims: Sequence[DimV], perm: Sequence[int], k: Kernel) -> list[DimV] | None:
    """(batch, rows, cols) when transposing `dims` by `perm` is a batched 2-D transpose."""
    groups: list[list[int]] = []  # runs of source axes that stay adjacent in the output
    for axis in perm:
        if groups and groups[-1][-1] + 1 == axis:
            groups[-1].append(axis)
        else:
            groups.append([axis])
    order = [g[0] for g in groups]
    merged = {g[0]: k.product([dims[a] for a in g]) for g in groups}
    by_source = [merged[a] for a in sorted(order)]
    if len(groups) == 2 and order[0] > order[1]:
        return [1, *by_source]
    if len(groups) == 3 and order[0] < order[2] < order[1]:
        return by_source
    return None


def emit(k: Kernel, out: Buf, x: Buf, shape: Sequence[DimV], nbytes: int) -> None:
    """Call the micro-kernel for elements of `nbytes`: out = transpose of x, (b, r, c)."""
    library.call(k, f"transpose_{nbytes * 8}bit", [out, x, *shape])


def _build(nbytes: int, k: Kernel, args: list[SSAValue]) -> None:
    """Tiles of TILE x TILE; the loop over (batch, row tiles) is parallel."""
    batch, rows, cols = args[2:]
    elem = IntegerType(8 * nbytes)
    out = library.param_buf(k, args[0], (batch, cols, rows), elem)
    x = library.param_buf(k, args[1], (batch, rows, cols), elem)
    row_tiles = k.div(k.add(rows, TILE - 1), TILE)
    plane = k.mul(rows, cols)
    with k.loop(k.mul(batch, row_tiles), parallel=True) as t:
        b, i0 = k.div(t, row_tiles), k.mul(k.rem(t, row_tiles), TILE)
        base = k.mul(b, plane)
        i_end = k.min(k.add(i0, TILE), rows)
        with k.loop(cols, step=TILE, trips=1024 // TILE) as j0:
            j_end = k.min(k.add(j0, TILE), cols)
            with k.loop(j_end, lb=j0, trips=TILE) as j:
                dst_row = k.add(base, k.mul(j, rows))
                with k.loop(i_end, lb=i0, trips=TILE) as i:
                    value = k.load_flat(x, k.add(base, k.add(k.mul(i, cols), j)))
                    k.store_flat(out, k.add(dst_row, i), value)


for _nbytes in ELEMENT_BYTES:
    library.register(
        library.MicroKernel(
            f"transpose_{_nbytes * 8}bit",
            "ppiii",
            functools.partial(_build, _nbytes),
            ("dst", "src", "batch", "rows", "cols"),
        )
    )
