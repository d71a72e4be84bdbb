"""Register-tiled float32/float64 convolution (no groups, no input dilation).

A tile is `rows` consecutive positions along the last spatial axis times `nvec` vectors of
output channels. Its accumulators live in vector registers (scf.for iter_args) over every
tap of the window and a block of input channels; per step, `nvec` contiguous loads of the
kernel row, `rows` broadcasts of x and `rows * nvec` FMAs. Interior positions (whole
window inside the input) take tiles of `rows` positions with no bounds checks; those
outside on a leading axis only (a 'same' conv's first and last rows) take such tiles too,
skipping the taps outside the input for the whole tile; the others (first and last
columns) take one-position tiles that skip the taps outside the input.

The work is split in parts, one per (output channel block, input channel block), looped
outermost, so a part's slice of the kernel (window * 64 input channels * one block of
outputs) stays in cache while every position of every image uses it; a part after the
first adds to the output. Within a part, threads split the images and the rows of the
first spatial axis (parts stay in order). The last tile of positions and the last block of output
channels are shifted back to end at the box's (channels') end: they recompute a few
values rather than needing smaller variants of the tile.
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
# Accumulator sets of a one-position tile (border positions): 4 x 2 vectors of FMAs in
# flight cover the FMA latency that 2 alone wait on.
SPLIT = 4

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
    for part in _parts(k, bufs):
        if inner is None or list(inner) != full:
            _border(k, bufs, g, part, inner)
        if inner is not None:
            if list(inner[:-1]) != full[:-1]:
                _band(k, bufs, g, part, (inner, rows))
            _box(k, bufs, g, part, (inner, rows))


def _border(k: Kernel, bufs: Bufs, g: Geometry, part: Part, inner: Sequence[Range] | None) -> None:
    """Checked one-position tiles for the positions whose window leaves the input along
    the last axis (all positions outside `inner` when there is no interior box)."""
    full: list[Range] = [(0, d) for d in g.out_dims]
    with image_box(k, bufs[1].dims[0], full) as (n, ps):
        pos = [n, *ps]

        def checked() -> None:
            _tile(k, bufs, part, pos, _checked(k, bufs, g, part, pos))

        if inner is None:
            checked()
        else:
            k.if_else(in_box(k, ps[-1:], inner[-1:]), lambda: None, checked)


def _band(
    k: Kernel, bufs: Bufs, g: Geometry, part: Part, tiles: tuple[Sequence[Range], int]
) -> None:
    """Tiles of `rows` positions for those outside the box on a leading axis only (the
    first and last rows of a 'same' 2-D conv): the taps that leave the input do so for
    every position of the tile, so they are skipped per tap, not per position."""
    inner, rows = tiles
    leading: list[Range] = [(0, d) for d in g.out_dims[:-1]]
    with image_box(k, bufs[1].dims[0], leading) as (n, ps):
        k.if_else(
            in_box(k, ps, inner[:-1]),
            lambda: None,
            lambda: _row_tiles(k, bufs, g, part, ([n, *ps], inner[-1], rows), checked=True),
        )


def _box(
    k: Kernel, bufs: Bufs, g: Geometry, part: Part, tiles: tuple[Sequence[Range], int]
) -> None:
    """Unchecked tiles of `rows` positions over the interior box."""
    inner, rows = tiles
    # the last axis stays serial within a task: its last tile may overlap the one before
    with image_box(k, bufs[1].dims[0], inner[:-1]) as (n, ps):
        _row_tiles(k, bufs, g, part, ([n, *ps], inner[-1], rows), checked=False)


def _row_tiles(
    k: Kernel,
    bufs: Bufs,
    g: Geometry,
    part: Part,
    line: tuple[list[SSAValue], Range, int],
    checked: bool,
) -> None:
    """Tiles of `rows` positions along the last axis over [lo, hi) at the leading
    position `lead`. With one part, the last tile is shifted back to end at hi and
    recomputes a few positions; a later part adds to the output, which would add those
    twice, so with several parts the positions past the last whole tile take
    one-position tiles instead."""
    lead, (lo, hi), rows = line

    def tile(p: DimV, count: int) -> None:
        pos = [*lead, k.index(p)]
        corner = _corner(k, g, bufs[1], pos)
        at = pos if checked else None
        _tile(k, bufs, part, pos, _interior(k, bufs, g, part, (corner, count), at), count)

    if part.first is None:
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
    rows: int = 1,
) -> None:
    """Start the accumulators of `rows` positions (zero, or the output after the first
    part), run `reduce(accs) -> accs` and store them."""
    out = bufs[0]
    n_out = out.dims[-1]
    base = k.add(k.linear(pos, k.strides(out.dims)[:-1]), part.o0)
    offsets = [
        k.add(base, k.add(k.mul(r, n_out), v * part.lanes))
        for r in range(rows)
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
    rows: tuple[DimV, int],
    checked_at: Sequence[SSAValue] | None = None,
) -> Callable[[Values], Values]:
    """The reduction of `rows` positions whose x offset at tap 0 is `corner`; with
    `checked_at` (the first position), taps outside the input there are skipped, which
    is right for all of them when only leading axes can leave the input."""
    _, x, w = bufs
    corner, count = rows
    xst, wst = k.strides(x.dims), k.strides(w.dims)
    row_step = k.mul(g.win.strides[-1], xst[-2])
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
