"""Register-tiled matmul on a packed copy of B, for kernels given scratch memory.

Each `kc` x `nc` block of B is copied into scratch as slivers of `nr` vectors' width,
each sliver `kc` rows of contiguous memory. A tile of `mr` x `nr` vectors of C then lives
in registers (scf.for iter_args) over the K block: per step, `nr` loads of the sliver,
`mr` broadcasts of A and `mr * nr` FMAs, and C is stored once per block (loaded too, but
for the first).
Packing is what makes this fast for any N: unpacked, rows of a sliver of a B whose rows
are a multiple of 4 KiB long all land in one cache set and one page each. Threads split
the packing by rows of B, then the tiles by rows of C. What the tiles do not cover (rows
too few to pack, the columns right of the last whole sliver) is `matmul_edges`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from aotk.kernels import library
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels import matmul_prefetch as prefetch
from aotk.kernels.heuristics import MatmulTiles
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const

Range = tuple[DimV, DimV]
# Column blocks (packed_nc wide) of B packed together per K block on two threads or
# more: threads share out their (block, row tile) pairs in one loop.
PANEL_BLOCKS = 4


def panel_cols(tiles: MatmulTiles) -> int:
    """Columns of B packed at a time at most: PANEL_BLOCKS column blocks."""
    return PANEL_BLOCKS * tiles.packed_nc


def panel_limit(k: Kernel, tiles: MatmulTiles) -> DimV:
    """Columns of B to pack at a time on this pool. One thread packs one column block
    (a quarter of L2): its row tiles then find all of the panel in L2, where four
    blocks had filled it and 128 x 1024 x 1024 ran 3% slower. Two threads or more pack
    `panel_cols`: each takes its share of the blocks, and the weight gradient of a
    128-row batch, with one K block, waits at fewer barriers (2% faster than with
    one block a panel)."""
    shared = k.b.insert(arith.CmpiOp(k.index(library.parallel_width(k)), k.index(2), "sge"))
    return k.select(shared.result, panel_cols(tiles), tiles.packed_nc)


def scratch_elems(k: Kernel, tiles: MatmulTiles, mnk: tuple[DimV, DimV, DimV], a_t: bool) -> DimV:
    """Elements of scratch the packed path needs: a K block of up to `panel_cols` whole
    slivers of B, for a transposed A one K block of all its rows, and a sliver's width
    of all K rows for B's last columns (`matmul_edges.emit_edge`), or without a transposed A, all of
    B packed if more; none when N is under a sliver."""
    m, n, kdim = mnk
    width = tiles.nr * tiles.lanes
    panel = k.mul(tiles.packed_kc, _panel_width(k, tiles, n))
    edge = k.select(_has_panel(k, tiles, n), k.mul(kdim, width), 0)
    total = k.add(panel, edge)
    if a_t:
        return k.add(total, k.mul(tiles.packed_kc, m))
    # or all of B in whole slivers, for tiles over all of K (`matmul_prepacked.emit_whole_k`)
    return k.select(_has_panel(k, tiles, n), k.max(total, all_of_b_elems(k, tiles, n, kdim)), 0)


def all_of_b_elems(k: Kernel, tiles: MatmulTiles, n: DimV, kdim: DimV) -> DimV:
    """Elements of all of B packed into slivers: K rows of N rounded up to whole slivers."""
    width = tiles.nr * tiles.lanes
    return k.mul(k.mul(k.div(k.add(n, width - 1), width), width), kdim)


def _has_panel(k: Kernel, tiles: MatmulTiles, n: DimV) -> SSAValue | bool:
    width = tiles.nr * tiles.lanes
    if isinstance(n, int):
        return n >= width
    return k.b.insert(arith.CmpiOp(k.index(n), k.index(width), "sge")).result


def _panel_width(k: Kernel, tiles: MatmulTiles, n: DimV) -> DimV:
    width = tiles.nr * tiles.lanes
    return k.min(k.mul(k.div(n, width), width), panel_cols(tiles))


def edge_base(k: Kernel, ops: mk.Operands, tiles: MatmulTiles) -> DimV:
    """Where B's packed last columns start in scratch: after the panel of B and a
    transposed A's block."""
    base = _a_base(k, ops, tiles)
    return k.add(base, k.mul(tiles.packed_kc, ops.m)) if ops.a_t else base


def _a_base(k: Kernel, ops: mk.Operands, tiles: MatmulTiles) -> DimV:
    """Where a packed transposed A starts in scratch: after the panel of B."""
    return k.mul(tiles.packed_kc, _panel_width(k, tiles, ops.n))


def pack_transposed_a(
    k: Kernel, ops: mk.Operands, tiles: MatmulTiles, scratch: Buf, rows: Range, k_range: Range
) -> None:
    """A[rows, k-range] from an A stored [K, M] into scratch after the B block, as one
    sliver of `mr` rows per tile (kk-major): the tiles then read it in order. Unpacked,
    the K rows of a tile's column of A are M apart, which for M a multiple of 1024
    puts them all in a few cache sets. A tile's mr elements are adjacent in a row of
    the stored A and in the sliver: one vector of mr lanes moves them. Threads split
    the tiles, each written in order (row by row of A, every store went to another
    tile's sliver, `mr * kc` elements on: all in one L1 set)."""
    k0, k1 = k_range
    base = k.sub(_a_base(k, ops, tiles), k.mul(k0, tiles.mr))
    tile_vt = VectorType(ops.vt.element_type, [tiles.mr])
    with k.loop(rows[1], lb=rows[0], step=tiles.mr, parallel=True) as i0:
        dst = k.add(base, k.mul(i0, tiles.packed_kc))
        with k.loop(k1, lb=k0, trips=tiles.packed_kc) as kk:
            value = mk.vload(k, ops.a, k.add(k.mul(kk, ops.m), i0), tile_vt)
            mk.vstore(k, scratch, k.add(dst, k.mul(kk, tiles.mr)), value)


def pack_b(
    k: Kernel, ops: mk.Operands, tiles: MatmulTiles, scratch: Buf, k_range: Range, j_range: Range
) -> None:
    """scratch[sliver s][kk - k0][:] = B[kk, j0 + s * width : ...], read row by row."""
    if ops.b_t:
        _pack_transposed_b(k, ops, tiles, scratch, k_range, j_range)
        return
    width = tiles.nr * tiles.lanes
    k0, k1 = k_range
    jb, j_end = j_range
    with k.loop(k1, lb=k0, parallel=True) as kk:
        src = k.mul(kk, ops.n)
        dst = k.mul(k.sub(kk, k0), width)
        with k.loop(j_end, lb=jb, step=width, trips=panel_cols(tiles) // width) as j0:
            sliver = k.add(k.mul(k.sub(j0, jb), tiles.packed_kc), dst)
            for v in range(tiles.nr):
                off = v * tiles.lanes
                value = mk.vload(k, ops.b, k.add(src, k.add(j0, off)), ops.vt)
                mk.vstore(k, scratch, k.add(sliver, off), value)


def _pack_transposed_b(
    k: Kernel, ops: mk.Operands, tiles: MatmulTiles, scratch: Buf, k_range: Range, j_range: Range
) -> None:
    """The same slivers from a B stored [N, K], `lanes` of its rows (columns of the
    sliver) at a time, transposed in registers (`transpose_into`). Threads split those
    rows, which write disjoint columns."""
    lanes, width = tiles.lanes, tiles.nr * tiles.lanes
    jb, j_end = j_range
    with k.loop(j_end, lb=jb, step=lanes, parallel=True, trips=tiles.packed_nc // lanes) as j:
        within = k.sub(j, jb)
        lane = k.rem(within, width)
        column = k.add(k.mul(k.sub(within, lane), tiles.packed_kc), lane)
        dst = k.sub(column, k.mul(k_range[0], width))
        srcs = [k.mul(k.add(j, r), ops.kdim) for r in range(lanes)]
        trips = tiles.packed_kc // lanes
        mk.transpose_into(k, (scratch, ops.b), (srcs, dst), k_range, width, trips)


def packed_tile(
    k: Kernel,
    ops: mk.Operands,
    plan: tuple[MatmulTiles, Buf],
    corner: tuple[DimV, tuple[DimV, DimV]],
    k_steps: tuple[Range, prefetch.Walk],
) -> None:
    """C[i0:i0+mr, j0:j0+width] += A[rows, k-range] @ packed sliver starting at j0 - jb,
    for corner = (i0, (j0, jb)); each k step also prefetches a line of the walk.

    A K block of full length gets a copy of the K loop with that constant trip count
    (the common case; LLVM schedules it better), the last, shorter one the general loop.
    """
    (tiles, scratch), (i0, (j0, jb)), (k_range, walk) = plan, corner, k_steps
    lanes, vt, rows, nvec = tiles.lanes, ops.vt, tiles.mr, tiles.nr
    k0, k1 = k_range
    c_offs = [
        k.add(k.mul(k.add(i0, r), ops.n), k.add(j0, v * lanes))
        for r in range(rows)
        for v in range(nvec)
    ]
    sliver = k.sub(k.mul(k.sub(j0, jb), tiles.packed_kc), k.mul(k0, nvec * lanes))
    # a transposed A was packed by `pack_transposed_a`
    a_sliver = k.add(_a_base(k, ops, tiles), k.sub(k.mul(i0, tiles.packed_kc), k.mul(k0, rows)))

    def a_value(r: int, kk: SSAValue) -> SSAValue:
        if ops.a_t:
            return k.load_flat(scratch, k.add(a_sliver, k.add(k.mul(kk, rows), r)))
        return k.load_flat(ops.a, ops.a_at(k, k.add(i0, r), kk))

    def step(kk: SSAValue, accs: Sequence[SSAValue]) -> list[SSAValue]:
        b_row = k.add(sliver, k.mul(kk, nvec * lanes))
        prefetch.step(k, ops.b, walk, k.sub(kk, k0))
        return _tile_update(k, tiles, vt, (scratch, b_row), lambda r: a_value(r, kk), accs)

    def tile(k_end: DimV) -> None:
        inits = _tile_inits(k, ops, c_offs, k0)
        results = k.fold_loop(k_end, inits, step, lb=k0, trips=tiles.packed_kc)
        for off, value in zip(c_offs, results, strict=True):
            mk.store_c(k, ops, off, value)

    if isinstance(k0, int) and isinstance(k1, int):
        tile(k1)
        return
    full = k.b.insert(arith.CmpiOp(k.index(k.sub(k1, k0)), k.index(tiles.packed_kc), "eq")).result
    k.if_else(full, lambda: tile(k.add(k0, tiles.packed_kc)), lambda: tile(k1))


def _tile_inits(k: Kernel, ops: mk.Operands, offs: list[DimV], k0: DimV) -> list[SSAValue]:
    """The accumulators a tile starts a K block with: C's values, or zero for the first
    block (so C needs no zeroing pass before the matmul) and for an update's every block
    (`mk.store_c` adds them to C, scaled)."""
    vt = ops.vt
    zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
    if (isinstance(k0, int) and k0 == 0) or ops.alpha is not None:
        return [zero] * len(offs)
    first = k.b.insert(arith.CmpiOp(k.index(k0), k.index(0), "eq")).result
    return [
        k.b.insert(arith.SelectOp(first, zero, mk.vload(k, ops.c, off, vt))).result for off in offs
    ]


def _tile_update(
    k: Kernel,
    tiles: MatmulTiles,
    vt: VectorType,
    b_row: tuple[Buf, DimV],
    a_value: Callable[[int], SSAValue],
    accs: Sequence[SSAValue],
) -> list[SSAValue]:
    """One k step of an mr x nr-vector register tile: accs[r, v] += a_value(r) * the
    v-th vector of B's row, which starts at b_row (a buffer and an offset). Row r's
    element of A is loaded just before its FMAs, as the tile's schedule wants."""
    buf, start = b_row
    nvec = len(accs) // tiles.mr  # tiles.nr, or fewer for a cut tile
    bs = [mk.vload(k, buf, k.add(start, v * tiles.lanes), vt) for v in range(nvec)]
    out = list(accs)
    for r in range(tiles.mr):
        av = mk.splat(k, a_value(r), vt)
        for v in range(nvec):
            out[r * nvec + v] = mk.vfma(k, av, bs[v], accs[r * nvec + v])
    return out


def emit_packed(
    k: Kernel,
    ops: mk.Operands,
    plan: tuple[MatmulTiles, Buf],
    rows: Range,
    blocks: tuple[tuple[Range, Range], Range],
) -> None:
    """C[rows, cols] += A[rows, k-block] @ B[k-block, cols] for one K block and a panel
    of at most `panel_cols` columns; blocks = ((K range, cols), (columns of B in whole
    slivers, columns a panel)), the second for the next panel's prefetch
    (`matmul_prefetch`).

    The whole panel of B is packed first; then one parallel loop takes (column block,
    row tile) pairs, column block outermost, so a thread's share of B stays in its L2
    while its row tiles pass over it. One pack and one loop per panel, not per column
    block: with M of a few hundred rows, 2 x (K/kc) x (N/nc) barriers and an uneven
    split of 21 row tiles had held two threads to a 1.4x speed-up.
    `rows` must be a multiple of mr long, `cols` of nr vectors; the first K block writes
    C, later ones add to it. The caller packs a transposed A for the K block
    (`pack_transposed_a`).
    """
    tiles, scratch = plan
    width = tiles.nr * tiles.lanes
    (k_range, (jb, j_end)), panels = blocks
    pack_b(k, ops, tiles, scratch, k_range, (jb, j_end))
    ahead = prefetch.next_panel(k, ops, tiles, (k_range, (jb, j_end)), panels)
    row_tiles = k.div(k.sub(rows[1], rows[0]), tiles.mr)
    col_blocks = k.div(k.add(k.sub(j_end, jb), tiles.packed_nc - 1), tiles.packed_nc)
    with k.loop(k.mul(col_blocks, row_tiles), parallel=True) as item:
        block = k.div(item, row_tiles)
        row_tile = k.sub(item, k.mul(block, row_tiles))
        i0 = k.add(rows[0], k.mul(row_tile, tiles.mr))
        j_lo = k.add(jb, k.mul(block, tiles.packed_nc))
        j_hi = k.min(k.add(j_lo, tiles.packed_nc), j_end)
        slivers = k.div(k.sub(j_hi, j_lo), width)
        with k.loop(j_hi, lb=j_lo, step=width, trips=tiles.packed_nc // width) as j0:
            tile = k.add(k.mul(row_tile, slivers), k.div(k.sub(j0, j_lo), width))
            walk = prefetch.tile_walk(k, ahead, tile, k.mul(row_tiles, slivers))
            packed_tile(k, ops, (tiles, scratch), (i0, (j0, jb)), (k_range, walk))


def whole_k_tile(
    k: Kernel,
    ops: mk.Operands,
    tiles: MatmulTiles,
    corner: tuple[DimV, DimV],
    b_row: Callable[[SSAValue], DimV],
    init: Buf | None = None,
    walk: tuple[Buf, prefetch.Walk] | None = None,
    cut: tuple[int, DimV] | None = None,
) -> None:
    """C[i0:i0+mr, j0:j0+width] = A[rows, :] @ B[:, cols], accumulators kept in registers
    over all of K; `b_row(kk)` is where the tile's part of B's row kk starts in `ops.b`.
    With `init` (shaped as C), C = init + A @ B: the accumulators start from it. With a
    `walk` (and the buffer it reads), each k step prefetches a line of it. A `cut` =
    (vectors, lanes) tile is that many vectors wide, of which C (and init) has only the
    first `lanes` lanes of the last; B must have all of them (zeros past C's columns)."""
    lanes, vt, rows = tiles.lanes, ops.vt, tiles.mr
    nvec = tiles.nr if cut is None else cut[0]
    i0, j0 = corner
    c_at = [
        k.add(k.add(k.mul(k.add(i0, r), ops.n), j0), v * lanes)
        for r in range(rows)
        for v in range(nvec)
    ]
    last = None if cut is None else mk.lane_mask(k, cut[1], vt)
    masks = [last if v == nvec - 1 else None for _ in range(rows) for v in range(nvec)]

    def step(kk: SSAValue, accs: Sequence[SSAValue]) -> list[SSAValue]:
        if walk is not None:
            prefetch.step(k, walk[0], walk[1], kk)

        def a_value(r: int) -> SSAValue:
            return k.load_flat(ops.a, ops.a_at(k, k.add(i0, r), kk))

        return _tile_update(k, tiles, vt, (ops.b, b_row(kk)), a_value, accs)

    if init is None:
        inits = [mk.splat(k, const(k.b, 0.0, vt.element_type), vt)] * (rows * nvec)
    else:
        inits = [
            mk.vload_lanes(k, init, at, vt, mask) for at, mask in zip(c_at, masks, strict=True)
        ]
    results = k.fold_loop(ops.kdim, inits, step, trips=tiles.packed_kc)
    for at, value, mask in zip(c_at, results, masks, strict=True):
        mk.store_c(k, ops, at, value, mask)


def cut_tile(
    k: Kernel,
    ops: mk.Operands,
    tiles: MatmulTiles,
    at: tuple[DimV, Range],
    b: tuple[DimV, Buf | None],
) -> None:
    """The mr rows from at = (i, (j0, j1)) of C, fewer columns than a sliver, on a sliver
    of B padded to its width at offset `base` of ops.b: `whole_k_tile` with as few of its
    vectors as cover the columns, the last masked; b = (base, init). Column tiles of one
    vector each, as the edge had, load and broadcast A's mr elements of a K step once
    per vector."""
    (i, (j0, j1)), (base, addend) = at, b
    lanes, left = tiles.lanes, k.sub(j1, j0)
    width = tiles.nr * lanes

    def b_row(kk: SSAValue) -> DimV:
        return k.add(base, k.mul(kk, width))

    for count in range(1, tiles.nr + 1):
        used = k.sub(left, (count - 1) * lanes)  # lanes of the last vector: 1 to lanes
        fits = k.both(k.compare("sgt", used, 0), k.compare("sle", used, lanes))

        def tile(count: int = count, used: DimV = used) -> None:
            whole_k_tile(k, ops, tiles, (i, j0), b_row, addend, cut=(count, used))

        k.if_else(fits, tile, None)
