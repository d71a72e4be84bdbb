"""Matmul on a B packed once for many products: a recurrent step's weight.

`pack_rhs_<dtype>[_tb](packed, b, n, k)` copies all of B (stored [K, N], or [N, K] with
`_tb`) into slivers `nr` vectors wide, each holding all K rows contiguously: sliver s
starts at s * K * width, its row kk at + kk * width, and the last sliver is zero-padded.
`matmul_<dtype>_prepacked(c, a, packed, m, n, k)` then computes C = A @ B from it with
the packed path's register tiles, accumulators kept over all of K (C is written once,
never read) and nothing copied per product. A scan packs its loop-invariant right
operands this way once before its steps (`aotk.dialect.scan_prepack`): unpacked, a
32-row step read a 128 x 512 weight in place, its rows 2 KiB apart and so in a few
cache sets, or repacked it every step.
The packed matmul micro-kernels take the same path on two threads or more
(`emit_whole_k`, B packed into their scratch each call), for M up to twice N and A
not transposed.
"""

from __future__ import annotations

import dataclasses
import functools

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import heuristics, library
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels import matmul_packed as packed
from aotk.kernels import matmul_prefetch as pf
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.prefetch import LINE_BYTES
from aotk.kernels.scalar import const

Range = tuple[DimV, DimV]
WHOLE_K_ROWS_PER_COLUMN = 2  # `whole_k_wins`: 2048 x 256 x 256 ran slower whole
SLIVERS_PER_THREAD = 4  # from as many a thread, `emit_whole_k` packs a sliver at a time


def _tiles(elem: Attribute) -> heuristics.MatmulTiles:
    return heuristics.matmul_tiles(dtypes.byte_size(elem), 1, 1, 1)


def sliver_width(elem: Attribute) -> int:
    """Columns of B in one sliver."""
    tiles = _tiles(elem)
    return tiles.nr * tiles.lanes


def row_tile(elem: Attribute) -> int:
    """Rows of C one register tile covers."""
    return _tiles(elem).mr


def sliver_lanes(elem: Attribute) -> int:
    """Lanes of the vectors a sliver is read in (its width is a multiple)."""
    return _tiles(elem).lanes


def packed_columns(k: Kernel, elem: Attribute, n: DimV) -> DimV:
    """N rounded up to whole slivers (a packed B of one row)."""
    return packed_elems(k, elem, n, 1)


def sliver_at(k: Kernel, j: DimV, kk: DimV, kdim: DimV, elem: Attribute) -> DimV:
    """Where B[kk, j] is in the packed slivers."""
    width = sliver_width(elem)
    return k.add(_sliver_column(k, width, j, kdim), k.mul(kk, width))


def packed_elems(k: Kernel, elem: Attribute, n: DimV, kdim: DimV) -> DimV:
    """Elements of a packed B: K rows of N rounded up to whole slivers."""
    return packed.all_of_b_elems(k, _tiles(elem), n, kdim)


def pack_name(elem: Attribute, b_t: bool) -> str:
    return f"pack_rhs_{dtypes.numpy_dtype(elem)}" + ("_tb" if b_t else "")


def matmul_name(elem: Attribute, addend: bool = False) -> str:
    return f"matmul_{dtypes.numpy_dtype(elem)}_prepacked" + ("_add" if addend else "")


def _build_pack(elem: Attribute, b_t: bool, k: Kernel, args: list[SSAValue]) -> None:
    """The body of `pack_rhs`: (packed, b, n, k)."""
    n, kdim = args[2:]
    out = library.param_buf(k, args[0], (packed_elems(k, elem, n, kdim),), elem)
    b = library.param_buf(k, args[1], (n, kdim) if b_t else (kdim, n), elem)
    pack(k, (out, b), (n, kdim), b_t)


def pack(k: Kernel, bufs: tuple[Buf, Buf], nk: tuple[DimV, DimV], b_t: bool) -> None:
    """bufs = (packed, b): all of B, stored [K, N] (or [N, K] with `b_t`), into slivers."""
    tiles = _tiles(bufs[0].elem)
    if b_t:
        _pack_columns(k, tiles, bufs, *nk)
    else:
        _pack_rows(k, tiles, bufs, *nk)


def _pack_rows(
    k: Kernel, tiles: heuristics.MatmulTiles, bufs: tuple[Buf, Buf], n: DimV, kdim: DimV
) -> None:
    """From B stored [K, N]: threads split its rows, each scattered across the slivers;
    whole vectors, then one masked vector padded with zeros."""
    out, b = bufs
    width, lanes = tiles.nr * tiles.lanes, tiles.lanes
    vt = VectorType(out.elem, [lanes])
    zero = mk.splat(k, const(k.b, 0.0, out.elem), vt)
    vectors_end = k.mul(k.div(n, lanes), lanes)
    padded = k.mul(k.div(k.add(n, width - 1), width), width)
    with k.loop(kdim, parallel=True) as kk:
        src = k.mul(kk, n)

        def dst(j: DimV) -> DimV:
            lane = k.rem(j, width)
            return k.add(k.mul(k.sub(j, lane), kdim), k.add(k.mul(kk, width), lane))

        with k.loop(vectors_end, step=lanes, trips=64) as j:
            mk.vstore(k, out, dst(j), mk.vload(k, b, k.add(src, j), vt))
        with k.loop(padded, lb=vectors_end, step=lanes, trips=2) as j:
            mask = mk.lane_mask(k, k.max(k.min(k.sub(n, j), lanes), 0), vt)
            mk.vstore(k, out, dst(j), mk.vload_masked(k, b, k.add(src, j), mask, zero))


def _pack_columns(
    k: Kernel, tiles: heuristics.MatmulTiles, bufs: tuple[Buf, Buf], n: DimV, kdim: DimV
) -> None:
    """From B stored [N, K]: all its columns, threads splitting the squares."""
    width = tiles.nr * tiles.lanes
    padded = k.mul(k.div(k.add(n, width - 1), width), width)
    _pack_column_range(k, tiles, bufs, ((0, padded), (n, kdim)), parallel=True)


def _pack_column_range(
    k: Kernel,
    tiles: heuristics.MatmulTiles,
    bufs: tuple[Buf, Buf],
    span: tuple[Range, tuple[DimV, DimV]],
    parallel: bool,
) -> None:
    """Columns [lo, hi) of a B stored [N, K] (hi a multiple of the sliver width, past
    N: zero padding), span = ((lo, hi), (N, K)): `lanes` of its rows (columns of a
    sliver) at a time, transposed in registers (`matmul_microkernel.transpose_into`),
    threads splitting them when `parallel`. The rows left over and the padding columns
    (zeros) go one element at a time."""
    out, b = bufs
    (lo, hi), (n, kdim) = span
    lanes, width = tiles.lanes, tiles.nr * tiles.lanes
    squares_end = k.add(lo, k.mul(k.div(k.max(k.sub(k.min(hi, n), lo), 0), lanes), lanes))
    with k.loop(squares_end, lb=lo, step=lanes, parallel=parallel) as j:
        column = _sliver_column(k, width, j, kdim)
        srcs = [k.mul(k.add(j, r), kdim) for r in range(lanes)]
        mk.transpose_into(k, (out, b), (srcs, column), (0, kdim), width, 64)
    zero = const(k.b, 0.0, out.elem)
    with k.loop(hi, lb=squares_end, trips=width // 2) as j:
        column = _sliver_column(k, width, j, kdim)
        inside = k.b.insert(arith.CmpiOp(k.index(j), k.index(n), "slt")).result
        src = k.mul(j, kdim)
        with k.loop(kdim, trips=256) as kk:
            # a padding column reads nothing: its source offset is clamped to B's start
            value = k.load_flat(b, k.select(inside, k.add(src, kk), 0))
            at = k.add(column, k.mul(kk, width))
            k.store_flat(out, at, k.b.insert(arith.SelectOp(inside, value, zero)).result)


def _sliver_column(k: Kernel, width: int, j: DimV, kdim: DimV) -> DimV:
    """Where column j of B starts in the packed slivers (its row 0)."""
    lane = k.rem(j, width)
    return k.add(k.mul(k.sub(j, lane), kdim), lane)


def _build_matmul(elem: Attribute, addend: bool, k: Kernel, args: list[SSAValue]) -> None:
    """The body of `matmul_prepacked`: (c, a, packed, m, n, k); of `matmul_prepacked_add`,
    C = X + A @ B: (c, a, packed, x, m, n, k), x shaped as C (it may be C itself)."""
    m, n, kdim = args[-3:]
    tiles = _tiles(elem)
    c, a = (
        library.param_buf(k, args[0], (m, n), elem),
        library.param_buf(k, args[1], (m, kdim), elem),
    )
    b = library.param_buf(k, args[2], (packed_elems(k, elem, n, kdim),), elem)
    x = library.param_buf(k, args[3], (m, n), elem) if addend else None
    ops = mk.Operands(c, a, b, m, n, kdim, VectorType(elem, [tiles.lanes]))
    with k.share_only_when(ops.worth_sharing(k)):
        emit(k, ops, x)


def emit(k: Kernel, ops: mk.Operands, addend: Buf | None = None) -> None:
    """C = A @ B (or C = addend + A @ B), `ops.b` being all of B packed (`pack`); with
    `ops.alpha`, C += alpha * (A @ B).

    Threads share out (sliver, row tile) pairs, sliver-major, so the pairs a thread runs
    in a row read one sliver. A whole tile is one register tile over all of K; the last
    sliver and the last rows (fewer than a tile) are column tiles, the last vector masked.
    """
    tiles = _tiles(ops.c.elem)
    slivers, row_tiles = _counts(k, ops, tiles)
    with k.loop(k.mul(slivers, row_tiles), parallel=True) as item:
        s = k.div(item, row_tiles)
        _tile(k, ops, tiles, (s, k.sub(item, k.mul(s, row_tiles))), (addend, None))


def _counts(k: Kernel, ops: mk.Operands, tiles: heuristics.MatmulTiles) -> tuple[DimV, DimV]:
    """(slivers, row tiles) of C."""
    width = tiles.nr * tiles.lanes
    return k.div(k.add(ops.n, width - 1), width), k.div(k.add(ops.m, tiles.mr - 1), tiles.mr)


def _tile(
    k: Kernel,
    ops: mk.Operands,
    tiles: heuristics.MatmulTiles,
    at: tuple[DimV, DimV],
    extras: tuple[Buf | None, tuple[Buf, pf.Walk] | None],
) -> None:
    """Row tile t of sliver s, at = (s, t), over all of K; extras = (addend, a prefetch
    walk and the buffer it reads)."""
    (s, t), (addend, walk) = at, extras
    width, m, n = tiles.nr * tiles.lanes, ops.m, ops.n
    i0, j0 = k.mul(t, tiles.mr), k.mul(s, width)
    rows, cols = (i0, k.min(k.add(i0, tiles.mr), m)), (j0, k.min(k.add(j0, width), n))
    base = k.mul(j0, ops.kdim)  # where the sliver starts
    whole = k.b.insert(arith.AndIOp(_spans(k, rows, tiles.mr), _spans(k, cols, width))).result

    def b_row(kk: SSAValue) -> DimV:
        return k.add(base, k.mul(kk, width))

    def tile() -> None:
        packed.whole_k_tile(k, ops, tiles, (i0, j0), b_row, addend, walk)

    k.if_else(whole, tile, lambda: _narrow(k, ops, tiles, (rows, cols), (base, addend)))


def whole_k_wins(k: Kernel, ops: mk.Operands, m_pack: DimV) -> SSAValue:
    """Whether to pack all of B and keep each tile over all of K (`emit_whole_k`): on two
    threads or more, for rows that repay packing and M at most WHOLE_K_ROWS_PER_COLUMN x
    N (the tiles reread A once per sliver). Blocked over K, such a product ran a pack
    and a parallel loop per K block, and C was read and written once per block."""
    tiles = _tiles(ops.c.elem)
    limit = k.mul(ops.n, WHOLE_K_ROWS_PER_COLUMN)
    conditions = [
        (library.parallel_width(k), 2),  # threads
        (m_pack, 1),  # rows to pack for
        (ops.n, tiles.nr * tiles.lanes),  # a whole sliver (scratch has room for B then)
        (limit, ops.m),  # few rows for the columns
    ]
    flags = [k.b.insert(arith.CmpiOp(k.index(a), k.index(b), "sge")).result for a, b in conditions]
    return functools.reduce(lambda x, y: k.b.insert(arith.AndIOp(x, y)).result, flags)


def emit_whole_k(k: Kernel, ops: mk.Operands, scratch: Buf) -> None:
    """C = A @ B on all of B packed into scratch, each tile's accumulators over all of K.

    A B stored [K, N] is packed in a parallel loop of its own, then `emit` runs the
    tiles. A B stored [N, K] is packed sliver by sliver in the loop that runs the
    tiles: each thread packs the slivers it reads (their stored rows are contiguous),
    and the tiles of one sliver prefetch the next one's rows. Packed in a pass of its
    own, dz W^T of a 128-row batch (128 x 1024 x 1024) ran 7% slower on two threads;
    for a B stored [K, N] the same gained nothing (a sliver is then 192-byte pieces of
    rows 4 KiB apart)."""
    packed_ops = dataclasses.replace(ops, b=scratch, b_t=False)
    if not ops.b_t:
        pack(k, (scratch, ops.b), (ops.n, ops.kdim), ops.b_t)
        emit(k, packed_ops)
        return
    _sliver_by_sliver(k, (ops, packed_ops))


def _sliver_by_sliver(k: Kernel, plan: tuple[mk.Operands, mk.Operands]) -> None:
    """`emit_whole_k` for a B stored [N, K], plan = (the operands, the same on the
    packed B). With SLIVERS_PER_THREAD slivers a thread, threads share out slivers,
    each packed (then its tiles run) by the thread that reads it. With fewer (an LSTM
    step's 3 slivers went 2 and 1), B is packed in a pass of its own first and threads
    share out (sliver, row tile) pairs. One loop runs both ways, its tile code emitted
    once: a second copy made the micro-kernel's build 0.3-0.4 s longer."""
    ops, packed_ops = plan
    tiles = _tiles(ops.c.elem)
    width = tiles.nr * tiles.lanes
    per_line = LINE_BYTES // dtypes.byte_size(ops.c.elem)
    slivers, row_tiles = _counts(k, ops, tiles)
    enough = k.mul(library.parallel_width(k), SLIVERS_PER_THREAD)
    many, few = k.compare("sge", slivers, enough), k.compare("slt", slivers, enough)
    bufs = (packed_ops.b, ops.b)
    k.if_else(few, lambda: pack(k, bufs, (ops.n, ops.kdim), True), None)
    items = k.select(many, slivers, k.mul(slivers, row_tiles))
    with k.loop(items, parallel=True) as item:
        s = k.select(many, item, k.div(item, row_tiles))
        first = k.select(many, 0, k.sub(item, k.mul(s, row_tiles)))
        j0 = k.mul(s, width)
        span = ((j0, k.add(j0, width)), (ops.n, ops.kdim))
        k.if_else(many, lambda: _pack_column_range(k, tiles, bufs, span, False), None)
        start, lines = _next_sliver(k, ops, (width, per_line), s)
        # packed already, B is read no more: every tile names one line, a cache hit
        ahead = (start, k.select(many, lines, 1))
        with k.loop(k.select(many, row_tiles, 1)) as step:
            t = k.add(first, step)
            walk = pf.run_walk(k, ahead, t, ops.kdim, per_line)
            _tile(k, packed_ops, tiles, (s, t), (None, (ops.b, walk)))


def _next_sliver(k: Kernel, ops: mk.Operands, sizes: tuple[int, int], s: DimV) -> tuple[DimV, DimV]:
    """(first element, lines) of the stored rows of the sliver after s in a B stored
    [N, K] (of sliver s itself, for the last): they are contiguous. sizes = (columns a
    sliver, elements a cache line)."""
    (width, per_line), n = sizes, ops.n
    j = k.mul(k.add(s, 1), width)
    more = k.b.insert(arith.CmpiOp(k.index(j), k.index(n), "slt")).result
    j = k.select(more, j, k.mul(s, width))
    elements = k.mul(k.sub(k.min(k.add(j, width), n), j), ops.kdim)
    return k.mul(j, ops.kdim), k.div(k.add(elements, per_line - 1), per_line)


def _spans(k: Kernel, span: Range, length: int) -> SSAValue:
    return k.b.insert(arith.CmpiOp(k.index(k.sub(span[1], span[0])), k.index(length), "eq")).result


def _narrow(
    k: Kernel,
    ops: mk.Operands,
    tiles: heuristics.MatmulTiles,
    block: tuple[Range, Range],
    sources: tuple[DimV, Buf | None],
) -> None:
    """C[rows, cols] of a tile cut short by the last sliver or the last rows: tiles of
    mr rows, else of 4, 2 and 1, each `matmul_packed.cut_tile` (the packed sliver's
    padding is zeros)."""
    (lo, hi), cols = block

    def rows_of(height: int, i: DimV) -> None:
        packed.cut_tile(k, ops, dataclasses.replace(tiles, mr=height), (i, cols), sources)

    def short_tiles() -> None:
        start = lo
        for height in (h for h in (4, 2, 1) if h < tiles.mr):
            end = k.add(start, k.mul(k.div(k.sub(hi, start), height), height))
            with k.loop(end, lb=start, step=height, trips=1) as i:
                rows_of(height, i)
            start = end

    k.if_else(_spans(k, (lo, hi), tiles.mr), lambda: rows_of(tiles.mr, lo), short_tiles)


for _elem in (Float32Type(), Float64Type()):
    for _b_t in (False, True):
        library.register(
            library.MicroKernel(
                pack_name(_elem, _b_t),
                "ppii",
                functools.partial(_build_pack, _elem, _b_t),
                ("packed", "b", "n", "k"),
            )
        )
    for _addend in (False, True):
        library.register(
            library.MicroKernel(
                matmul_name(_elem, _addend),
                "ppp" + "p" * _addend + "iii",
                functools.partial(_build_matmul, _elem, _addend),
                ("c", "a", "packed", *(["x"] * _addend), "m", "n", "k"),
            )
        )
