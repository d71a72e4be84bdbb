"""The lines a register-tiled convolution (`conv_tile`) cuts its output into.

Positions along a line share the taps of the window that land inside the input, so one
tile body serves all of them with no per-tap checks: along the last axis, one line per
leading position over the interior columns (the window inside the input on that axis);
a 2-D conv's border columns, down the interior rows; and what is left (a 2-D conv's
corners; other ranks' border columns) as lines of one. A line's taps are a box of tap
ranges worked out from its first position. On a small map, a line instead runs across
the images, at one output position (`image_line`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.ir import SSAValue

from aotk.kernels.conv_geometry import Geometry, Range
from aotk.kernels.kernel import Buf, DimV, Kernel

Bufs = tuple[Buf, Buf, Buf]  # out, x, kernel


@dataclass(frozen=True)
class LineKind:
    """`count` lines per image; the j-th starts at spatial position `start(j)` and runs
    `length` positions along spatial axis `axis`."""

    count: DimV
    start: Callable[[DimV], list[DimV]]
    length: DimV
    axis: int


@dataclass(frozen=True)
class Line:
    """`length` positions from spatial position `start`, `steps` = (output, x) elements
    apart, all with the taps [lo, hi) per axis inside the input."""

    start: list[DimV]
    length: DimV
    steps: tuple[DimV, DimV]
    taps: list[Range]


def line_kinds(k: Kernel, g: Geometry, inner: Sequence[Range]) -> list[LineKind]:
    """The lines of an image, in order: one per leading position along the last axis over
    its interior; a 2-D conv's border columns down the interior rows, then its corners;
    other ranks' border columns, one per leading position. The last kind are lines of
    one. Kinds known to be empty (a 'valid' conv's borders) are left out."""
    dims, last = g.out_dims, len(g.out_dims) - 1
    leading = dims[:-1]
    edges = [k.sub(d, _span(k, r)) for d, r in zip(dims, inner, strict=True)]
    across = k.max(edges[-1], 1)  # a division is emitted even when no line needs it

    def column(j: DimV) -> DimV:
        return _edge(k, j, inner[-1])

    def row_line(j: DimV) -> list[DimV]:
        return [*_unravel(k, j, leading), inner[-1][0]]

    def column_line(j: DimV) -> list[DimV]:
        return [inner[0][0], column(j)]

    def corner(j: DimV) -> list[DimV]:
        return [_edge(k, k.div(j, across), inner[0]), column(k.rem(j, across))]

    def row_end(j: DimV) -> list[DimV]:
        return [*_unravel(k, k.div(j, across), leading), column(k.rem(j, across))]

    kinds = [LineKind(k.product(leading), row_line, _span(k, inner[-1]), last)]
    if last == 1:
        kinds.append(LineKind(edges[1], column_line, _span(k, inner[0]), 0))
        kinds.append(LineKind(k.mul(edges[0], edges[1]), corner, 1, last))
    else:
        kinds.append(LineKind(k.mul(k.product(leading), edges[-1]), row_end, 1, last))
    return [kinds[0], *(kind for kind in kinds[1:] if kind.count != 0)]


def _span(k: Kernel, r: Range) -> DimV:
    return k.sub(r[1], r[0])


def _edge(k: Kernel, j: DimV, r: Range) -> DimV:
    """The j-th position outside [lo, hi) along an axis."""
    return k.select(k.compare("slt", j, r[0]), j, k.add(j, _span(k, r)))


def _unravel(k: Kernel, j: DimV, dims: Sequence[DimV]) -> list[DimV]:
    """Row-major coordinates of flat index j in `dims`."""
    coords: list[DimV] = []
    for d in reversed(dims[1:]):
        coords.insert(0, k.rem(j, d))
        j = k.div(j, d)
    return [j, *coords] if dims else []


def line_at(
    k: Kernel, where: tuple[Bufs, Geometry], kinds: Sequence[LineKind], e: SSAValue
) -> Line:
    """Line e of an image: each kind's candidate, picked by the range e falls in."""
    (out, x, _), g = where
    ost, xst = k.strides(out.dims), k.strides(x.dims)

    def steps(axis: int) -> tuple[DimV, DimV]:
        return ost[1 + axis], k.mul(g.win.strides[axis], xst[1 + axis])

    first: DimV = 0
    candidates: list[tuple[SSAValue | bool, LineKind, list[DimV]]] = []
    for kind in kinds:
        start = kind.start(k.sub(e, first))
        first = k.add(first, kind.count)
        candidates.append(
            (k.compare("slt", e, first) if kind is not kinds[-1] else True, kind, start)
        )
    _, kind, start = candidates[-1]
    length, step = kind.length, steps(kind.axis)
    for cond, kind, kind_start in reversed(candidates[:-1]):
        start = [k.select(cond, a, b) for a, b in zip(kind_start, start, strict=True)]
        length = k.select(cond, kind.length, length)
        here = steps(kind.axis)
        step = (k.select(cond, here[0], step[0]), k.select(cond, here[1], step[1]))
    return Line(start, length, step, tap_ranges(k, g, start))


def image_line(k: Kernel, where: tuple[Bufs, Geometry], e: SSAValue) -> Line:
    """Output position e (row-major over the map) of every image: a line across the
    batch, whose positions all have the taps of e."""
    (out, x, _), g = where
    start = _unravel(k, e, g.out_dims)
    steps = (k.strides(out.dims)[0], k.strides(x.dims)[0])
    return Line(start, x.dims[0], steps, tap_ranges(k, g, start))


def tap_ranges(k: Kernel, g: Geometry, start: Sequence[DimV]) -> list[Range]:
    """Per axis, the taps [lo, hi) of the window at `start` that land inside the input:
    0 <= p * stride + t * dilation - pad < size."""
    ranges: list[Range] = []
    for d, p in enumerate(start):
        base = k.sub(k.mul(p, g.win.strides[d]), g.pad_before[d])
        dil = g.win.dilation[d]
        lo = k.div(k.add(k.max(k.sub(0, base), 0), dil - 1), dil)
        hi = k.div(k.max(k.add(k.sub(g.dilated[d], base), dil - 1), 0), dil)
        ranges.append((lo, k.min(hi, g.win.window[d])))
    return ranges
