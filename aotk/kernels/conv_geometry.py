"""Shared pieces of the convolution and pooling loop nests: a `Window`'s geometry on
run-time dims, tap coordinates and bounds checks, loop boxes, and loops and ifs that
carry values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.window import Window

Range = tuple[DimV, DimV]


Body = Callable[[Kernel, list[SSAValue]], SSAValue]


@dataclass(frozen=True)
class Epilogue:
    """out = body(k, [out, *extras]) per output element once its value is final; each
    extra holds one value, or one per output channel. `vector`, when the body lowers on
    vectors too (arith ops and constants), takes vectors of consecutive channels."""

    body: Body
    extras: tuple[Buf, ...]
    vector: Body | None = None

    def apply(self, k: Kernel, out: Buf, at: DimV, channel: DimV) -> None:
        """Apply it to out[at], an element of output channel `channel`."""
        xs = [k.load_flat(b, _at(k, b, channel)) for b in self.extras]
        k.store_flat(out, at, self.body(k, [k.load_flat(out, at), *xs]))

    def vector_extras(self, k: Kernel, vt: VectorType, channel: DimV) -> list[SSAValue]:
        """The extras as vectors of type `vt` for the channels from `channel` on, for
        `vector`'s arguments after the accumulator."""
        return [
            mk.splat(k, k.load_flat(b, 0), vt) if _single(k, b) else mk.vload(k, b, channel, vt)
            for b in self.extras
        ]


def _single(k: Kernel, extra: Buf) -> bool:
    """An extra of one value (a scalar), not one per channel."""
    return k.product(extra.dims) == 1


def _at(k: Kernel, extra: Buf, channel: DimV) -> DimV:
    return 0 if _single(k, extra) else channel


@dataclass(frozen=True)
class Geometry:
    """A `Window` with its (possibly run-time) padding, dilated input and output sizes."""

    win: Window
    pad_before: tuple[DimV, ...]
    dilated: tuple[DimV, ...]  # input size after input dilation
    out_dims: tuple[DimV, ...]


def geometry(k: Kernel, win: Window, sizes: Sequence[DimV]) -> Geometry:
    """The geometry of `win` over spatial input `sizes`, as index arithmetic on `k`."""
    axes = range(win.rank)
    return Geometry(
        win,
        tuple(win.pads(k, sizes[d], d)[0] for d in axes),
        tuple(win.dilated(k, sizes[d], d) for d in axes),
        tuple(win.out_dims(k, sizes)),
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
    s, pb, count = g.win.strides[d], g.pad_before[d], g.out_dims[d]
    lo = k.min(k.div(k.add(pb, s - 1), s), count)
    last = k.add(k.sub(g.dilated[d], g.win.extent(d)), pb)  # p * s <= last
    hi = k.div(k.add(k.max(last, -s), s), s)
    return lo, k.min(k.max(hi, lo), count)


def tap_coords(
    k: Kernel, g: Geometry, ps: Sequence[SSAValue], taps: Sequence[SSAValue]
) -> list[DimV]:
    """Coordinates in the dilated input of the taps of output position `ps`."""
    return [
        k.sub(k.add(k.mul(p, g.win.strides[d]), k.mul(t, g.win.dilation[d])), g.pad_before[d])
        for d, (p, t) in enumerate(zip(ps, taps, strict=True))
    ]


def clamped_row(
    k: Kernel, image: tuple[DimV, Sequence[DimV]], coords: Sequence[DimV], sizes: Sequence[DimV]
) -> DimV:
    """The offset in x (strides `image[1]`) of image n's row at `coords`, each clamped
    into [0, size): a tap in the padding reads a real element, which its caller drops."""
    n, xst = image
    clamped = [k.min(k.max(c, 0), k.sub(size, 1)) for c, size in zip(coords, sizes, strict=True)]
    return k.linear([n, *clamped], xst[:-1])


def inside(k: Kernel, g: Geometry, coords: Sequence[DimV]) -> SSAValue:
    """Whether every coordinate hits an input element (not padding, not a dilation hole)."""
    conds: list[SSAValue] = []
    for d, c in enumerate(coords):
        if g.pad_before[d] != 0:
            conds.append(k.compare("sge", c, 0))
        conds.append(k.compare("slt", c, g.dilated[d]))
        if g.win.lhs_dilation[d] > 1:
            rem = k.b.insert(arith.RemSIOp(k.index(c), k.index(g.win.lhs_dilation[d]))).result
            conds.append(k.compare("eq", rem, 0))
    return all_of(k, conds)


def in_box(k: Kernel, ps: Sequence[SSAValue], ranges: Sequence[Range]) -> SSAValue:
    conds = [k.compare("sge", p, lo) for p, (lo, _) in zip(ps, ranges, strict=True)]
    conds += [k.compare("slt", p, hi) for p, (_, hi) in zip(ps, ranges, strict=True)]
    return all_of(k, conds)


def all_of(k: Kernel, conds: Sequence[SSAValue]) -> SSAValue:
    cond = conds[0]
    for other in conds[1:]:
        cond = k.both(cond, other)
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
