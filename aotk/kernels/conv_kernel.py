"""Loop nests of `aotk.conv` on flat channels_last buffers: the dispatcher, and the nests
for the cases `conv_tile`'s register tiles do not cover.

- 3 x 3, stride 1, with a vector of channels in and out: `conv_winograd` (given its
  scratch by the op's lowering).
- float32/float64 without groups or input dilation, with at least a vector of output
  channels: `conv_tile` (register tiles over the interior box, checked tiles around it).
- Depthwise, one output channel per input channel: `conv_depthwise` (each vector of
  channels sums its taps in a register).
- Row order (groups, a depthwise multiplier, input dilation, few output channels): per
  output position, zero the row out[n, p, :], then for every tap inside the input add
  x[n, i, c] * kernel[tap, c, :] to it. The innermost loop runs over output channels,
  contiguous in the kernel and the output, so LLVM vectorizes it.
- float16: each output element accumulates in a float32 register and is rounded once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import Float32Type, Float64Type
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import conv_depthwise, conv_tile, conv_winograd
from aotk.kernels.conv_geometry import (
    Epilogue,
    Geometry,
    Range,
    Values,
    fold_nest,
    if_values,
    image_box,
    inside,
    interior,
    tap_coords,
)
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const, muladd


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    g: Geometry,
    epilogue: Epilogue | None = None,
    scratch: Buf | None = None,
    packed: Buf | None = None,
) -> None:
    """out = conv(x, w) over every output position, then `epilogue` on each element, for
    bufs = (out, x, w); by `conv_winograd` when given its `scratch`, reading U from
    `packed` if given."""
    if scratch is None:
        _direct(k, bufs, g, epilogue)
    else:
        direct = functools.partial(_direct, k, bufs, g, epilogue)
        conv_winograd.emit(k, bufs, g, (None, scratch), epilogue, direct, packed)


def _direct(k: Kernel, bufs: tuple[Buf, Buf, Buf], g: Geometry, epilogue: Epilogue | None) -> None:
    """The conv without Winograd: register tiles, depthwise, or a loop order."""
    out, x, w = bufs
    full: list[Range] = [(0, d) for d in g.out_dims]
    _, rows, nvec = conv_tile.tile_shape(dtypes.byte_size(out.elem), w.dims[-1])  # type: ignore[arg-type]
    if not isinstance(out.elem, Float32Type | Float64Type):
        _register_order(k, out, x, w, g, full)
    elif conv_depthwise.applies(out, w, g):
        conv_depthwise.emit(k, out, x, w, g)
    elif g.win.groups != 1 or any(v != 1 for v in g.win.lhs_dilation) or nvec == 0:
        _row_order(k, out, x, w, g, full)
    else:
        _tiled(k, (out, x, w), g, rows, epilogue)
        return
    if epilogue is not None:
        _epilogue_pass(k, out, epilogue)


def _tiled(
    k: Kernel, bufs: tuple[Buf, Buf, Buf], g: Geometry, rows: int, epilogue: Epilogue | None
) -> None:
    """`conv_tile`'s register tiles, their lines cut around the interior of each axis."""
    inner = [interior(k, g, d) for d in range(g.win.rank)]
    length = k.sub(inner[-1][1], inner[-1][0])
    if isinstance(length, int) and length > 0:
        rows = min(rows, length)  # narrow inputs: lines as long as the interior
    conv_tile.emit(k, bufs, g, (inner, rows), epilogue)


def _epilogue_pass(k: Kernel, out: Buf, epilogue: Epilogue) -> None:
    """The epilogue as a pass over the finished output (the untiled orders)."""
    channels = out.dims[-1]
    with k.loop(k.product(out.dims[:-1]), parallel=True) as p, k.loop(channels) as c:
        epilogue.apply(k, out, k.add(k.mul(p, channels), c), c)


def _fma(k: Kernel, a: SSAValue, b: SSAValue, c: SSAValue) -> SSAValue:
    return muladd(k.b, a, b, c)


def _row_order(k: Kernel, out: Buf, x: Buf, w: Buf, g: Geometry, ranges: Sequence[Range]) -> None:
    """Per output position: zero its row, then add the contribution of every tap inside
    the input."""
    xst, ost, wst = k.strides(x.dims), k.strides(out.dims), k.strides(w.dims)
    zero = const(k.b, 0, compute_type(out.elem))
    with image_box(k, x.dims[0], ranges) as (n, ps):
        obase = k.linear([n, *ps], ost[:-1])
        with k.loop(w.dims[-1]) as o:
            k.store_flat(out, k.add(obase, o), zero)
        with k.nest(g.win.window) as taps:
            coords = tap_coords(k, g, ps, taps)

            def add_tap() -> None:
                xi = [k.div(c, lh) for c, lh in zip(coords, g.win.lhs_dilation, strict=True)]
                xbase = k.linear([n, *xi], xst[:-1])
                _add_rows(k, (out, x, w), obase, xbase, k.linear(taps, wst[:-2]), g.win.groups)

            k.if_else(inside(k, g, coords), add_tap, lambda: None)


def _add_rows(
    k: Kernel, bufs: tuple[Buf, Buf, Buf], obase: DimV, xbase: DimV, wbase: DimV, groups: int
) -> None:
    """out[obase + o] += x[xbase + c] * w[wbase + c, o] within each group."""
    out, x, w = bufs
    cg, n_out = w.dims[-2], w.dims[-1]
    og = n_out // groups  # type: ignore[operator]
    if cg == 1 and og == 1:
        with k.loop(n_out) as o:
            at = k.add(obase, o)
            xv, wv = k.load_flat(x, k.add(xbase, o)), k.load_flat(w, k.add(wbase, o))
            k.store_flat(out, at, _fma(k, xv, wv, k.load_flat(out, at)))
        return
    with k.loop(groups) as gi, k.loop(cg) as c:
        xv = k.load_flat(x, k.add(xbase, k.add(k.mul(gi, cg), c)))
        wrow = k.add(wbase, k.add(k.mul(c, n_out), k.mul(gi, og)))
        orow = k.add(obase, k.mul(gi, og))
        with k.loop(og) as o:
            at = k.add(orow, o)
            k.store_flat(out, at, _fma(k, xv, k.load_flat(w, k.add(wrow, o)), k.load_flat(out, at)))


def _register_order(
    k: Kernel, out: Buf, x: Buf, w: Buf, g: Geometry, ranges: Sequence[Range]
) -> None:
    """Per output element: accumulate over taps and channels in a register, store once."""
    xst, ost, wst = k.strides(x.dims), k.strides(out.dims), k.strides(w.dims)
    cg, n_out = w.dims[-2], w.dims[-1]
    og = n_out // g.win.groups  # type: ignore[operator]
    zero = const(k.b, 0, compute_type(out.elem))
    with image_box(k, x.dims[0], ranges) as (n, ps), k.loop(n_out) as o:
        first_c = k.mul(k.div(o, og), cg)

        def tap(taps: Values, acc: Values) -> Values:
            coords = tap_coords(k, g, ps, taps)

            def channels() -> Values:
                xi = [k.div(c, lh) for c, lh in zip(coords, g.win.lhs_dilation, strict=True)]
                xbase = k.add(k.linear([n, *xi], xst[:-1]), first_c)
                wbase = k.add(k.linear(taps, wst[:-2]), o)

                def step(c: SSAValue, carried: Values) -> list[SSAValue]:
                    xv = k.load_flat(x, k.add(xbase, c))
                    wv = k.load_flat(w, k.add(wbase, k.mul(c, n_out)))
                    return [_fma(k, xv, wv, carried[0])]

                return k.fold_loop(cg, acc, step)

            return if_values(k, inside(k, g, coords), channels, acc)

        acc = fold_nest(k, list(g.win.window), [zero], tap)
        k.store_flat(out, k.linear([n, *ps, o], ost), acc[0])
