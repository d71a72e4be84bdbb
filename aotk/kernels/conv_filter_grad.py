"""The kernel gradient of a float32/float64 convolution in register tiles.

dw[tap, ci, co] = sum over images n and output positions p of
x[n, p * stride + tap * dilation - pad_before, ci] * g[n, p, co]: per tap, a product
whose reduction runs over every output position. A work item is one tap, a tile of
`rows` input channels and a block of `nvec` vectors of output channels; its rows * nvec
accumulators stay in registers over the positions that tap reads inside the input (a
box per tap, so there are no per-position checks), each step broadcasting `rows`
contiguous channels of x and loading `nvec` contiguous vectors of g. Threads split the
items. The last channel tile and block are shifted back to end at the channels' end.

When the output channels are whole blocks, images are taken in chunks whose x and g fit
L2 and every item adds its chunk's sums to dw (zeroed first): without chunks, each of
the 54 items of a 3x3, 32 -> 64 conv streamed all of x and g from memory. A shifted
tile then stores only the channel rows it owns. Otherwise (a partial block) each item
sums over all images and stores once; shifted tiles store the same values twice.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import conv_tile, heuristics
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Geometry, Range, Values, fold_nest
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const


def supported(out: Buf, g: Geometry) -> bool:
    """Whether `emit` serves this gradient: float32/float64 without groups or input
    dilation, with at least a vector of output channels."""
    n_out = out.dims[-1]
    plain = g.win.groups == 1 and all(v == 1 for v in g.win.lhs_dilation)
    if not (plain and isinstance(out.elem, Float32Type | Float64Type) and isinstance(n_out, int)):
        return False
    return conv_tile.tile_shape(dtypes.byte_size(out.elem), n_out)[2] > 0


def emit(k: Kernel, dw: Buf, grad: Buf, x: Buf, g: Geometry) -> None:
    """dw = the kernel gradient of conv(x, dw's shape) given the output gradient `grad`."""
    c_in, c_out = dw.dims[-2], dw.dims[-1]
    assert isinstance(c_in, int) and isinstance(c_out, int)
    lanes, most_rows, nvec = conv_tile.tile_shape(dtypes.byte_size(dw.elem), c_out)
    rows, width = min(most_rows, c_in), nvec * lanes
    plan = _Plan(VectorType(dw.elem, [lanes]), rows, nvec, -(-c_in // rows), -(-c_out // width))
    if c_out % width:
        with k.loop(plan.items(g), parallel=True) as item:
            _item(k, (dw, grad, x, g), plan, item, (0, grad.dims[0]))
        return
    # Whole output blocks: images taken a few at a time, so that their x and g stay in
    # L2 while every item reads them; items add to dw, zeroed first.
    zero = mk.splat(k, const(k.b, 0.0, dw.elem), plan.vt)
    mk.fill(k, dw, (0, k.product(dw.dims)), zero, parallel=True)
    chunk = _images_per_chunk(grad, x)
    with k.loop(grad.dims[0], step=chunk) as n0:
        images = (n0, k.min(k.add(n0, chunk), grad.dims[0]))
        with k.loop(plan.items(g), parallel=True) as item:
            _item(k, (dw, grad, x, g), plan, item, images, accumulate=True)


@dataclass(frozen=True)
class _Plan:
    vt: VectorType
    rows: int
    nvec: int
    ci_tiles: int
    co_blocks: int

    def items(self, g: Geometry) -> int:
        return math.prod(g.win.window) * self.ci_tiles * self.co_blocks


def _images_per_chunk(grad: Buf, x: Buf) -> int:
    """Images whose g and x fill about half of L2 (one when their size is dynamic)."""
    per_image = 0
    for buf in (grad, x):
        size = dtypes.byte_size(buf.elem)
        for d in buf.dims[1:]:
            if not isinstance(d, int):
                return 1
            size *= d
        per_image += size
    return max(1, heuristics.L2_BYTES // 2 // max(per_image, 1))


def _item(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf, Geometry],
    plan: _Plan,
    item: SSAValue,
    images: Range,
    accumulate: bool = False,
) -> None:
    """One item's sums over `images`: stored, or added to dw (`accumulate`). A shifted-back
    last channel tile then leaves the rows it shares with the tile before to that tile."""
    dw, grad, x, g = bufs
    c_in, c_out = dw.dims[-2], dw.dims[-1]
    assert isinstance(c_in, int) and isinstance(c_out, int)
    lanes, rows, nvec = plan.vt.get_shape()[0], plan.rows, plan.nvec
    per_tap = plan.ci_tiles * plan.co_blocks
    tap = _unravel(k, k.div(item, per_tap), g.win.window)
    rest = k.rem(item, per_tap)
    nominal = k.mul(k.div(rest, plan.co_blocks), rows)
    ci0 = k.min(nominal, c_in - rows)
    co0 = k.min(k.mul(k.rem(rest, plan.co_blocks), nvec * lanes), c_out - nvec * lanes)
    base = k.add(k.linear([*tap, ci0], k.strides(dw.dims)[:-1]), co0)
    offsets = [[k.add(base, r * c_out + v * lanes) for v in range(nvec)] for r in range(rows)]
    inits = None
    if accumulate:
        inits = [mk.vload(k, dw, at, plan.vt) for row in offsets for at in row]
    accs = _reduce(k, (grad, x, g), tap, (ci0, rows), (co0, nvec, plan.vt), images, inits)
    for r, row in enumerate(offsets):

        def store(r: int = r, row: list[DimV] = row) -> None:
            for v, at in enumerate(row):
                mk.vstore(k, dw, at, accs[r * nvec + v])

        if not accumulate or r == rows - 1 or c_in % rows == 0:
            store()
        else:
            owned = k.b.insert(arith.CmpiOp(k.index(k.add(ci0, r)), k.index(nominal), "sge"))
            k.if_else(owned.result, store, None)


def _unravel(k: Kernel, index: DimV, window: Sequence[int]) -> list[DimV]:
    """The tap coordinates of a row-major tap index."""
    coords: list[DimV] = []
    for d in reversed(range(len(window))):
        coords.insert(0, k.index(k.rem(index, window[d])))
        index = k.div(index, window[d])
    return coords


def _positions(k: Kernel, g: Geometry, tap: Sequence[DimV]) -> list[Range]:
    """Per spatial axis, the output positions p whose input coordinate
    p * stride + tap * dilation - pad_before lies inside the input."""
    ranges: list[Range] = []
    for d, t in enumerate(tap):
        s = g.win.strides[d]
        shift = k.sub(g.pad_before[d], k.mul(t, g.win.dilation[d]))  # may be negative
        lo = k.div(k.add(k.max(shift, 0), s - 1), s)
        last = k.add(k.sub(g.dilated[d], 1), shift)  # stride * p <= last
        hi = k.min(g.out_dims[d], k.div(k.add(k.max(last, -s), s), s))
        ranges.append((lo, k.max(hi, lo)))
    return ranges


def _reduce(
    k: Kernel,
    where: tuple[Buf, Buf, Geometry],
    tap: Sequence[DimV],
    channels: tuple[DimV, int],
    outputs: tuple[DimV, int, VectorType],
    images: Range,
    inits: Values | None = None,
) -> list[SSAValue]:
    """Sum over `images` and the tap's positions of x[.., ci0 + r] * g[.., co0 + v *
    lanes], added to `inits` (default zero)."""
    grad, x, g = where
    ci0, rows = channels
    co0, nvec, vt = outputs
    lanes = vt.get_shape()[0]
    xst, gst = k.strides(x.dims), k.strides(grad.dims)
    ranges = _positions(k, g, tap)
    offsets = [k.sub(k.mul(t, g.win.dilation[d]), g.pad_before[d]) for d, t in enumerate(tap)]

    def step(ivs: Values, accs: Values) -> Values:
        n, ps = ivs[0], ivs[1:]
        coords = [k.add(k.mul(p, g.win.strides[d]), offsets[d]) for d, p in enumerate(ps)]
        xo = k.add(k.linear([n, *coords], xst[:-1]), ci0)
        go = k.add(k.linear([n, *ps], gst[:-1]), co0)
        gs = [mk.vload(k, grad, k.add(go, v * lanes), vt) for v in range(nvec)]
        new = list(accs)
        for r in range(rows):
            xs = mk.splat(k, k.load_flat(x, k.add(xo, r)), vt)
            for v in range(nvec):
                new[r * nvec + v] = mk.vfma(k, xs, gs[v], accs[r * nvec + v])
        return new

    if inits is None:
        inits = [mk.splat(k, const(k.b, 0.0, vt.element_type), vt)] * (rows * nvec)
    highs = [images[1], *(hi for _, hi in ranges)]
    lows = [images[0], *(lo for lo, _ in ranges)]
    return fold_nest(k, highs, inits, step, lows=lows)
