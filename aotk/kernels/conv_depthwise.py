"""Depthwise convolutions (one input channel per group, one output channel each) of
float32/float64: per output position, each vector of channels accumulates its taps in a
register and is stored once.

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
from aotk.kernels.conv_geometry import Geometry, image_box, inside, tap_coords
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const

MAX_TAPS = 64  # taps unrolled in the channel loop's body


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
            clamped = [
                k.min(k.max(c, 0), k.sub(size, 1)) for c, size in zip(coords, sizes, strict=True)
            ]
            xbase = k.linear([n, *clamped], xst[:-1])
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
    channels = w.dims[-1]
    lanes = heuristics.VECTOR_BYTES // dtypes.byte_size(out.elem)
    vt = VectorType(out.elem, [lanes])
    zero = mk.splat(k, const(k.b, 0, out.elem), vt)
    whole = k.mul(k.div(channels, lanes), lanes)

    def accumulate(c: DimV, mask: SSAValue | None) -> None:
        def load(buf: Buf, at: DimV) -> SSAValue:
            if mask is None:
                return mk.vload(k, buf, k.add(at, c), vt)
            return mk.vload_masked(k, buf, k.add(at, c), mask, zero)

        acc = zero
        for xbase, wbase, within in taps:
            summed = mk.vfma(k, load(x, xbase), load(w, wbase), acc)
            acc = k.b.insert(arith.SelectOp(within, summed, acc)).result
        if mask is None:
            mk.vstore(k, out, k.add(obase, c), acc)
        else:
            mk.vstore_masked(k, out, k.add(obase, c), mask, acc)

    with k.loop(whole, step=lanes) as c:
        accumulate(c, None)
    with k.loop(channels, lb=whole, step=lanes, trips=1) as c:
        accumulate(c, mk.lane_mask(k, k.sub(channels, c), vt))
