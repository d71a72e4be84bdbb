"""`aotk.pool_grad`: the gradient of `aotk.pool` with respect to its input.

Average pooling spreads each output's cotangent evenly over the real (unpadded) elements
of its window; max pooling routes it to the first element of the window (in row-major tap
order) that equals the output, as TensorFlow's MaxPoolGrad does.

Where the spatial sizes are static, every window lies inside the input and no two
overlap (a CNN's 2x2 pooling with stride 2), each element of x takes its gradient from
one window at most: one pass stores it. Otherwise the gradient is zeroed, then each
window adds its taps' shares. Both loop over channels in vectors, a window's taps
unrolled (up to MAX_UNROLLED_TAPS; larger windows loop over their taps per channel).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    Float64Type,
    IntegerType,
    TensorType,
    VectorType,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.conv import WindowedOp, tap_slices
from aotk.dialect.pool import (
    PoolMode,
    PoolModeAttr,
    PoolPaddingAttr,
    infer_pool,
    window_count,
    window_spans,
)
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import conv_geometry as cg
from aotk.kernels import heuristics
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const
from aotk.kernels.window import Window

MAX_UNROLLED_TAPS = 64  # the one-pass path unrolls a window's taps in its channel loop


@irdl_op_definition
class PoolGradOp(WindowedOp):
    """d(pool(x))/dx applied to the cotangent `g`; `y` is the pool's result."""

    name = "aotk.pool_grad"
    g = operand_def(TensorType)
    x = operand_def(TensorType)
    y = operand_def(TensorType)
    result = result_def(TensorType)
    window = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    padding = prop_def(PoolPaddingAttr)
    mode = prop_def(PoolModeAttr)
    traits = traits_def(Pure())


def pool_grad_shape(a: DimArith, dims: Sequence[Sequence[Dim]], **_: Any) -> list[Dim]:
    """The shape of x."""
    return list(dims[1])


def _infer(g: Attribute, x: Attribute, y: Attribute, **attrs: Any) -> Attribute:
    pooled = infer_pool(x, **attrs)
    if elem_of(x) != elem_of(g) or len(shape_of(g)) != len(shape_of(pooled)):
        raise TypeError(f"g {g} does not match the pool's result {pooled}")
    if elem_of(y) != elem_of(x):
        raise TypeError(f"y {y} does not match x {x}")
    return tensor(elem_of(x), pool_grad_shape(STATIC, [shape_of(t) for t in (g, x, y)]))


def _numpy(g: np.ndarray, x: np.ndarray, y: np.ndarray, *, mode: str, **attrs: Any) -> np.ndarray:
    win = Window.of_pool(**attrs)
    sizes = x.shape[1:-1]
    outs = win.out_dims(STATIC, sizes)
    pads = [win.pads(STATIC, s, d) for d, s in enumerate(sizes)]
    xp = np.pad(x.astype(np.float64), [(0, 0), *pads, (0, 0)], constant_values=np.nan)
    dx = np.zeros(xp.shape)
    valid = np.pad(np.ones(sizes), pads)
    count = np.zeros(outs)
    keys = [tap_slices(win, tap, outs) for tap in np.ndindex(*win.window)]
    for key in keys:
        count += valid[key]
    done = np.zeros(g.shape, bool)
    for key in keys:
        if mode == PoolMode.AVG:
            share = g / count[..., None]  # padding takes none, even of an infinity
            dx[(slice(None), *key)] += np.where(valid[key][..., None] > 0, share, 0)
        else:
            hit = (xp[(slice(None), *key)] == y) & ~done
            dx[(slice(None), *key)] += np.where(hit, g, 0)
            done |= hit
    inner = tuple(slice(b, b + s) for (b, _), s in zip(pads, sizes, strict=True))
    return dx[(slice(None), *inner, slice(None))].astype(x.dtype)


def _lower(k: Kernel, out: Buf, g: Buf, x: Buf, y: Buf, *, mode: str, **attrs: Any) -> None:
    win = Window.of_pool(**attrs)
    if _disjoint_inside(win, x.dims[1:-1]):
        _lower_disjoint(k, (out, g, x, y), win, mode)
    elif math.prod(win.window) <= MAX_UNROLLED_TAPS:
        _lower_unrolled(k, (out, g, x, y), win, mode)
    else:
        _lower_any(k, (out, g, x, y), win, mode)


def _disjoint_inside(win: Window, sizes: Sequence[DimV]) -> bool:
    """Whether, on these static spatial sizes, every window lies inside the input and no
    two overlap (strides at least the window): each element of x then takes its gradient
    from one window at most, and a window's taps need no bounds."""
    if math.prod(win.window) > MAX_UNROLLED_TAPS:
        return False
    return all(
        isinstance(size, int)
        and win.strides[d] >= win.window[d]
        and win.pads(STATIC, size, d) == (0, 0)
        for d, size in enumerate(sizes)
    )


def _lower_disjoint(k: Kernel, bufs: tuple[Buf, Buf, Buf, Buf], win: Window, mode: str) -> None:
    """One pass that stores each element of x's gradient once, the window's taps unrolled
    in a loop over channels (which LLVM vectorizes). Max pooling hands the cotangent to the
    first tap equal to the output and zero to the rest. Elements under no window (strides
    past the window, rows past the last window) are zeroed first."""
    out, g, x, y = bufs
    sizes = [d for d in x.dims[1:-1] if isinstance(d, int)]  # every one, as checked
    ctype = compute_type(x.elem)
    if any(win.out_dim(STATIC, s, d) * win.window[d] != s for d, s in enumerate(sizes)):
        with k.loop(k.product(out.dims), parallel=True) as i:
            k.store_flat(out, i, const(k.b, 0, ctype))
    xst, gst = k.strides(x.dims), k.strides(g.dims)
    pooled = [(0, d) for d in g.dims[1:-1]]
    with cg.image_box(k, x.dims[0], pooled) as (n, ps):
        at_g = k.linear([n, *ps], gst[:-1])
        corner = k.linear(
            [n, *[k.mul(p, s) for p, s in zip(ps, win.strides, strict=True)]], xst[:-1]
        )
        taps = [k.add(corner, k.linear(list(t), xst[1:-1])) for t in np.ndindex(*win.window)]
        count = const(k.b, len(taps), ctype) if mode == PoolMode.AVG else None

        def window(c: DimV, lanes: _Lanes) -> None:
            at_x = [(k.add(tap, c), None) for tap in taps]
            _spread(k, (out, g, x, y), _Window(at_x, k.add(at_g, c), count), lanes)

        _channels(k, x.dims[-1], x.elem, False, window)


@dataclass(frozen=True)
class _Window:
    """One window at one channel: x's offset at each tap, with whether the tap is inside
    the input (None: always); g's and y's offset; the average's divisor (None: max)."""

    taps: Sequence[tuple[DimV, SSAValue | None]]
    at_g: DimV
    count: SSAValue | None


def _spread(k: Kernel, bufs: tuple[Buf, Buf, Buf, Buf], w: _Window, lanes: _Lanes) -> None:
    """x's gradient at each tap of one window, stored or (`lanes.accumulate`) added:
    g / count for average pooling; for max, g at the first tap where x equals y and 0 at
    the others. What is left of g goes from tap to tap and becomes 0 at a hit: no flag to
    carry, and a NaN cotangent still reaches the first hit alone."""
    out, g, x, y = bufs
    gv = lanes.load(g, w.at_g)
    zero = lanes.zero(gv)

    def write(at: DimV, value: SSAValue) -> None:
        if lanes.accumulate:
            value = k.b.insert(arith.AddfOp(lanes.load(out, at), value)).result
        lanes.store(out, at, value)

    if w.count is not None:
        share = k.b.insert(arith.DivfOp(gv, lanes.wide(w.count))).result
        for at, inside in w.taps:
            write(at, share if inside is None else _select(k, inside, share, zero))
        return
    # A tap in the padding reads the element it is clamped to, and needs no mask: the
    # clamped taps before the window's first row (column) repeat that row (column) in
    # order, those after it repeat elements already passed, so the first hit is still
    # the first maximum in row-major order.
    yv, left = lanes.load(y, w.at_g), gv
    for at, _ in w.taps:
        # on vectors, a lane-wise compare; xDSL types it i1, LLVM gives one bit per lane
        hit = k.b.insert(arith.CmpfOp(lanes.load(x, at), yv, "oeq")).result
        write(at, _select(k, hit, left, zero))
        left = _select(k, hit, zero, left)


class _Lanes:
    """How a loop over channels reads and writes: one element at a time (in the compute
    type: float16), or vectors of `vt`, masked to `mask` (the last, partial one)."""

    def __init__(
        self, k: Kernel, vt: VectorType | None, mask: SSAValue | None, accumulate: bool
    ) -> None:
        self.k, self.vt, self.mask, self.accumulate = k, vt, mask, accumulate

    def load(self, buf: Buf, at: DimV) -> SSAValue:
        if self.vt is None:
            return self.k.load_flat(buf, at)
        return mk.vload_lanes(self.k, buf, at, self.vt, self.mask)

    def store(self, buf: Buf, at: DimV, value: SSAValue) -> None:
        if self.vt is None:
            self.k.store_flat(buf, at, value)
        else:
            mk.vstore_lanes(self.k, buf, at, value, self.mask)

    def wide(self, scalar: SSAValue) -> SSAValue:
        """A scalar as a value of every lane."""
        if self.vt is None:
            return scalar
        return mk.splat(self.k, scalar, VectorType(scalar.type, self.vt.get_shape()))

    def zero(self, like: SSAValue) -> SSAValue:
        return self.wide(const(self.k.b, 0, like.type if self.vt is None else self.vt.element_type))


Body = Callable[[DimV, _Lanes], None]


def _channels(
    k: Kernel,
    channels: DimV,
    elem: Attribute,
    accumulate: bool,
    body: Callable[[DimV, _Lanes], None],
) -> None:
    """body(c, lanes) over the channels: whole vectors, then one masked vector
    (float32/float64); float16, one channel at a time."""
    if not isinstance(elem, Float32Type | Float64Type):
        with k.loop(channels) as c:
            body(c, _Lanes(k, None, None, accumulate))
        return
    vt = VectorType(elem, [heuristics.narrow_vector_bytes() // dtypes.byte_size(elem)])
    mk.vector_loop(k, channels, vt, lambda c, mask: body(c, _Lanes(k, vt, mask, accumulate)))


def _select(k: Kernel, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
    return k.b.insert(arith.SelectOp(cond, a, b)).result


def _lower_unrolled(k: Kernel, bufs: tuple[Buf, Buf, Buf, Buf], win: Window, mode: str) -> None:
    """Windows that may overlap or reach into padding: x's gradient zeroed, then per
    window a loop over channels (vectorized) that adds each tap's share, the taps
    unrolled. A tap in the padding reads the element it is clamped to (and an average
    adds 0 there). Threads split the images, within which windows overlap."""
    out, g, x, y = bufs
    ctype = compute_type(x.elem)
    zero = const(k.b, 0, ctype)
    with k.loop(k.product(out.dims), parallel=True) as i:
        k.store_flat(out, i, zero)
    sizes = x.dims[1:-1]
    xst, gst = k.strides(x.dims), k.strides(g.dims)
    with k.loop(x.dims[0], parallel=True) as n, cg.box(k, [(0, d) for d in g.dims[1:-1]]) as ps:
        spans = window_spans(k, win, sizes, ps)
        count = window_count(k, spans, x.elem) if mode == PoolMode.AVG else None
        starts = [
            k.sub(k.mul(p, win.strides[d]), win.pads(k, sizes[d], d)[0]) for d, p in enumerate(ps)
        ]
        taps = [
            _clamped_tap(
                k,
                (n, xst),
                sizes,
                [k.add(s, t) for s, t in zip(starts, tap, strict=True)],
                count is not None,
            )
            for tap in np.ndindex(*win.window)
        ]
        at_g = k.linear([n, *ps], gst[:-1])

        def window(c: DimV, lanes: _Lanes) -> None:
            at_x = [(k.add(at, c), inside) for at, inside in taps]
            _spread(k, (out, g, x, y), _Window(at_x, k.add(at_g, c), count), lanes)

        _channels(k, x.dims[-1], x.elem, True, window)


def _clamped_tap(
    k: Kernel,
    image: tuple[SSAValue, Sequence[DimV]],
    sizes: Sequence[DimV],
    coords: Sequence[DimV],
    average: bool,
) -> tuple[DimV, SSAValue | None]:
    """The offset of x's row at `coords` clamped into the input, and (for an average,
    which must drop the padding's share; max needs no mask, see `_spread`) whether
    `coords` were inside it."""
    offset = cg.clamped_row(k, image, coords, sizes)
    if not average:
        return offset, None
    bounds = [
        c
        for coord, size in zip(coords, sizes, strict=True)
        for c in (k.compare("sge", coord, 0), k.compare("slt", coord, size))
    ]
    return offset, cg.all_of(k, bounds)


def _lower_any(k: Kernel, bufs: tuple[Buf, Buf, Buf, Buf], win: Window, mode: str) -> None:
    """Any windows: zero x's gradient, then add each window's share into it."""
    out, g, x, y = bufs
    ctype = compute_type(x.elem)
    zero = const(k.b, 0, ctype)
    with k.loop(k.product(out.dims), parallel=True) as i:
        k.store_flat(out, i, zero)
    xst, gst = k.strides(x.dims), k.strides(g.dims)
    # windows may overlap within an image, never across images: threads split the images
    with k.loop(x.dims[0], parallel=True) as n, cg.box(k, [(0, d) for d in g.dims[1:-1]]) as ps:
        spans = window_spans(k, win, x.dims[1:-1], ps)
        count = window_count(k, spans, x.elem) if mode == PoolMode.AVG else None
        with k.loop(x.dims[-1]) as c:
            gv = k.load_flat(g, k.add(k.linear([n, *ps], gst[:-1]), c))
            yv = k.load_flat(y, k.add(k.linear([n, *ps], gst[:-1]), c))
            share = k.b.insert(arith.DivfOp(gv, count)).result if count is not None else gv
            false = const(k.b, 0, IntegerType(1))

            def tap(xi: Sequence[SSAValue], carried: Sequence[SSAValue]) -> list[SSAValue]:
                at = k.add(k.linear([n, *xi], xst[:-1]), c)
                if mode == PoolMode.AVG:
                    add = k.b.insert(arith.AddfOp(k.load_flat(out, at), share)).result
                    k.store_flat(out, at, add)
                    return list(carried)
                equal = k.b.insert(arith.CmpfOp(k.load_flat(x, at), yv, "oeq")).result
                first = k.b.insert(arith.XOrIOp(carried[0], const(k.b, 1, IntegerType(1)))).result
                hit = k.b.insert(arith.AndIOp(equal, first)).result
                routed = k.b.insert(arith.SelectOp(hit, gv, zero)).result
                k.store_flat(out, at, k.b.insert(arith.AddfOp(k.load_flat(out, at), routed)).result)
                return [k.b.insert(arith.OrIOp(carried[0], hit)).result]

            cg.fold_nest(k, [hi for _, hi in spans], [false], tap, [lo for lo, _ in spans])


register(
    OpDef(
        ir=PoolGradOp,
        kind=Kind.OPAQUE,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        shape=pool_grad_shape,
        grad=lambda gy, y, g, x, yy, **_: (None, None, None),
    )
)
