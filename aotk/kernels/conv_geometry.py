"""Shared pieces of the convolution and pooling loop nests: the geometry of a window
(strides, dilation, padding, output sizes, from static or run-time dims), tap
coordinates and bounds checks, loop boxes, and loops and ifs that carry values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.kernels.kernel import Buf, DimV, Kernel

Range = tuple[DimV, DimV]


@dataclass(frozen=True)
class Geometry:
    """Static window parameters and the (possibly dynamic) padding and output size per axis."""

    window: tuple[int, ...]
    strides: tuple[int, ...]
    dilation: tuple[int, ...]
    lhs: tuple[int, ...]
    groups: int
    pad_before: tuple[DimV, ...]
    dilated: tuple[DimV, ...]  # input size after input dilation
    out_dims: tuple[DimV, ...]

    @property
    def rank(self) -> int:
        return len(self.window)

    def extent(self, d: int) -> int:
        return (self.window[d] - 1) * self.dilation[d] + 1


def smax(k: Kernel, a: DimV, c: DimV) -> DimV:
    """Signed maximum of two index values, folded when both are known."""
    if isinstance(a, int) and isinstance(c, int):
        return max(a, c)
    return k.b.insert(arith.MaxSIOp(k.index(a), k.index(c))).result


def same_pads(k: Kernel, size: DimV, stride: int, extent: int) -> tuple[DimV, DimV]:
    """TF's "same" padding of one axis, from a size known now or at run time."""
    out = k.div(k.add(size, stride - 1), stride)
    total = smax(k, k.sub(k.add(k.mul(k.sub(out, 1), stride), extent), size), 0)
    before = k.div(total, 2)
    return before, k.sub(total, before)


def geometry(
    k: Kernel,
    x: Buf,
    w: Buf,
    *,
    strides: Sequence[int],
    dilation: Sequence[int],
    lhs_dilation: Sequence[int],
    pad_before: Sequence[int],
    pad_after: Sequence[int],
    padding: str,
    groups: int,
) -> Geometry:
    """The geometry of one aotk.conv, with index arithmetic for dynamic spatial dims."""
    window = tuple(int(d) for d in w.dims[:-2])  # type: ignore[arg-type]
    pads: list[DimV] = []
    dilated: list[DimV] = []
    outs: list[DimV] = []
    for d in range(len(window)):
        size, s = x.dims[1 + d], strides[d]
        extent = (window[d] - 1) * dilation[d] + 1
        if padding == "same":
            before, after = same_pads(k, size, s, extent)
        else:
            before, after = pad_before[d], pad_after[d]
        full = k.add(k.mul(k.sub(size, 1), lhs_dilation[d]), 1)
        # (full + pads - extent) // s + 1, kept non-negative for the unsigned division
        outs.append(k.div(k.add(k.sub(k.add(full, k.add(before, after)), extent), s), s))
        pads.append(before)
        dilated.append(full)
    return Geometry(
        window,
        tuple(strides),
        tuple(dilation),
        tuple(lhs_dilation),
        groups,
        tuple(pads),
        tuple(dilated),
        tuple(outs),
    )


@contextmanager
def box(
    k: Kernel, ranges: Sequence[Range], trips: Sequence[int] | None = None
) -> Iterator[list[SSAValue]]:
    """Nested loops over [lo, hi) per axis, outermost first; `trips`: typical lengths of
    dynamic ranges (for cost estimates)."""
    hints = list(trips) if trips is not None else [None] * len(ranges)
    with ExitStack() as stack:
        yield [
            stack.enter_context(k.loop(hi, lb=lo, trips=t))
            for (lo, hi), t in zip(ranges, hints, strict=True)
        ]


@contextmanager
def image_box(
    k: Kernel, images: DimV, ranges: Sequence[Range]
) -> Iterator[tuple[SSAValue, list[SSAValue]]]:
    """Loops over images and positions [lo, hi) per axis: (image, positions). Images and
    the first axis form one parallel loop, so threads split the rows of the output: the
    caller must write only the output at each position it visits."""
    if not ranges:
        with k.loop(images, parallel=True) as n:
            yield n, []
        return
    lo, hi = ranges[0]
    rows = k.sub(hi, lo)
    with k.loop(k.mul(images, rows), parallel=True) as i:
        if rows == 1:
            n, first = i, k.index(lo)
        else:
            n = k.index(k.div(i, rows))
            first = k.index(k.add(lo, k.rem(i, rows)))
        with box(k, ranges[1:]) as rest:
            yield n, [first, *rest]


def known_empty(r: Range) -> bool:
    return isinstance(r[0], int) and isinstance(r[1], int) and r[0] >= r[1]


def interior(k: Kernel, g: Geometry, d: int) -> Range:
    """Output positions along axis d whose window lies inside the input."""
    s, pb, count = g.strides[d], g.pad_before[d], g.out_dims[d]
    lo = k.min(k.div(k.add(pb, s - 1), s), count)
    last = k.add(k.sub(g.dilated[d], g.extent(d)), pb)  # p * s <= last
    hi = k.div(k.add(smax(k, last, -s), s), s)
    return lo, k.min(smax(k, hi, lo), count)


def tap_coords(
    k: Kernel, g: Geometry, ps: Sequence[SSAValue], taps: Sequence[SSAValue]
) -> list[DimV]:
    """Coordinates in the dilated input of the taps of output position `ps`."""
    return [
        k.sub(k.add(k.mul(p, g.strides[d]), k.mul(t, g.dilation[d])), g.pad_before[d])
        for d, (p, t) in enumerate(zip(ps, taps, strict=True))
    ]


def inside(k: Kernel, g: Geometry, coords: Sequence[DimV]) -> SSAValue:
    """Whether every coordinate hits an input element (not padding, not a dilation hole)."""
    conds: list[SSAValue] = []
    for d, c in enumerate(coords):
        if g.pad_before[d] != 0:
            conds.append(cmp(k, "sge", c, 0))
        conds.append(cmp(k, "slt", c, g.dilated[d]))
        if g.lhs[d] > 1:
            rem = k.b.insert(arith.RemSIOp(k.index(c), k.index(g.lhs[d]))).result
            conds.append(cmp(k, "eq", rem, 0))
    return all_of(k, conds)


def cmp(k: Kernel, pred: str, a: DimV, c: DimV) -> SSAValue:
    return k.b.insert(arith.CmpiOp(k.index(a), k.index(c), pred)).result


def in_box(k: Kernel, ps: Sequence[SSAValue], ranges: Sequence[Range]) -> SSAValue:
    conds = [cmp(k, "sge", p, lo) for p, (lo, _) in zip(ps, ranges, strict=True)]
    conds += [cmp(k, "slt", p, hi) for p, (_, hi) in zip(ps, ranges, strict=True)]
    return all_of(k, conds)


def all_of(k: Kernel, conds: Sequence[SSAValue]) -> SSAValue:
    cond = conds[0]
    for other in conds[1:]:
        cond = k.b.insert(arith.AndIOp(cond, other)).result
    return cond


Values = Sequence[SSAValue]


def fold_nest(
    k: Kernel,
    dims: Sequence[DimV],
    inits: Values,
    fn: Callable[[Values, Values], Values],
    lows: Sequence[DimV] | None = None,
    trips: Sequence[int] | None = None,
) -> list[SSAValue]:
    """Fold `fn(ivs, carried) -> carried` over a loop nest [lows, dims); `trips` as in
    `box`."""
    starts = list(lows) if lows is not None else [0] * len(dims)
    hints = list(trips) if trips is not None else [None] * len(dims)

    def level(d: int, ivs: list[SSAValue], carried: Values) -> list[SSAValue]:
        if d == len(dims):
            return list(fn(ivs, carried))
        return list(
            k.fold_loop(
                dims[d],
                carried,
                lambda i, c: level(d + 1, [*ivs, i], c),
                lb=starts[d],
                trips=hints[d],
            )
        )

    return level(0, [], inits)


def if_values(
    k: Kernel,
    cond: SSAValue,
    then_fn: Callable[[], Values],
    otherwise: Values | Callable[[], Values],
) -> list[SSAValue]:
    """scf.if yielding `then_fn()` when `cond` holds, else `otherwise` (values, or a
    function building them in the else branch)."""
    blocks = (Block(), Block())
    else_fn = otherwise if callable(otherwise) else lambda: otherwise
    outer = k.b
    results: list[SSAValue] = []
    try:
        for block, fn in zip(blocks, (then_fn, else_fn), strict=True):
            k.b = Builder(InsertPoint.at_end(block))
            values = list(fn())
            k.b.insert(scf.YieldOp(*values))
            results = results or values
    finally:
        k.b = outer
    op = k.b.insert(scf.IfOp(cond, [v.type for v in results], Region(blocks[0]), Region(blocks[1])))
    return list(op.results)
