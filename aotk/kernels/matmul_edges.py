"""The parts of a packed matmul's C that its register tiles on packed B do not cover.

Rows too few to repay packing B have the same tiles read B in place (`emit_direct`); the
columns right of the last whole sliver (`emit_edge`) are gathered, all of K, into
scratch rows a sliver wide for a register tile cut to them, or, for a B narrower than
a sliver, read in place a column tile at a time (`edge_rows`, `edge_columns`).
"""

from __future__ import annotations

import dataclasses

from xdsl.dialects import arith

from aotk.kernels import matmul_microkernel as mk
from aotk.kernels import matmul_packed as packed
from aotk.kernels.heuristics import MatmulTiles
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.matmul_packed import Range
from aotk.kernels.scalar import const


def emit_direct(k: Kernel, ops: mk.Operands, tiles: MatmulTiles, rows: Range, cols: Range) -> None:
    """C[rows, cols] = A[rows, :] @ B[:, cols] by the packed path's register tiles with B
    read in place, its rows N apart: for few rows, which would not repay packing B.

    Threads split the column slivers; each sliver (K x nr vectors of B) stays in cache
    while every tile of rows passes over it, its accumulators kept in registers over the
    whole of K (so C is written once, never read). The columns right of the last whole
    sliver are one more item of the same loop, read in place too: a recurrent step's
    matmul had paid a pack and two more parallel loops for them. `rows` must be a
    multiple of mr long, and B not transposed.
    """
    width = tiles.nr * tiles.lanes
    lo, hi = cols
    items = k.div(k.add(k.sub(hi, lo), width - 1), width)
    with k.loop(items, parallel=True) as item:
        j0 = k.add(lo, k.mul(item, width))
        whole = k.b.insert(arith.CmpiOp(k.index(k.add(j0, width)), k.index(hi), "sle")).result

        def sliver() -> None:
            with k.loop(rows[1], lb=rows[0], step=tiles.mr, trips=4) as i0:
                _direct_tile(k, ops, tiles, i0, j0)

        k.if_else(whole, sliver, lambda: edge_rows(k, ops, tiles, (rows, (j0, hi))))


def edge_rows(
    k: Kernel,
    ops: mk.Operands,
    tiles: MatmulTiles,
    block: tuple[Range, Range],
    parallel: bool = False,
) -> None:
    """C[rows, cols] for fewer columns than a sliver, B read in place, a row tile at a
    time (block = (rows, cols), rows a multiple of mr long; `parallel`: threads split
    the row tiles)."""
    rows, cols = block
    with k.loop(rows[1], lb=rows[0], step=tiles.mr, parallel=parallel, trips=4) as i0:
        edge_columns(k, ops, tiles, (i0, tiles.mr), cols)


def edge_columns(
    k: Kernel,
    ops: mk.Operands,
    tiles: MatmulTiles,
    tile: tuple[DimV, int],
    cols: Range,
) -> None:
    """C[tile's rows, cols] for at most a sliver's columns of a B read in place: one
    column tile per vector, each over all of K, the last masked to the columns left
    (a register tile's vectors past B's columns would read past its rows)."""
    lo, hi = cols
    vectors_end = k.add(lo, k.mul(k.div(k.sub(hi, lo), tiles.lanes), tiles.lanes))
    rest = k.sub(hi, vectors_end)

    def column(j: DimV, count: DimV | None) -> None:
        whole_k = (0, ops.kdim)
        mk.column_tile(k, ops, tile, whole_k, (j, count), None, False, tiles.packed_kc)

    with k.loop(vectors_end, lb=lo, step=tiles.lanes, trips=tiles.nr - 1) as j:
        column(j, None)
    k.if_positive(rest, lambda: column(vectors_end, rest))


def _direct_tile(k: Kernel, ops: mk.Operands, tiles: MatmulTiles, i0: DimV, j0: DimV) -> None:
    packed.whole_k_tile(k, ops, tiles, (i0, j0), lambda kk: ops.b_at(k, kk, j0))


def emit_edge(
    k: Kernel, ops: mk.Operands, tiles: MatmulTiles, scratch: Buf, rows: Range, cols: Range
) -> None:
    """C[rows, cols] = A[rows, :] @ B[:, cols] for the columns right of the last whole
    sliver (fewer than nr vectors; N at least a sliver wide).

    They are copied, all K rows, into scratch rows a sliver wide (zero-padded), read in
    place their rows would be N apart: at N = 1024 all in a few cache sets. A B stored
    [N, K] is gathered from its last rows, without the padding: the lanes past the last
    column are computed and never stored. Threads then split the row tiles, each one
    `matmul_packed.cut_tile` over all of K. One parallel loop, not panels blocked over
    K: those took a fifth of a 256 x 1024 x 1024 product's time at two threads for its
    last 16 columns, most of it waiting at barriers. `rows` must be a multiple of mr
    long.
    """
    base = packed.edge_base(k, ops, tiles)
    _pack_edge(k, ops, tiles, (scratch, base), cols)
    edge = dataclasses.replace(ops, b=scratch, b_t=False)

    with k.loop(rows[1], lb=rows[0], step=tiles.mr, parallel=True) as i0:
        packed.cut_tile(k, edge, tiles, (i0, cols), (base, None))


def _pack_edge(
    k: Kernel, ops: mk.Operands, tiles: MatmulTiles, into: tuple[Buf, DimV], cols: Range
) -> None:
    """B[:, cols] into scratch rows a sliver wide from `into` = (scratch, offset), one per
    K row, threads splitting them."""
    (scratch, base), (lo, hi) = into, cols
    width = tiles.nr * tiles.lanes
    if ops.b_t:  # column j of B is row j of what is stored; lanes past hi unused
        with k.loop(ops.kdim, parallel=True, trips=tiles.packed_kc) as kk:
            dst = k.add(base, k.mul(kk, width))
            with k.loop(k.sub(hi, lo)) as c:
                value = k.load_flat(ops.b, k.add(k.mul(k.add(lo, c), ops.kdim), kk))
                k.store_flat(scratch, k.add(dst, c), value)
        return
    zero = mk.splat(k, const(k.b, 0.0, ops.vt.element_type), ops.vt)
    # the lanes of B's row that each vector of the scratch row takes (0 to all)
    counts = [k.max(k.sub(k.sub(hi, lo), v * tiles.lanes), 0) for v in range(tiles.nr)]
    masks = [mk.lane_mask(k, k.min(c, tiles.lanes), ops.vt) for c in counts]
    with k.loop(ops.kdim, parallel=True, trips=tiles.packed_kc) as kk:
        src, dst = k.add(k.mul(kk, ops.n), lo), k.add(base, k.mul(kk, width))
        for v, lanes in enumerate(masks):
            value = mk.vload_masked(k, ops.b, k.add(src, v * tiles.lanes), lanes, zero)
            mk.vstore(k, scratch, k.add(dst, v * tiles.lanes), value)
