"""Register-tiled float32/float64 convolution (no groups, no input dilation).

A tile is `rows` consecutive positions along one spatial axis times `nvec` vectors of
output channels. Its accumulators live in vector registers (scf.for iter_args) over the
taps of the window and a block of input channels; per step, `nvec` contiguous loads of
the kernel row, `rows` broadcasts of x and `rows * nvec` FMAs.

The output is cut into lines (`conv_lines`) whose positions all have the same taps inside
the input, so a single tile body serves the interior and the borders with no per-tap
checks: one body of `rows` positions, and one of a single position (short lines,
remainders) whose channels are folded into `SPLIT` sets of accumulators. On a small map
(ResNet50's last stage at 64 x 64 is 2 x 2, all border) lines along it are a position
or two, and every one-position tile loads a kernel vector per FMA; there a line runs
across the images at one position instead, in tiles of `BATCH_ROWS` images.

An epilogue (`aotk.conv_fused`: a bias, an activation) applies to the accumulators
before they are stored when its body lowers on vectors, else to each line's outputs
right after its tiles, while they are in cache; with several parts, in the last.

The work is split in parts, one per (output channel block, input channel block), looped
outermost, so a part's slice of the kernel (window * 64 input channels * one block of
outputs) stays in cache while every position of every image uses it; a part after the
first adds to the output. Within a part, threads split (image, line) pairs. The last
tile of a line and the last block of output channels are shifted back to end at the
line's (channels') end: they recompute a few values rather than needing smaller variants
of the tile. A later part would add those twice, so with several parts a line ends in
one-position tiles.
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
    Epilogue,
    Geometry,
    Range,
    Values,
    fold_nest,
    if_values,
)
from aotk.kernels.conv_lines import Bufs, Line, image_line, line_at, line_kinds
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const

# Input channels per part. Kernel rows are O elements apart, so for power-of-two O a
# pass's slice of the kernel lands in few cache sets; 64 channels keep it resident.
CHANNEL_BLOCK = 64
# Accumulator sets of a one-position tile (corners, remainders): 2 x 2 vectors of FMAs
# in flight instead of 2. 4 sets measured no faster on W5's second conv (one-position
# tiles are its corners only) and cost 0.1-0.3 s of compile per CNN.
SPLIT = 2
# Input channels a tile step unrolls instead of looping over.
UNROLL_CHANNELS = 4
# Images per tile of a line across the batch: 4 x 4 vectors of accumulators, whole
# tiles for batches of 4, 8, 16 ... (tiles of 6 would leave one-position tiles at 8).
BATCH_ROWS = 4


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
    last: SSAValue | None  # whether this is the last part; None: the only one

    @property
    def lanes(self) -> int:
        return self.vt.get_shape()[0]


def tile_shape(elem_bytes: int, n_out: int) -> tuple[int, int, int]:
    """(lanes, rows, vectors) of a tile: rows * vectors accumulators fit the registers;
    vectors is 0 when the output channels do not fill one vector."""
    widest, _ = heuristics.vector_shape()
    # zmm tiles on AVX-512 hosts (two 512-bit FMA pipes: twice the FLOPs of ymm); ymm
    # when the output channels do not fill one zmm
    lanes = (
        widest // elem_bytes
        if n_out * elem_bytes >= widest
        else heuristics.narrow_vector_bytes() // elem_bytes
    )
    # AVX2: 5 x 2 accumulators, 10 independent FMAs, enough to cover two FMA pipes' 5
    # cycles of latency; on a Zen 1 host W5's second conv took 76 ms with 4 rows, 72 with
    # 5 and 75 with 6 (15 of the 16 registers taken)
    rows, most = (6, 4) if heuristics.vector_registers() >= 32 else (5, 2)
    return lanes, rows, min(most, n_out // lanes)


def emit(
    k: Kernel,
    bufs: Bufs,
    g: Geometry,
    tiles: tuple[Sequence[Range], int],
    epilogue: Epilogue | None = None,
) -> None:
    """out = conv(x, w) in tiles = (the interior range of each spatial axis, positions
    per tile), then `epilogue` on each element: in the tiles' registers, or per line."""
    inner, rows = tiles
    if _across_images(k, g, inner, bufs[1].dims[0]):
        for part in parts(k, bufs):
            with k.loop(k.product(g.out_dims), parallel=True) as e:
                line = image_line(k, (bufs, g), k.index(e))
                line_tiles(k, (bufs, g), part, (0, line), (BATCH_ROWS, epilogue))
        return
    kinds = line_kinds(k, g, inner)
    count: DimV = 0
    for kind in kinds:
        count = k.add(count, kind.count)
    for part in parts(k, bufs):
        with k.loop(k.mul(bufs[1].dims[0], count), parallel=True) as i:
            n, e = k.index(k.div(i, count)), k.index(k.rem(i, count))
            line = line_at(k, (bufs, g), kinds, e)
            line_tiles(k, (bufs, g), part, (n, line), (rows, epilogue))


def _across_images(k: Kernel, g: Geometry, inner: Sequence[Range], batch: DimV) -> bool:
    """Whether lines run across the images: the map is known and its interior along the
    last axis holds fewer than BATCH_ROWS positions, and the batch is not known to."""
    span = k.sub(inner[-1][1], inner[-1][0])
    if not isinstance(span, int) or not all(isinstance(d, int) for d in g.out_dims):
        return False
    return span < BATCH_ROWS and not (isinstance(batch, int) and batch < BATCH_ROWS)


def _finish(k: Kernel, out: Buf, part: Part, line: tuple[DimV, Line], epilogue: Epilogue) -> None:
    """The epilogue on the line's outputs of the part's channels (from offset `at` in
    `out`), once the last part has added to them."""
    at, ln = line

    def apply() -> None:
        with k.loop(ln.length) as p, k.loop(part.nvec * part.lanes) as c:
            epilogue.apply(k, out, k.add(k.add(at, k.mul(p, ln.steps[0])), c), k.add(part.o0, c))

    if part.last is None:
        apply()
    else:
        k.if_else(part.last, apply, lambda: None)


def line_tiles(
    k: Kernel,
    where: tuple[Bufs, Geometry],
    part: Part,
    line: tuple[DimV, Line],
    plan: tuple[int, Epilogue | None],
    out_at: DimV | None = None,
) -> None:
    """Tiles of `rows` positions along the line of image n, then one-position tiles for
    what is left; a vector epilogue applies to their accumulators, another to the line
    after them. With one part, a line
    of at least `rows` positions ends in a tile shifted back to end at its end, which
    recomputes a few positions; a later part adds to the output and would add those
    twice. `out_at`: where the line's first output goes, if not at its position in the
    output (a band of scratch rows, `conv_pool`)."""
    (out, x, _), g = where
    n, ln = line
    rows, epilogue = plan
    finish = None
    if epilogue is not None and epilogue.vector is not None:
        finish = _finisher(k, part, epilogue)
    at = out_at
    if at is None:
        at = k.add(k.linear([n, *ln.start], k.strides(out.dims)[:-1]), part.o0)
    corner = _corner(k, g, x, [n, *ln.start])

    def tile(p: DimV, count: int) -> None:
        reduce = _reduction(
            k, where, part, (k.add(corner, k.mul(p, ln.steps[1])), count, ln.steps[1]), ln.taps
        )
        _tile(k, out, part, (k.add(at, k.mul(p, ln.steps[0])), count, ln.steps[0]), reduce, finish)

    whole = k.div(ln.length, rows)
    tiles, done = whole, k.mul(whole, rows)
    if part.first is None:
        shift = (
            k.compare("sge", ln.length, rows)
            if not isinstance(ln.length, int)
            else ln.length >= rows
        )
        tiles = k.select(shift, k.div(k.add(ln.length, rows - 1), rows), whole)
        done = k.select(shift, ln.length, done)
    with k.loop(tiles) as t:
        tile(k.min(k.mul(t, rows), k.sub(ln.length, rows)), rows)
    with k.loop(ln.length, lb=done) as p:
        tile(p, 1)
    if epilogue is not None and epilogue.vector is None:
        _finish(k, out, part, (at, ln), epilogue)


def parts(k: Kernel, bufs: Bufs) -> Iterator[Part]:
    """Yield each part inside the loops over blocks of output and input channels."""
    out, _, w = bufs
    cin, n_out = w.dims[-2], w.dims[-1]
    assert isinstance(cin, int) and isinstance(n_out, int)
    lanes, _, nvec = tile_shape(dtypes.byte_size(out.elem), n_out)
    vt, width = VectorType(out.elem, [lanes]), nvec * lanes
    with k.loop(n_out, step=width) as o:
        o0 = k.min(o, n_out - width)
        if cin <= CHANNEL_BLOCK:
            yield Part(o0, nvec, vt, 0, cin, None, None)
            return
        with k.loop(cin, step=CHANNEL_BLOCK) as c:
            c1 = k.min(k.add(c, CHANNEL_BLOCK), cin)
            yield Part(o0, nvec, vt, c, c1, k.compare("eq", c, 0), k.compare("eq", c1, cin))


def _corner(k: Kernel, g: Geometry, x: Buf, pos: Sequence[DimV]) -> DimV:
    """Offset in x of tap 0, channel 0 of output position `pos` (may point into padding)."""
    coords = [k.sub(k.mul(p, g.win.strides[d]), g.pad_before[d]) for d, p in enumerate(pos[1:])]
    return k.linear([pos[0], *coords], k.strides(x.dims)[:-1])


def _finisher(k: Kernel, part: Part, epilogue: Epilogue) -> Callable[[Values], Values]:
    """The vector epilogue on a tile's accumulators (row-major: position, then vector),
    in the last part only."""

    def finish(accs: Values) -> Values:
        def apply() -> Values:
            assert epilogue.vector is not None
            extras = [
                epilogue.vector_extras(k, part.vt, k.add(part.o0, v * part.lanes))
                for v in range(part.nvec)
            ]
            return [epilogue.vector(k, [acc, *extras[i % part.nvec]]) for i, acc in enumerate(accs)]

        return apply() if part.last is None else if_values(k, part.last, apply, accs)

    return finish


def _tile(
    k: Kernel,
    out: Buf,
    part: Part,
    rows: tuple[DimV, int, DimV],
    reduce: Callable[[Values], Values],
    finish: Callable[[Values], Values] | None = None,
) -> None:
    """Start the accumulators of `rows` = (offset, count, step): count positions `step`
    elements apart in `out` from `offset` on (zero, or the output after the first part),
    run `reduce(accs) -> accs`, `finish` them, store them."""
    at, count, step = rows
    offsets = [
        k.add(at, k.add(k.mul(r, step), v * part.lanes))
        for r in range(count)
        for v in range(part.nvec)
    ]

    def zeros() -> Values:
        return [mk.splat(k, const(k.b, 0.0, out.elem), part.vt)] * len(offsets)

    def loads() -> Values:
        return [mk.vload(k, out, o, part.vt) for o in offsets]

    accs = zeros() if part.first is None else if_values(k, part.first, zeros, loads)
    values = reduce(accs)
    for o, value in zip(offsets, values if finish is None else finish(values), strict=True):
        mk.vstore(k, out, o, value)


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

    span = k.sub(part.c1, part.c0)
    if isinstance(span, int) and span <= UNROLL_CHANNELS:
        # an RGB input's 3 channels: a loop of 3 trips costs as much as its FMAs
        for c in range(span):
            accs = step(k.index(k.add(part.c0, c)), accs)
        return list(accs)
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


def _reduction(
    k: Kernel,
    where: tuple[Bufs, Geometry],
    part: Part,
    rows: tuple[DimV, int, DimV],
    taps: Sequence[Range],
) -> Callable[[Values], Values]:
    """The reduction over `taps` (a range per axis) of `rows` = (corner, count, step):
    count positions whose x offsets at tap 0 are `corner`, `corner + step`, ..."""
    bufs, g = where
    _, x, w = bufs
    corner, count, row_step = rows
    xst, wst = k.strides(x.dims), k.strides(w.dims)
    steps = [k.mul(d, s) for d, s in zip(g.win.dilation, xst[1:-1], strict=True)]

    def tap(ts: Values, accs: Values) -> Values:
        xo = k.add(corner, k.linear(ts, steps))
        wo = k.add(k.linear(ts, wst[:-2]), part.o0)
        return _channels(k, bufs, part, (xo, count, row_step), wo, accs)

    lows, highs = [lo for lo, _ in taps], [hi for _, hi in taps]
    return lambda accs: fold_nest(k, highs, accs, tap, lows=lows)
