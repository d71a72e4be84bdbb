"""The kernel gradient of a float32/float64 convolution in register tiles.

dw[tap, ci, co] = sum over images n and output positions p of
x[n, p * stride + tap * dilation - pad_before, ci] * g[n, p, co]: per tap, a product
whose reduction runs over every output position. A work item is one tap, a tile of
`rows` input channels and a block of `nvec` vectors of output channels; its rows * nvec
accumulators stay in registers over all the positions that tap reads inside the input
(a box per tap, so there are no per-position checks), each step broadcasting `rows`
contiguous channels of x and loading `nvec` contiguous vectors of g. Threads split the
items. The last channel tile and block are shifted back to end at the channels' end:
they recompute a few sums and store the same values again.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import conv_tile
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
    window = g.win.window
    c_in, c_out = dw.dims[-2], dw.dims[-1]
    assert isinstance(c_in, int) and isinstance(c_out, int)
    lanes, most_rows, nvec = conv_tile.tile_shape(dtypes.byte_size(dw.elem), c_out)
    rows, width = min(most_rows, c_in), nvec * lanes
    vt = VectorType(dw.elem, [lanes])
    ci_tiles, co_blocks = -(-c_in // rows), -(-c_out // width)
    taps = 1
    for w in window:
        taps *= w
    with k.loop(taps * ci_tiles * co_blocks, parallel=True) as item:
        tap_index = k.div(item, ci_tiles * co_blocks)
        rest = k.rem(item, ci_tiles * co_blocks)
        ci0 = k.min(k.mul(k.div(rest, co_blocks), rows), c_in - rows)
        co0 = k.min(k.mul(k.rem(rest, co_blocks), width), c_out - width)
        tap = _unravel(k, tap_index, window)
        accs = _reduce(k, (grad, x, g), tap, (ci0, rows), (co0, nvec, vt))
        base = k.add(k.linear([*tap, ci0], k.strides(dw.dims)[:-1]), co0)
        for r in range(rows):
            for v in range(nvec):
                at = k.add(base, r * c_out + v * lanes)
                mk.vstore(k, dw, at, accs[r * nvec + v])


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
) -> list[SSAValue]:
    """Sum over images and the tap's positions of x[.., ci0 + r] * g[.., co0 + v * lanes]."""
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

    zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
    highs = [grad.dims[0], *(hi for _, hi in ranges)]
    lows = [0, *(lo for lo, _ in ranges)]
    return fold_nest(k, highs, [zero] * (rows * nvec), step, lows=lows)
