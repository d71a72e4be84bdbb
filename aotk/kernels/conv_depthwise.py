"""Depthwise convolutions (one input channel per group, one output channel each) of
float32/float64: per output position, each vector of channels accumulates its taps in a
register and is stored once (`emit`). Their kernel gradient (`emit_filter_grad`): threads
split blocks of BLOCK_VECTORS vectors of channels, each summing every tap's products over
all images and positions in registers.

The row order (`conv_kernel`) adds each tap into the output row in memory, under a
branch per tap; here a window's taps are unrolled, a tap outside the input reads the
element it is clamped to and is dropped by a select (not multiplied by zero, which would
turn an infinite input into NaN), and the channels go in vectors, then one masked vector.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import heuristics
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import (
    Geometry,
    clamped_row,
    fold_nest,
    image_box,
    inside,
    tap_coords,
)
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const

MAX_TAPS = 64  # taps unrolled in the channel loop's body
BLOCK_VECTORS = 2  # a cache line of float32 channels; 9 taps x 2 accumulators fit in registers


def applies(out: Buf, w: Buf, g: Geometry) -> bool:
    """Whether the conv is depthwise with a multiplier of 1, of float32/float64, its input
    not dilated, and its window at most MAX_TAPS taps."""
    channels = w.dims[-1]
    return (
        isinstance(out.elem, Float32Type | Float64Type)
        and w.dims[-2] == 1
        and isinstance(channels, int)
        and g.win.groups == channels
        and all(v == 1 for v in g.win.lhs_dilation)
        and math.prod(g.win.window) <= MAX_TAPS
    )


def emit(k: Kernel, out: Buf, x: Buf, w: Buf, g: Geometry) -> None:
    """out = depthwise conv(x, w); threads split (image, output row) items."""
    xst, ost, wst = k.strides(x.dims), k.strides(out.dims), k.strides(w.dims)
    sizes = x.dims[1:-1]
    with image_box(k, x.dims[0], [(0, d) for d in g.out_dims]) as (n, ps):
        taps = []
        for tap in np.ndindex(*g.win.window):
            coords = tap_coords(k, g, ps, list(tap))
            xbase = clamped_row(k, (n, xst), coords, sizes)
            taps.append((xbase, k.linear(list(tap), wst[:-2]), inside(k, g, coords)))
        _channels(k, (out, x, w), k.linear([n, *ps], ost[:-1]), taps)


def _channels(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    obase: DimV,
    taps: Sequence[tuple[DimV, DimV, SSAValue]],
) -> None:
    """Every channel of one output position: whole vectors, then one masked vector."""
    out, x, w = bufs
    vt = VectorType(out.elem, [heuristics.narrow_vector_bytes() // dtypes.byte_size(out.elem)])

    def accumulate(c: DimV, mask: SSAValue | None) -> None:
        acc = mk.splat(k, const(k.b, 0, out.elem), vt)
        for xbase, wbase, within in taps:
            xv = mk.vload_lanes(k, x, k.add(xbase, c), vt, mask)
            summed = mk.vfma(k, xv, mk.vload_lanes(k, w, k.add(wbase, c), vt, mask), acc)
            acc = k.b.insert(arith.SelectOp(within, summed, acc)).result
        mk.vstore_lanes(k, out, k.add(obase, c), acc, mask)

    mk.vector_loop(k, w.dims[-1], vt, accumulate)


def emit_filter_grad(k: Kernel, dw: Buf, grad: Buf, x: Buf, g: Geometry) -> None:
    """dw[tap, 0, c] = sum over images and output positions p of
    x[n, p * strides + tap * dilation - pad, c] * grad[n, p, c], taps inside the input."""
    channels = dw.dims[-1]
    assert isinstance(channels, int)
    lanes = heuristics.narrow_vector_bytes() // dtypes.byte_size(dw.elem)
    vt = VectorType(dw.elem, [lanes])
    width = BLOCK_VECTORS * lanes
    zero = mk.splat(k, const(k.b, 0, dw.elem), vt)
    window = list(np.ndindex(*g.win.window))
    xst, gst = k.strides(x.dims), k.strides(grad.dims)
    sizes = x.dims[1:-1]
    with k.loop(-(-channels // width), parallel=True) as block:
        c0 = k.mul(block, width)
        masks = [
            _lanes_left(k, channels, k.add(c0, v * lanes), lanes, vt) for v in range(BLOCK_VECTORS)
        ]

        def load(buf: Buf, at: DimV, v: int) -> SSAValue:
            return mk.vload_lanes(k, buf, k.add(at, k.add(c0, v * lanes)), vt, masks[v])

        def position(ivs: Sequence[SSAValue], accs: Sequence[SSAValue]) -> list[SSAValue]:
            n, ps = ivs[0], ivs[1:]
            gs = [load(grad, k.linear([n, *ps], gst[:-1]), v) for v in range(BLOCK_VECTORS)]
            new = []
            for t, tap in enumerate(window):
                coords = tap_coords(k, g, ps, list(tap))
                xbase, within = clamped_row(k, (n, xst), coords, sizes), inside(k, g, coords)
                for v in range(BLOCK_VECTORS):
                    acc = accs[t * BLOCK_VECTORS + v]
                    summed = mk.vfma(k, load(x, xbase, v), gs[v], acc)
                    new.append(k.b.insert(arith.SelectOp(within, summed, acc)).result)
            return new

        dims = [grad.dims[0], *g.out_dims]
        accs = fold_nest(k, dims, [zero] * (len(window) * BLOCK_VECTORS), position)
        for t in range(len(window)):
            for v in range(BLOCK_VECTORS):
                at = k.add(k.mul(t, channels), k.add(c0, v * lanes))
                mk.vstore_lanes(k, dw, at, accs[t * BLOCK_VECTORS + v], masks[v])


def _lanes_left(k: Kernel, channels: int, c: DimV, lanes: int, vt: VectorType) -> SSAValue | None:
    """The mask of the channels left from c on (None when every block's vector is whole)."""
    if channels % (BLOCK_VECTORS * lanes) == 0:
        return None
    return mk.lane_mask(k, k.max(k.min(k.sub(channels, c), lanes), 0), vt)
