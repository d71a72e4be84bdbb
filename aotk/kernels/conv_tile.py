"""Register-tiled float32/float64 convolution (no groups, no input dilation).

A tile is `rows` consecutive positions along the last spatial axis times `nvec` vectors of
output channels. Its accumulators live in vector registers (scf.for iter_args) over every
tap of the window and a block of input channels; per step, `nvec` contiguous loads of the
kernel row, `rows` broadcasts of x and `rows * nvec` FMAs. Interior positions (whole
window inside the input) take tiles of `rows` positions with no bounds checks. Positions
outside the box on one axis only take such tiles along another (a 'same' 2-D conv's first
and last rows along the rows, its first and last columns down the columns), skipping the
taps outside the input once per tile. The rest (corners; every border position of other
ranks' last axis) take one-position tiles that skip the taps outside the input, their
channels folded into `SPLIT` sets of accumulators.

The work is split in parts, one per (output channel block, input channel block), looped
outermost, so a part's slice of the kernel (window * 64 input channels * one block of
outputs) stays in cache while every position of every image uses it; a part after the
first adds to the output. Within a part, threads split the images and the rows of the
first spatial axis (parts stay in order). The last tile of a line of positions and the
last block of output channels are shifted back to end at the line's (channels') end:
they recompute a few values rather than needing smaller variants of the tile. A later
part would add those twice, so with several parts a line ends in one-position tiles.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import heuristics
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import (
    Geometry,
    Range,
    Values,
    cmp,
    fold_nest,
    if_values,
    image_box,
    in_box,
    inside,
    tap_coords,
)
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const

# Input channels per part. Kernel rows are O elements apart, so for power-of-two O a
# pass's slice of the kernel lands in few cache sets; 64 channels keep it resident.
CHANNEL_BLOCK = 64
# Accumulator sets of a one-position tile (corners, remainders): 2 x 2 vectors of FMAs
# in flight instead of 2. 4 sets measured no faster on W5's second conv (one-position
# tiles are its corners only) and cost 0.1-0.3 s of compile per CNN.
SPLIT = 2

Bufs = tuple[Buf, Buf, Buf]  # out, x, kernel


@dataclass(frozen=True)
class Part:
    """One part of the work: output channels [o0, o0 + nvec * lanes) from input channels
    [c0, c1)."""

    o0: DimV
    nvec: int
    vt: VectorType
    c0: DimV
    c1: DimV
    first: SSAValue | None  # whether this is the first part; None: the only one

    @property
    def lanes(self) -> int:
        return self.vt.get_shape()[0]


def tile_shape(elem_bytes: int, n_out: int) -> tuple[int, int, int]:
    """(lanes, rows, vectors) of a tile: rows * vectors accumulators fit the registers;
    vectors is 0 when the output channels do not fill one vector."""
    lanes = heuristics.VECTOR_BYTES // elem_bytes
    # AVX2: 5 x 2 accumulators, 10 independent FMAs, enough to cover two FMA pipes' 5
    # cycles of latency; on a Zen 1 host W5's second conv took 76 ms with 4 rows, 72 with
    # 5 and 75 with 6 (15 of the 16 registers taken)
    rows, most = (6, 4) if heuristics.vector_registers() >= 32 else (5, 2)
    return lanes, rows, min(most, n_out // lanes)


def emit(k: Kernel, bufs: Bufs, g: Geometry, inner: Sequence[Range] | None, rows: int) -> None:
    """out = conv(x, w): tiles of `rows` positions over the interior box `inner` (whose
    last axis holds at least `rows` positions, or none), checked tiles elsewhere."""
    full: list[Range] = [(0, d) for d in g.out_dims]
    columns = inner is not None and len(full) == 2 and inner[-1] != full[-1]
    for part in _parts(k, bufs):
        if inner is None or list(inner) != full:
            _border(k, bufs, g, part, (inner, columns))
        if inner is not None:
            if list(inner[:-1]) != full[:-1]:
                _band(k, bufs, g, part, (inner, rows))
            if columns:
                _columns(k, bufs, g, part, (inner, rows))
            _box(k, bufs, g, part, (inner, rows))


def _border(
    k: Kernel, bufs: Bufs, g: Geometry, part: Part, where: tuple[Sequence[Range] | None, bool]
) -> None:
    """Checked one-position tiles for the positions whose window leaves the input along
    the last axis (and, when `columns` take the others, along the first too); all
    positions when there is no interior box `inner`."""
    inner, columns = where
    full: list[Range] = [(0, d) for d in g.out_dims]
    with image_box(k, bufs[1].dims[0], full) as (n, ps):
        pos = [n, *ps]

        def checked() -> None:
            _tile(k, bufs, part, pos, _checked(k, bufs, g, part, pos))

        if inner is None:
            checked()
            return
        skip = in_box(k, ps[-1:], inner[-1:])
        if columns:
            skip = k.b.insert(arith.OrIOp(skip, in_box(k, ps[:1], inner[:1]))).result
        k.if_else(skip, lambda: None, checked)


def _band(
    k: Kernel, bufs: Bufs, g: Geometry, part: Part, tiles: tuple[Sequence[Range], int]
) -> None:
    """Tiles of `rows` positions for those outside the box on a leading axis only (the
    first and last rows of a 'same' 2-D conv): the taps that leave the input do so for
    every position of the tile, so they are skipped per tap, not per position."""
    inner, rows = tiles
    last = len(g.out_dims) - 1
    leading: list[Range] = [(0, d) for d in g.out_dims[:-1]]
    with image_box(k, bufs[1].dims[0], leading) as (n, ps):

        def band() -> None:
            line = _Line(lambda p: [n, *ps, p], inner[-1], rows, last)
            _line_tiles(k, bufs, g, part, line, checked=True)

        k.if_else(in_box(k, ps, inner[:-1]), lambda: None, band)


def _columns(
    k: Kernel, bufs: Bufs, g: Geometry, part: Part, tiles: tuple[Sequence[Range], int]
) -> None:
    """2-D convs: tiles of `rows` positions down the first axis for the positions outside
    the box on the last axis only (a 'same' conv's first and last columns)."""
    inner, rows = tiles
    with image_box(k, bufs[1].dims[0], []) as (n, _):
        with k.loop(g.out_dims[-1]) as q:

            def column() -> None:
                line = _Line(lambda p: [n, p, q], inner[0], rows, 0)
                _line_tiles(k, bufs, g, part, line, checked=True)

            k.if_else(in_box(k, [q], inner[-1:]), lambda: None, column)


def _box(
    k: Kernel, bufs: Bufs, g: Geometry, part: Part, tiles: tuple[Sequence[Range], int]
) -> None:
    """Unchecked tiles of `rows` positions over the interior box."""
    inner, rows = tiles
    last = len(g.out_dims) - 1
    # the last axis stays serial within a task: its last tile may overlap the one before
    with image_box(k, bufs[1].dims[0], inner[:-1]) as (n, ps):
        line = _Line(lambda p: [n, *ps, p], inner[-1], rows, last)
        _line_tiles(k, bufs, g, part, line, checked=False)


@dataclass(frozen=True)
class _Line:
    """Positions along spatial `axis` over `span`, in tiles of `rows`; `at(p)` is the
    full position (image first) of the one at p."""

    at: Callable[[SSAValue], list[SSAValue]]
    span: Range
    rows: int
    axis: int


def _line_tiles(k: Kernel, bufs: Bufs, g: Geometry, part: Part, line: _Line, checked: bool) -> None:
    """Tiles of `line.rows` positions along the line. With one part, the last tile is
    shifted back to end at the span's end and recomputes a few positions; a later part
    adds to the output, which would add those twice (and a span shorter than a tile has
    nowhere to shift), so then the positions past the last whole tile take one-position
    tiles instead."""
    lo, hi = line.span
    rows = line.rows

    def tile(p: DimV, count: int) -> None:
        pos = line.at(k.index(p))
        corner = _corner(k, g, bufs[1], pos)
        reduce = _interior(k, bufs, g, part, (corner, count, line.axis), pos if checked else None)
        _tile(k, bufs, part, pos, reduce, (count, line.axis))

    long_enough = isinstance(lo, int) and isinstance(hi, int) and hi - lo >= rows
    if part.first is None and (line.axis == len(g.out_dims) - 1 or long_enough):
        with k.loop(hi, lb=lo, step=rows) as p:
            tile(k.min(p, k.sub(hi, rows)), rows)
        return
    whole = k.add(lo, k.mul(k.div(k.sub(hi, lo), rows), rows))
    with k.loop(whole, lb=lo, step=rows) as p:
        tile(p, rows)
    with k.loop(hi, lb=whole) as p:
        tile(p, 1)


def _parts(k: Kernel, bufs: Bufs) -> Iterator[Part]:
    """Yield each part inside the loops over blocks of output and input channels."""
    out, _, w = bufs
    cin, n_out = w.dims[-2], w.dims[-1]
    assert isinstance(cin, int) and isinstance(n_out, int)
    lanes, _, nvec = tile_shape(dtypes.byte_size(out.elem), n_out)
    vt, width = VectorType(out.elem, [lanes]), nvec * lanes
    with k.loop(n_out, step=width) as o:
        o0 = k.min(o, n_out - width)
        if cin <= CHANNEL_BLOCK:
            yield Part(o0, nvec, vt, 0, cin, None)
            return
        with k.loop(cin, step=CHANNEL_BLOCK) as c:
            c1 = k.min(k.add(c, CHANNEL_BLOCK), cin)
            yield Part(o0, nvec, vt, c, c1, cmp(k, "eq", c, 0))


def _corner(k: Kernel, g: Geometry, x: Buf, pos: Sequence[DimV]) -> DimV:
    """Offset in x of tap 0, channel 0 of output position `pos` (may point into padding)."""
    coords = [k.sub(k.mul(p, g.win.strides[d]), g.pad_before[d]) for d, p in enumerate(pos[1:])]
    return k.linear([pos[0], *coords], k.strides(x.dims)[:-1])


def _tile(
    k: Kernel,
    bufs: Bufs,
    part: Part,
    pos: Sequence[DimV],
    reduce: Callable[[Values], Values],
    rows: tuple[int, int] = (1, 0),
) -> None:
    """Start the accumulators of `rows` = (count, spatial axis) positions from `pos` on
    (zero, or the output after the first part), run `reduce(accs) -> accs`, store them."""
    out = bufs[0]
    count, axis = rows
    strides = k.strides(out.dims)
    base = k.add(k.linear(pos, strides[:-1]), part.o0)
    offsets = [
        k.add(base, k.add(k.mul(r, strides[1 + axis]), v * part.lanes))
        for r in range(count)
        for v in range(part.nvec)
    ]

    def zeros() -> Values:
        return [mk.splat(k, const(k.b, 0.0, out.elem), part.vt)] * len(offsets)

    def loads() -> Values:
        return [mk.vload(k, out, at, part.vt) for at in offsets]

    accs = zeros() if part.first is None else if_values(k, part.first, zeros, loads)
    for at, value in zip(offsets, reduce(accs), strict=True):
        mk.vstore(k, out, at, value)


def _channels(
    k: Kernel, bufs: Bufs, part: Part, rows: tuple[DimV, int, DimV], wo: DimV, accs: Values
) -> list[SSAValue]:
    """Fold over the part's input channels c: accs[r, v] += x[xo + r * step + c] * w[wo + c, v]."""
    _, x, w = bufs
    xo, count, row_step = rows
    n_out = w.dims[-1]

    def step(c: SSAValue, accs: Values) -> list[SSAValue]:
        wrow = k.add(wo, k.mul(c, n_out))
        ws = [mk.vload(k, w, k.add(wrow, v * part.lanes), part.vt) for v in range(part.nvec)]
        new = list(accs)
        for r in range(count):
            xv = k.load_flat(x, k.add(k.add(xo, c), k.mul(r, row_step)))
            xs = mk.splat(k, xv, part.vt)
            for v in range(part.nvec):
                new[r * part.nvec + v] = mk.vfma(k, xs, ws[v], accs[r * part.nvec + v])
        return new

    if count > 1:
        return list(k.fold_loop(part.c1, accs, step, lb=part.c0))
    return _split_channels(k, part, accs, step)


def _split_channels(
    k: Kernel, part: Part, accs: Values, step: Callable[[SSAValue, Values], list[SSAValue]]
) -> list[SSAValue]:
    """The channel fold of a one-position tile in SPLIT sets of accumulators taking turns:
    its nvec chains of FMAs alone would each wait out the FMA latency."""
    span = k.sub(part.c1, part.c0)
    split_end = k.add(part.c0, k.mul(k.div(span, SPLIT), SPLIT))
    zero = mk.splat(k, const(k.b, 0.0, part.vt.element_type), part.vt)
    n = len(accs)

    def split_step(c: SSAValue, sets: Values) -> list[SSAValue]:
        out: list[SSAValue] = []
        for s in range(SPLIT):
            out += step(k.index(k.add(c, s)), sets[s * n : (s + 1) * n])
        return out

    sets = k.fold_loop(split_end, [*accs, *[zero] * (n * (SPLIT - 1))], split_step, part.c0, SPLIT)
    total: list[SSAValue] = list(k.fold_loop(part.c1, sets[:n], step, lb=split_end))
    for s in range(1, SPLIT):
        total = [
            k.b.insert(arith.AddfOp(a, b)).result
            for a, b in zip(total, sets[s * n : (s + 1) * n], strict=True)
        ]
    return total


def _interior(
    k: Kernel,
    bufs: Bufs,
    g: Geometry,
    part: Part,
    rows: tuple[DimV, int, int],
    checked_at: Sequence[SSAValue] | None = None,
) -> Callable[[Values], Values]:
    """The reduction of `rows` = (corner, count, spatial axis): count positions along the
    axis whose x offset at tap 0 is `corner`; with `checked_at` (the first position),
    taps outside the input there are skipped, right for all of them when only the other
    axes can leave the input."""
    _, x, w = bufs
    corner, count, axis = rows
    xst, wst = k.strides(x.dims), k.strides(w.dims)
    row_step = k.mul(g.win.strides[axis], xst[1 + axis])
    steps = [k.mul(d, s) for d, s in zip(g.win.dilation, xst[1:-1], strict=True)]

    def tap(taps: Values, accs: Values) -> Values:
        def add() -> Values:
            xo = k.add(corner, k.linear(taps, steps))
            wo = k.add(k.linear(taps, wst[:-2]), part.o0)
            return _channels(k, bufs, part, (xo, count, row_step), wo, accs)

        if checked_at is None:
            return add()
        coords = tap_coords(k, g, checked_at[1:], taps)
        return if_values(k, inside(k, g, coords), add, accs)

    return lambda accs: fold_nest(k, g.win.window, accs, tap)


def _checked(
    k: Kernel, bufs: Bufs, g: Geometry, part: Part, pos: list[SSAValue]
) -> Callable[[Values], Values]:
    """The reduction of one position over the taps of its window inside the input."""
    _, x, w = bufs
    xst, wst = k.strides(x.dims), k.strides(w.dims)

    def tap(taps: Values, accs: Values) -> Values:
        coords = tap_coords(k, g, pos[1:], taps)

        def add() -> Values:
            xo = k.linear([pos[0], *coords], xst[:-1])
            wo = k.add(k.linear(taps, wst[:-2]), part.o0)
            return _channels(k, bufs, part, (xo, 1, 0), wo, accs)

        return if_values(k, inside(k, g, coords), add, accs)

    return lambda accs: fold_nest(k, g.win.window, accs, tap)
