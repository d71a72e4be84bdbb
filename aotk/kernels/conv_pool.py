"""A 2-D convolution pooled as its tiles finish (`aotk.conv_pool`): an epilogue on the
conv's values, then max or average over windows that neither overlap nor pad.

Unfused, a CNN's conv writes its whole output (16 MiB for W5's second conv) for the pool
to read back. Here threads split (image, pooled row) items, in `SLOTS` runs that each own
a band of scratch: the conv rows under one row of windows, for one block of output
channels (a `conv_tile` part), a few tens of KiB that stay in cache from item to item.
A band row is cut into lines as `conv_lines` cuts an image row: the interior columns
(every tap inside the input), then each border column as a line of one. `conv_tile`'s
register tiles compute them and apply the epilogue (`conv_tile.line_tiles`, as for
`aotk.conv_fused`); the pool then reads the band and stores one output row.
Conv rows and columns past the last whole window are never computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import conv_tile
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import (
    Epilogue,
    Geometry,
    Range,
    Values,
    fold_nest,
    interior,
)
from aotk.kernels.conv_lines import Line, tap_ranges
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const

# Runs of items, each with a band of its own: enough for threads to even out a busy
# machine (the pool hands unstarted runs to idle threads), few enough to keep the bands
# in cache (W5: 32 x 16 KiB).
SLOTS = 32


@dataclass(frozen=True)
class Pooling:
    """Windows `window` (rows, columns) wide, strides equal; `mode` "max" or "avg"."""

    window: tuple[int, int]
    mode: str


@dataclass(frozen=True)
class _Band:
    """A slot's band: scratch from `base`, `row` elements per conv row (the pooled
    columns' conv columns times the part's channels)."""

    buf: Buf
    base: DimV
    row: DimV
    width: int  # channels of a part: elements per band position


def band_elems(
    k: Kernel, out: tuple[Sequence[DimV], Attribute], n_out: int, window: tuple[int, int]
) -> DimV:
    """Scratch elements for every slot's band, for a pooled output of dims and element
    type `out`, from a conv of `n_out` output channels, pooled `window` = rows x columns."""
    dims, elem = out
    lanes, _, nvec = conv_tile.tile_shape(dtypes.byte_size(elem), n_out)  # type: ignore[arg-type]
    return k.mul(k.mul(dims[2], window[1]), SLOTS * window[0] * nvec * lanes)


@dataclass(frozen=True)
class _Plan:
    """What every item of the conv needs: its buffers, geometry, pooling, epilogue, tile
    length, and the conv columns pooled with their interior [lo, hi)."""

    bufs: tuple[Buf, Buf, Buf]
    g: Geometry
    pooling: Pooling
    epilogue: Epilogue | None
    rows: int
    used: DimV
    inner: Range


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    g: Geometry,
    plan: tuple[Pooling, Buf],
    epilogue: Epilogue | None = None,
) -> None:
    """out = pool(epilogue(conv(x, w))) for bufs = (out, x, w) and plan = (the pooling,
    scratch of `band_elems`)."""
    out, x, w = bufs
    pooling, scratch = plan
    lanes, rows, nvec = conv_tile.tile_shape(dtypes.byte_size(out.elem), w.dims[-1])  # type: ignore[arg-type]
    used = k.mul(out.dims[2], pooling.window[1])  # conv columns under whole windows
    lo, hi = (k.min(end, used) for end in interior(k, g, 1))
    if isinstance(length := k.sub(hi, lo), int) and length > 0:
        rows = min(rows, length)  # narrow inputs: tiles as long as the interior
    items = k.mul(out.dims[0], out.dims[1])
    slots = k.min(items, SLOTS)
    row = k.mul(used, nvec * lanes)
    item_plan = _Plan(bufs, g, pooling, epilogue, rows, used, (lo, hi))
    with k.loop(slots, parallel=True) as s:
        band = _Band(scratch, k.mul(s, k.mul(row, pooling.window[0])), row, nvec * lanes)
        first, last = (k.div(k.mul(k.add(s, i), items), slots) for i in (0, 1))
        with k.loop(last, lb=first) as item:
            n, prow = k.index(k.div(item, out.dims[1])), k.rem(item, out.dims[1])
            for part in conv_tile.parts(k, (scratch, x, w)):
                _pooled_row(k, item_plan, band, part, (n, prow))


def _pooled_row(
    k: Kernel, plan: _Plan, band: _Band, part: conv_tile.Part, at: tuple[SSAValue, DimV]
) -> None:
    """Output row `prow` of image n for the part's channels: the band's conv rows, then
    their pool once the last part has added to them."""
    (out, x, w), g = plan.bufs, plan.g
    n, prow = at
    lo, hi = plan.inner
    band_rows = plan.pooling.window[0]
    with k.loop(band_rows) as dy:
        y = k.add(k.mul(prow, band_rows), dy)
        with k.loop(k.add(k.add(lo, k.sub(plan.used, hi)), 1)) as e:
            line = _band_line(k, (g, x), (y, e), plan.inner, band.width)
            offset = k.add(k.mul(dy, band.row), k.mul(line.start[1], band.width))
            conv_tile.line_tiles(
                k,
                ((band.buf, x, w), g),
                part,
                (n, line),
                (plan.rows, plan.epilogue),
                k.add(band.base, offset),
            )

    def pool() -> None:
        _pool_row(k, (out, band), part, at, plan.pooling)

    if part.last is None:
        pool()
    else:
        k.if_else(part.last, pool, lambda: None)


def _band_line(
    k: Kernel, where: tuple[Geometry, Buf], line: tuple[DimV, SSAValue], inner: Range, width: int
) -> Line:
    """Line e of conv row y (line = (y, e)): 0 is the interior columns [lo, hi), e > 0
    the (e-1)-th border column (left of lo, then from hi on) as a line of one; its
    positions `width` elements apart in the band."""
    g, x = where
    y, e = line
    lo, hi = inner
    border = k.sub(e, 1)
    column = k.select(k.compare("slt", border, lo), border, k.add(hi, k.sub(border, lo)))
    is_interior = k.compare("eq", e, 0)
    start = [y, k.select(is_interior, lo, column)]
    length = k.select(is_interior, k.sub(hi, lo), 1)
    steps = (width, k.mul(g.win.strides[1], k.strides(x.dims)[2]))
    return Line(start, length, steps, tap_ranges(k, g, start))


def _pool_row(
    k: Kernel,
    where: tuple[Buf, _Band],
    part: conv_tile.Part,
    at: tuple[SSAValue, DimV],
    pooling: Pooling,
) -> None:
    """out[n, prow, :, part's channels] = the pool of the band's windows."""
    out, band = where
    n, prow = at
    vt, lanes = part.vt, part.lanes
    rows, cols = pooling.window
    ost = k.strides(out.dims)
    out_row = k.add(k.linear([n, prow], ost[:2]), part.o0)
    is_max = pooling.mode == "max"
    start = const(k.b, float("-inf") if is_max else 0.0, vt.element_type)
    combine = arith.MaximumfOp if is_max else arith.AddfOp
    with k.loop(out.dims[2]) as px:
        corner = k.add(band.base, k.mul(k.mul(px, cols), band.width))

        def tap(ts: Values, accs: Values) -> list[SSAValue]:
            at = k.add(corner, k.add(k.mul(ts[0], band.row), k.mul(ts[1], band.width)))
            values = [mk.vload(k, band.buf, k.add(at, v * lanes), vt) for v in range(part.nvec)]
            return [k.b.insert(combine(a, b)).result for a, b in zip(accs, values, strict=True)]

        accs = fold_nest(k, [rows, cols], [mk.splat(k, start, vt)] * part.nvec, tap)
        if not is_max:
            count = mk.splat(k, const(k.b, float(rows * cols), vt.element_type), vt)
            accs = [k.b.insert(arith.DivfOp(a, count)).result for a in accs]
        dst = k.add(out_row, k.mul(px, ost[2]))
        for v, acc in enumerate(accs):
            mk.vstore(k, out, k.add(dst, v * lanes), acc)
