"""`aotk.conv_backprop`: the gradients of `aotk.conv` with respect to its input and kernel.

Both walk the forward convolution's windows (same geometry: strides, dilation, input
dilation, padding, groups) and accumulate the cotangent back: into the input element each
tap read (`wrt input`), or into the kernel tap that read it (`wrt kernel`). The kernel
gradient of a 3 x 3 stride-1 conv sums Winograd tiles instead (`kernels.conv_winograd_grad`);
most input gradients are built as a forward conv (`conv_grad`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import (
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure
from xdsl.utils.str_enum import StrEnum

from aotk.dialect import shape as sh
from aotk.dialect import trace
from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.conv import (
    ConvOp,
    ConvPaddingAttr,
    WindowedOp,
    infer_conv,
    np_padded_input,
    tap_slices,
)
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import conv_depthwise, conv_filter_grad, conv_winograd_grad
from aotk.kernels import conv_geometry as cg
from aotk.kernels.conv_geometry import geometry
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const
from aotk.kernels.window import Window, member


class Wrt(StrEnum):
    """Which operand of the convolution aotk.conv_backprop differentiates."""

    INPUT = "input"
    KERNEL = "kernel"


@irdl_attr_definition
class WrtAttr(EnumAttribute[Wrt], SpacedOpaqueSyntaxAttribute):
    """`#aotk<wrt input>` or `#aotk<wrt kernel>`."""

    name = "aotk.wrt"


@irdl_op_definition
class ConvBackpropOp(WindowedOp):
    """d(conv(x, kernel)) applied to cotangent `g`, for `wrt` input or kernel."""

    name = "aotk.conv_backprop"
    g = operand_def(TensorType)
    x = operand_def(TensorType)
    kernel = operand_def(TensorType)
    result = result_def(TensorType)
    wrt = prop_def(WrtAttr)
    strides = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    lhs_dilation = prop_def(DenseArrayBase)
    pad_before = prop_def(DenseArrayBase)
    pad_after = prop_def(DenseArrayBase)
    padding = prop_def(ConvPaddingAttr)
    groups = prop_def(IntegerAttr)
    traits = traits_def(Pure())


def backprop_shape(a: DimArith, dims: Sequence[Sequence[Dim]], *, wrt: str, **_: Any) -> list[Dim]:
    """The shape of x (wrt input) or of the kernel."""
    return list(dims[1] if member(Wrt, "wrt", wrt) is Wrt.INPUT else dims[2])


def _infer(g: Attribute, x: Attribute, kernel: Attribute, *, wrt: str, **attrs: Any) -> Attribute:
    y = infer_conv(x, kernel, **attrs)
    if elem_of(g) != elem_of(y) or len(shape_of(g)) != len(shape_of(y)):
        raise TypeError(f"g {g} does not match the convolution's result {y}")
    dims = backprop_shape(STATIC, [shape_of(t) for t in (g, x, kernel)], wrt=wrt)
    return tensor(elem_of(x), dims)


def _numpy(g: np.ndarray, x: np.ndarray, w: np.ndarray, *, wrt: str, **attrs: Any) -> np.ndarray:
    win = Window.of_conv(w.shape[:-2], **attrs)
    xp, pads = np_padded_input(x, win)
    outs = win.out_dims(STATIC, x.shape[1:-1])
    groups = win.groups
    cgp, og = w.shape[-2], w.shape[-1] // groups
    gg = g.astype(np.float64).reshape(g.shape[0], *outs, groups, og)
    dxp, dw = np.zeros(xp.shape), np.zeros(w.shape)
    for tap in np.ndindex(*win.window):
        key = (slice(None), *tap_slices(win, tap, outs))
        wt = w[tap].astype(np.float64).reshape(cgp, groups, og)
        patch = xp[key].reshape(x.shape[0], *outs, groups, cgp)
        dxp[key] += np.einsum("...go,cgo->...gc", gg, wt).reshape(x.shape[0], *outs, groups * cgp)
        flat_p, flat_g = patch.reshape(-1, groups, cgp), gg.reshape(-1, groups, og)
        dw[tap] = np.einsum("ngc,ngo->cgo", flat_p, flat_g).reshape(cgp, groups * og)
    if wrt == Wrt.KERNEL:
        return dw.astype(w.dtype)
    sizes = [win.dilated(STATIC, s, d) for d, s in enumerate(x.shape[1:-1])]
    inner = tuple(slice(b, b + s) for (b, _), s in zip(pads, sizes, strict=True))
    dxd = dxp[(slice(None), *inner, slice(None))]
    return dxd[(slice(None), *(slice(None, None, lh) for lh in win.lhs_dilation))].astype(x.dtype)


def _lower(
    k: Kernel,
    out: Buf,
    g: Buf,
    x: Buf,
    w: Buf,
    *,
    wrt: str,
    scratch: Buf | None = None,
    **attrs: Any,
) -> None:
    win = Window.of_conv(w.dims[:-2], **attrs)
    geo = geometry(k, win, x.dims[1:-1])
    if scratch is not None:  # only the kernel gradient asks for it
        direct = functools.partial(conv_filter_grad.emit, k, out, g, x, geo)
        conv_winograd_grad.emit(k, (out, g, x), geo, scratch, direct)
        return
    if wrt == Wrt.KERNEL and conv_filter_grad.supported(out, geo):
        conv_filter_grad.emit(k, out, g, x, geo)
        return
    if wrt == Wrt.KERNEL and conv_depthwise.applies(out, w, geo):
        conv_depthwise.emit_filter_grad(k, out, g, x, geo)
        return
    _lower_scattering(k, (out, g, x, w), geo, wrt)


def _lower_scattering(
    k: Kernel, bufs: tuple[Buf, Buf, Buf, Buf], geo: cg.Geometry, wrt: str
) -> None:
    """Either gradient as a scalar nest over the forward windows, adding each product to
    the element it belongs to: the general case (groups, input dilation, float16)."""
    out, g, x, w = bufs
    win = geo.win
    zero = const(k.b, 0, compute_type(out.elem))
    with k.loop(k.product(out.dims)) as i:
        k.store_flat(out, i, zero)
    c_in, c_out = w.dims[-2], w.dims[-1]
    per_group = k.div(c_out, win.groups)
    xst, gst, wst = k.strides(x.dims), k.strides(g.dims), k.strides(w.dims)
    with k.loop(x.dims[0]) as n, cg.box(k, [(0, d) for d in geo.out_dims]) as ps:
        with cg.box(k, [(0, t) for t in win.window]) as ts:
            coords = cg.tap_coords(k, geo, ps, ts)

            def body() -> None:
                real = [k.div(c, lh) for c, lh in zip(coords, win.lhs_dilation, strict=True)]
                with k.loop(c_out) as co:
                    gv = k.load_flat(g, k.add(k.linear([n, *ps], gst[:-1]), co))
                    group = k.div(co, per_group)
                    with k.loop(c_in) as ci:
                        xc = k.add(k.mul(group, c_in), ci)
                        xi = k.add(k.linear([n, *real], xst[:-1]), xc)
                        wi = k.add(k.linear([*ts, ci], wst[:-1]), k.mul(co, 1))
                        dst, other = (
                            (xi, k.load_flat(w, wi))
                            if wrt == Wrt.INPUT
                            else (wi, k.load_flat(x, xi))
                        )
                        prod = k.b.insert(arith.MulfOp(gv, other)).result
                        k.store_flat(
                            out, dst, k.b.insert(arith.AddfOp(k.load_flat(out, dst), prod)).result
                        )

            k.if_else(cg.inside(k, geo, coords), body, lambda: None)


def conv_grad(g: Any, y: Any, x: Any, kernel: Any, **attrs: Any) -> tuple[Any, ...]:
    """The ConvOp gradient rule."""
    from aotk.dialect import gradlib as lib

    dx = _transposed_conv(g, x, kernel, attrs)
    if dx is None:
        dx = lib.emit(ConvBackpropOp, g, x, kernel, wrt=Wrt.INPUT, **attrs)
    return dx, lib.emit(ConvBackpropOp, g, x, kernel, wrt=Wrt.KERNEL, **attrs)


def transposed_kernel(kernel: Any, where: str, swap: bool = True) -> Any:
    """The kernel of the transposed convolution: the taps reversed along every spatial
    axis, the channel axes swapped ((*window, in, out) -> (*window, out, in)) unless
    `swap` is False (a depthwise kernel, (*window, 1, channels), keeps its layout). Both
    at once are one transpose reading the taps back to front; an axis of one tap needs
    no reversing (a 1 x 1 kernel's transpose is a plain one, which matmuls fold)."""
    rank = len(kernel.shape) - 2
    taps = tuple(a for a in range(rank) if kernel.shape[a] != 1)
    if swap:
        perm = (*range(rank), rank + 1, rank)
        return trace.emit(sh.TransposeOp, kernel, where=where, perm=perm, reverse=taps or None)
    if not taps:
        return kernel
    return trace.emit(sh.SliceOp, kernel, where=where, **sh.reversal(rank + 2, taps))


def _transposed_conv(g: Any, x: Any, kernel: Any, attrs: dict[str, Any]) -> Any | None:
    """The input gradient as a forward convolution, which has register tiles: g dilated
    by the strides, padded by extent - 1 - pad on each side (plus the input rows the
    forward windows never reached), with the kernel's taps reversed and its channel
    axes swapped (a depthwise kernel, one channel per group, keeps its own). None where
    that does not hold: other groups, input dilation, a dynamic spatial size, or a pad
    wider than the window (a negative pad)."""
    from aotk.dialect import gradlib as lib

    win = Window.of_conv(kernel.shape[:-2], **attrs)
    sizes = x.shape[1:-1]
    depthwise = win.groups != 1 and tuple(kernel.shape[-2:]) == (1, win.groups)
    if win.groups != 1 and not depthwise:
        return None
    if any(v != 1 for v in win.lhs_dilation) or None in sizes:
        return None
    rank = win.rank
    outs = win.out_dims(STATIC, sizes)
    before, after = [], []
    for d, size in enumerate(sizes):
        pb, pa = win.pads(STATIC, size, d)
        extent = win.extent(d)
        unread = size + pb + pa - ((outs[d] - 1) * win.strides[d] + extent)
        before.append(extent - 1 - pb)
        after.append(extent - 1 - pa + unread)
    if min(before + after) < 0:
        return None
    return lib.emit(
        ConvOp,
        g,
        transposed_kernel(kernel, lib.WHERE, swap=not depthwise),
        strides=(1,) * rank,
        dilation=win.dilation,
        lhs_dilation=win.strides,
        pad_before=tuple(before),
        pad_after=tuple(after),
        padding="explicit",
        groups=win.groups,
    )


def _scratch(k: Kernel, ins: list[Buf], result_type: Attribute, *, wrt: str, **attrs: Any) -> DimV:
    """The scratch of `kernels.conv_winograd_grad` when it computes this kernel gradient."""
    if wrt != Wrt.KERNEL:
        return 0
    elem, image = elem_of(result_type), ins[1].dims[1:-1]
    return conv_winograd_grad.scratch_elems(k, elem, ins[2].dims, attrs, image)


register(
    OpDef(
        ir=ConvBackpropOp,
        kind=Kind.OPAQUE,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        shape=backprop_shape,
        grad=lambda gy, y, g, x, w, **_: (None, None, None),
        scratch=_scratch,
    )
)
