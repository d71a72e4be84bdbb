"""Loop nest of C[M, N] = A[M, K] @ B[K, N] on flat row-major buffers.

float32/float64, without scratch: C is zeroed, K cut into blocks of `kc` and N into
blocks of `nc`; within a block, rows of C are taken a few at a time (`panels` of the
tiles; the last rows by smaller panels) and updated by `matmul_microkernel.panel`,
k_unroll rows of B per pass. With scratch (`scratch_elems` of it), the bulk of C is done
by register tiles on packed blocks of B (`matmul_packed`), which write C without reading
it first, and only the edges by panels (whose part of C alone is zeroed). On two threads
or more, for M up to twice N and A not transposed, all of B is packed at once
and each tile kept over all of K instead (`matmul_prepacked.emit_whole_k`).
Every dim may be dynamic; edges are smaller panels, and the last columns (fewer than a
vector) one masked vector per row, kept in registers over each K block.
Integers and float16 take a plain i-k-j nest that LLVM vectorizes along N.
Either operand may be stored transposed (`a_t`: A as [K, M]; `b_t`: B as [N, K]), as the
gradients of a dense layer want them: a transposed B is packed by columns, and its edges
are dot products of contiguous rows; a transposed A is packed too (`matmul_packed`).
Float kernels are micro-kernels (`aotk.kernels`): built once with every dim dynamic, so
a call site is one call (the tile sizes depend only on the dtype and the host anyway).
Threads split the rows of C: the loops over row tiles (and over rows, for integers) are
parallel, inside the K and N blocks, so each thread reads the block of B all share.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Iterator
from contextlib import contextmanager

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import heuristics, library, matmul_scalar
from aotk.kernels import matmul_edges as edges
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels import matmul_packed as packed
from aotk.kernels import matmul_prepacked as prepacked
from aotk.kernels.kernel import PARALLEL_GRAIN, Buf, DimV, Kernel

Range = tuple[DimV, DimV]
GEMV_ROWS = 2  # up to this many rows of C, threads split its columns instead


def emit(
    k: Kernel,
    c: Buf,
    a: Buf,
    b: Buf,
    *,
    m: DimV,
    n: DimV,
    kdim: DimV,
    scratch: Buf | None = None,
    a_t: bool = False,
    b_t: bool = False,
    alpha: Buf | None = None,
) -> None:
    """Emit c = a @ b; with `scratch` (see `scratch_elems`), B is packed. `a_t`: `a` is
    stored as [K, M]; `b_t`: `b` is stored as [N, K]. With `alpha` (a float buffer of
    one element), c = c + alpha * (a @ b) instead."""
    if not isinstance(c.elem, Float32Type | Float64Type):
        assert alpha is None, "matmul updates are float micro-kernels"
        ops = mk.Operands(c, a, b, m, n, kdim, VectorType(c.elem, [1]), a_t, b_t)
        matmul_scalar.emit(k, ops, m)
        return
    pointers = [c, a, b] if scratch is None else [c, a, b, scratch]
    name = _kernel_name(c.elem, (scratch is not None, a_t, b_t, alpha is not None))
    library.call(k, name, [*pointers, *([alpha] if alpha is not None else []), m, n, kdim])


def _kernel_name(elem: Attribute, variant: tuple[bool, bool, bool, bool]) -> str:
    flags = zip(("_packed", "_ta", "_tb", "_update"), variant, strict=True)
    return f"matmul_{dtypes.numpy_dtype(elem)}" + "".join(tag for tag, on in flags if on)


def _build(
    elem: Float32Type | Float64Type,
    variant: tuple[bool, bool, bool, bool],
    k: Kernel,
    args: list[SSAValue],
) -> None:
    """The body of a float matmul micro-kernel: (c, a, b[, scratch][, alpha], m, n, k)."""
    packed, a_t, b_t, update = variant
    m, n, kdim = args[-3:]
    scratch = scratch_elems(k, elem, (m, n, kdim), a_t)
    a_dims = (kdim, m) if a_t else (m, kdim)
    b_dims = (n, kdim) if b_t else (kdim, n)
    dims: list[tuple[DimV, ...]] = [(m, n), a_dims, b_dims]
    dims += [(scratch,)] * packed + [(1,)] * update
    bufs = [library.param_buf(k, p, d, elem) for p, d in zip(args[:-3], dims, strict=True)]
    c, a, b = bufs[:3]
    vt = VectorType(elem, [heuristics.matmul_tiles(dtypes.byte_size(elem), m, n, kdim).lanes])
    alpha = k.load_flat(bufs[-1], 0) if update else None
    ops = mk.Operands(c, a, b, m, n, kdim, vt, a_t, b_t, alpha)
    with k.share_only_when(ops.worth_sharing(k)):
        emit_loops(k, ops, scratch=bufs[3] if packed else None)


def emit_loops(k: Kernel, ops: mk.Operands, scratch: Buf | None = None) -> None:
    """Emit the loops computing float C = A @ B (a micro-kernel's body)."""
    m, n, kdim = ops.m, ops.n, ops.kdim
    tiles = heuristics.matmul_tiles(dtypes.byte_size(ops.c.elem), m, n, kdim)
    if isinstance(m, int):
        if m <= GEMV_ROWS:
            _column_stripes(k, ops, tiles)
        else:
            _rows_of_tiles(k, ops, tiles, scratch)
        return
    few = k.b.insert(arith.CmpiOp(m, k.index(GEMV_ROWS), "sle")).result
    k.if_else(
        few,
        lambda: _column_stripes(k, ops, tiles),
        lambda: _rows_of_tiles(k, ops, tiles, scratch),
    )


def _column_stripes(k: Kernel, ops: mk.Operands, tiles: heuristics.MatmulTiles) -> None:
    """C = A @ B for a few rows (matrix-vector products, a batch of one): the work is
    streaming B, so threads split its columns, one stripe each (whole vectors wide),
    running the panel loops over it. One thread keeps one stripe (narrower ones would
    only cut B's rows into shorter streams), and so does a product too small to share."""
    vectors = k.div(k.add(ops.n, ops.lanes - 1), ops.lanes)
    worth = k.div(k.mul(ops.m, k.mul(ops.n, ops.kdim)), PARALLEL_GRAIN)
    stripes = k.max(k.min(k.min(library.parallel_width(k), vectors), worth), 1)
    per_stripe = k.max(k.div(k.add(vectors, k.sub(stripes, 1)), stripes), 1)
    stripe = k.mul(per_stripe, ops.lanes)
    # only panels of at most GEMV_ROWS rows: the taller ones would be dead code here
    few = dataclasses.replace(tiles, panels=tuple(p for p in tiles.panels if p[0] <= GEMV_ROWS))
    with k.loop(ops.n, step=stripe, parallel=True, trips=2) as j0:
        _panels(k, ops, few, (0, ops.m), (j0, k.min(k.add(j0, stripe), ops.n)))


def _rows_of_tiles(
    k: Kernel, ops: mk.Operands, tiles: heuristics.MatmulTiles, scratch: Buf | None
) -> None:
    """C = A @ B with threads splitting the rows: register tiles on packed B (with
    scratch: all of B, or block by block over K) for the bulk, panels for the edges."""
    m, n = ops.m, ops.n
    if scratch is None:  # N narrower than a sliver (`scratch_elems`)
        m_tiled = 0 if ops.b_t else k.mul(k.div(m, tiles.mr), tiles.mr)
        if not _known_empty(0, m_tiled):
            edges.edge_rows(k, ops, tiles, ((0, m_tiled), (0, n)), parallel=True)
        _panels(k, ops, tiles, (m_tiled, m), (0, n))
        return
    m_pack = _packed_rows(k, ops, tiles)
    if ops.a_t:  # its tiles would read A's columns, K rows M apart
        _blocked(k, ops, (tiles, scratch), m_pack)
        return
    k.if_else(
        prepacked.whole_k_wins(k, ops, m_pack),
        lambda: prepacked.emit_whole_k(k, ops, scratch),
        lambda: _blocked(k, ops, (tiles, scratch), m_pack),
    )


def _blocked(
    k: Kernel, ops: mk.Operands, plan: tuple[heuristics.MatmulTiles, Buf], m_pack: DimV
) -> None:
    """C = A @ B by register tiles on packed blocks of B, K block by K block, for the
    rows of `m_pack`; the rest (edges, rows too few to pack) by the other paths."""
    tiles, scratch = plan
    m, n, kdim = ops.m, ops.n, ops.kdim
    width = tiles.nr * tiles.lanes
    n_main = k.mul(k.div(n, width), width)
    if not _known_empty(0, m_pack) and not _known_empty(0, n_main):
        # no K blocks when either is 0: a transposed A would be packed for nothing (a
        # classifier's weight gradient, 10 columns, had spent 60% of its time on that)
        area = k.mul(m_pack, n_main)
        k_hi = kdim if isinstance(area, int) else _select_if_positive(k, area, kdim)
        panel = _even_panels(k, n_main, tiles)
        with _blocks(k, (0, k_hi), tiles.packed_kc) as k_range:
            if ops.a_t:
                packed.pack_transposed_a(k, ops, tiles, scratch, (0, m_pack), k_range)
            with _blocks(k, (0, n_main), panel) as cols:
                blocks = (k_range, cols), (n_main, panel)
                packed.emit_packed(k, ops, (tiles, scratch), (0, m_pack), blocks)
    m_tiled = m_pack
    _right_edge(k, ops, (tiles, scratch), (0, m_pack), (n_main, n))
    if not ops.b_t:
        # whole row tiles that packing left (M below its threshold) read B in place
        m_tiled = k.mul(k.div(m, tiles.mr), tiles.mr)
        m_direct = k.sub(m_tiled, m_pack)
        if not _known_empty(0, m_direct):
            k.if_positive(m_direct, lambda: edges.emit_direct(k, ops, tiles, (0, m_direct), (0, n)))
    _panels(k, ops, tiles, (m_tiled, m), (0, n))


def _right_edge(
    k: Kernel, ops: mk.Operands, plan: tuple[heuristics.MatmulTiles, Buf], rows: Range, cols: Range
) -> None:
    """C[rows, cols] for the columns right of the last whole sliver, tiled over all of
    K, threads splitting the row tiles: packed when N holds a sliver (scratch then has
    room for them), else B read in place (a classifier's 10 columns), or for a B stored
    [N, K] by dot products. Panels, blocked over K, had run a parallel loop per K block:
    256 for W5's 64 x 16384 x 10. A transposed B's dot products had read a transposed
    A a column at a time: a third of the time of A^T @ B^T at 1024^3."""
    tiles, scratch = plan
    if _known_empty(*rows) or _known_empty(*cols):
        return

    def edge() -> None:
        edges.emit_edge(k, ops, tiles, scratch, rows, cols)

    def narrow() -> None:
        if ops.b_t:
            _dot_panels(k, ops, rows, cols)
        else:
            edges.edge_rows(k, ops, tiles, (rows, cols), parallel=True)

    # a whole sliver left of the edge, or none; nothing at all for no rows
    k.if_positive(k.sub(rows[1], rows[0]), lambda: k.if_positive(cols[0], edge, narrow))


def _even_panels(k: Kernel, n_main: DimV, tiles: heuristics.MatmulTiles) -> DimV:
    """Columns per panel of packed B: as few panels as `packed.panel_limit` allows, of
    even widths in whole slivers (1008 columns as 528 + 480, not 960 + 48: a narrow last
    panel is a pack and a parallel loop per K block with little work to share)."""
    width = tiles.nr * tiles.lanes
    if isinstance(n_main, int) and n_main <= tiles.packed_nc:
        return tiles.packed_nc
    most = packed.panel_limit(k, tiles)
    panels = k.max(k.div(k.add(n_main, k.sub(most, 1)), most), 1)
    slivers = k.div(k.add(k.div(n_main, width), k.sub(panels, 1)), panels)
    return k.max(k.mul(slivers, width), width)


def _packed_rows(k: Kernel, ops: mk.Operands, tiles: heuristics.MatmulTiles) -> DimV:
    """Rows done on packed B: whole tiles, or none when M is too small to repay packing
    (`heuristics.packs_b`, decided at run time: it depends on the pool's width)."""
    m, n, kdim = ops.m, ops.n, ops.kdim
    m_main = k.mul(k.div(m, tiles.mr), tiles.mr)
    elem_bytes = dtypes.byte_size(ops.c.elem)
    if ops.b_t:
        min_rows: DimV = 2 * tiles.mr
    elif isinstance(n, int) and isinstance(kdim, int) and not _may_alias(n, kdim, elem_bytes):
        min_rows = tiles.packed_min_rows
    else:
        aliased = _aliased_rows(k, n, kdim, elem_bytes)
        min_rows = k.select(aliased, tiles.aliased_min_rows, tiles.packed_min_rows)
    if isinstance(m, int) and isinstance(min_rows, int):
        return m_main if m >= min_rows else 0
    enough = k.b.insert(arith.CmpiOp(k.index(m), k.index(min_rows), "sge")).result
    return k.b.insert(arith.SelectOp(enough, k.index(m_main), k.index(0))).result


def _may_alias(n: int, kdim: int, elem_bytes: int) -> bool:
    """`heuristics.aliased_rows` on one thread: on more it can only be false."""
    return heuristics.aliased_rows(n * elem_bytes, kdim, 1)


def _aliased_rows(k: Kernel, n: DimV, kdim: DimV, elem_bytes: int) -> SSAValue:
    """`heuristics.aliased_rows` of B's rows on this pool, computed at run time."""
    row = k.index(k.mul(n, elem_bytes))
    power = k.b.insert(arith.AndIOp(row, k.index(k.sub(0, row)))).result
    wide = k.b.insert(arith.CmpiOp(power, k.index(heuristics.ALIASED_ROW_BYTES), "sge"))
    span = k.index(k.mul(kdim, power))
    spills = k.b.insert(arith.CmpiOp(span, k.index(heuristics.ALIASING_L2), "sgt"))
    share = k.index(k.div(k.mul(kdim, row), library.parallel_width(k)))
    shared = k.b.insert(arith.CmpiOp(share, k.index(heuristics.ALIASING_L2), "sgt"))
    both = k.b.insert(arith.AndIOp(wide.result, spills.result)).result
    return k.b.insert(arith.AndIOp(both, shared.result)).result


def _select_if_positive(k: Kernel, flag: SSAValue, value: DimV) -> SSAValue:
    """`value` if flag > 0 else 0: a loop up to it runs only when `flag` rows exist."""
    positive = k.b.insert(arith.CmpiOp(flag, k.index(0), "sgt")).result
    return k.b.insert(arith.SelectOp(positive, k.index(value), k.index(0))).result


def scratch_elems(
    k: Kernel, elem: Attribute, mnk: tuple[DimV, DimV, DimV], a_t: bool = False
) -> DimV:
    """Elements of `elem` that `emit` can use as scratch (0: it would not use any)."""
    if not isinstance(elem, Float32Type | Float64Type):
        return 0
    tiles = heuristics.matmul_tiles(dtypes.byte_size(elem), *mnk)
    return packed.scratch_elems(k, tiles, mnk, a_t)


def _panels(
    k: Kernel, ops: mk.Operands, tiles: heuristics.MatmulTiles, rows: Range, cols: Range
) -> None:
    """C[rows, cols] = A[rows, :] @ B[:, cols] by panel updates, blocked over K and N;
    the panels add to C, zeroed here first (only the part they cover: the register tiles
    write the rest without reading it), or not for an update (`Operands.alpha`)."""
    if _known_empty(*rows) or _known_empty(*cols):
        return
    if ops.b_t:
        _dot_panels(k, ops, rows, cols)
        return
    if ops.alpha is None:  # an update adds to what C holds
        mk.zero_fill(k, ops, rows, cols)
    heights = tuple(r for r, _ in tiles.panels)
    unroll = dict(tiles.panels)
    lo, hi = cols
    j_vec = k.add(lo, k.mul(k.div(k.sub(hi, lo), ops.lanes), ops.lanes))
    k_block, n_block = _typical((0, ops.kdim), tiles.kc), _typical(cols, tiles.nc)
    with _blocks(k, (0, ops.kdim), tiles.kc) as (k0, k1):
        if not _known_empty(lo, j_vec):
            with _blocks(k, (lo, j_vec), tiles.nc) as j_range:
                for i0, height in _tiles(k, rows, heights):
                    ku = unroll[height]
                    groups = k.add(k0, k.mul(k.div(k.sub(k1, k0), ku), ku))
                    with k.loop(groups, lb=k0, step=ku, trips=k_block // ku) as kk:
                        mk.panel(k, ops, i0, height, kk, ku, j_range, n_block // ops.lanes)
                    if not _known_empty(groups, k1):
                        with k.loop(k1, lb=groups) as kk:
                            mk.panel(k, ops, i0, height, kk, 1, j_range)
        _masked_edge(k, ops, (rows, heights), (k0, k1), (j_vec, k.sub(hi, j_vec)))


def _masked_edge(
    k: Kernel,
    ops: mk.Operands,
    rows: tuple[Range, tuple[int, ...]],
    k_range: Range,
    cols: tuple[DimV, DimV],
) -> None:
    """The last `count` < lanes columns, from `j`: a masked vector per row, row tiles of
    `heights`; nothing when count is 0."""
    (span, heights), (j, count) = rows, cols

    def edge() -> None:
        for i0, height in _tiles(k, span, heights):
            mk.column_tile(k, ops, (i0, height), k_range, (j, count))

    k.if_positive(count, edge)


def _dot_panels(k: Kernel, ops: mk.Operands, rows: Range, cols: Range) -> None:
    """C[rows, cols] = A[rows, :] @ B[:, cols] for a B stored [N, K], by dot products
    of four columns at a time (a single column for the last few)."""
    with k.loop(rows[1], lb=rows[0], parallel=True) as i:
        lo, hi = cols
        quads = k.add(lo, k.mul(k.div(k.sub(hi, lo), 4), 4))
        with k.loop(quads, lb=lo, step=4, trips=64) as j0:
            mk.dot_panel(k, ops, i, j0, 4)
        if not _known_empty(quads, hi):
            with k.loop(hi, lb=quads) as j:
                mk.dot_panel(k, ops, i, j, 1)


@contextmanager
def _blocks(k: Kernel, span: Range, size: DimV) -> Iterator[Range]:
    """Loop over [lo, hi) in blocks of `size`; no loop when one block is known to do."""
    lo, hi = span
    if isinstance(lo, int) and isinstance(hi, int) and isinstance(size, int) and hi - lo <= size:
        yield lo, hi
        return
    with k.loop(hi, lb=lo, step=size) as start:
        yield start, k.min(k.add(start, size), hi)


def _tiles(k: Kernel, span: Range, sizes: tuple[int, ...]) -> Iterator[tuple[SSAValue, int]]:
    """Cover [lo, hi) with tiles of `sizes`, largest first (`sizes` must end with 1).

    Used as `for start, size in _tiles(...)`: each yield happens within an scf.for over
    the tiles of one size, as many as fit in what the larger ones left.
    """
    start, hi = span
    runs = []
    for size in sizes:
        end = k.add(start, k.mul(k.div(k.sub(hi, start), size), size))
        runs.append((start, end, size))
        start = end
    for lo, end, size in runs:
        if _known_empty(lo, end):
            continue
        with k.loop(end, lb=lo, step=size, parallel=True) as i0:
            yield i0, size


def _typical(span: Range, block: int) -> int:
    """The length of a block of `block` over `span` (for cost estimates)."""
    lo, hi = span
    if isinstance(lo, int) and isinstance(hi, int):
        return max(min(hi - lo, block), 1)
    return block


def _known_empty(lo: DimV, hi: DimV) -> bool:
    return isinstance(lo, int) and isinstance(hi, int) and lo >= hi


for _elem in (Float32Type(), Float64Type()):
    for _packed, _a_t, _b_t, _update in itertools.product((False, True), repeat=4):
        _variant = (_packed, _a_t, _b_t, _update)
        library.register(
            library.MicroKernel(
                _kernel_name(_elem, _variant),
                "ppp" + "p" * (_packed + _update) + "iii",
                functools.partial(_build, _elem, _variant),
                ("c", "a", "b", *["scratch"] * _packed, *["alpha"] * _update, "m", "n", "k"),
            )
        )
