"""`aotk.conv_backprop`: the gradients of `aotk.conv` with respect to its input and kernel.

Both walk the forward convolution's windows (same geometry: strides, dilation, input
dilation, padding, groups) and accumulate the cotangent back: into the input element each
tap read (`wrt = "input"`), or into the kernel tap that read it (`wrt = "kernel"`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import AotkOp
from aotk.dialect.conv import infer_conv, np_padded_input
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import conv_geometry as cg
from aotk.kernels.conv_geometry import geometry
from aotk.kernels.kernel import Buf, Kernel
from aotk.kernels.scalar import compute_type, const


@irdl_op_definition
class ConvBackpropOp(AotkOp):
    """d(conv(x, kernel)) applied to cotangent `g`, for `wrt` "input" or "kernel"."""

    name = "aotk.conv_backprop"
    g = operand_def(TensorType)
    x = operand_def(TensorType)
    kernel = operand_def(TensorType)
    result = result_def(TensorType)
    wrt = prop_def(StringAttr)
    strides = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    lhs_dilation = prop_def(DenseArrayBase)
    pad_before = prop_def(DenseArrayBase)
    pad_after = prop_def(DenseArrayBase)
    padding = prop_def(StringAttr)
    groups = prop_def(IntegerAttr)
    traits = traits_def(Pure())


def _infer(g: Attribute, x: Attribute, kernel: Attribute, *, wrt: str, **attrs: Any) -> Attribute:
    infer_conv(x, kernel, **attrs)
    if wrt not in ("input", "kernel"):
        raise ValueError(f"wrt must be 'input' or 'kernel', got {wrt!r}")
    return x if wrt == "input" else kernel


def _numpy(
    g: np.ndarray,
    x: np.ndarray,
    w: np.ndarray,
    *,
    wrt: str,
    strides: Sequence[int],
    dilation: Sequence[int],
    lhs_dilation: Sequence[int],
    pad_before: Sequence[int],
    pad_after: Sequence[int],
    padding: str,
    groups: int,
) -> np.ndarray:
    window = w.shape[:-2]
    xp, pads, dilated, outs = np_padded_input(
        x, w, strides, dilation, lhs_dilation, pad_before, pad_after, padding
    )
    cgp, og = w.shape[-2], w.shape[-1] // groups
    gg = g.astype(np.float64).reshape(g.shape[0], *outs, groups, og)
    dxp, dw = np.zeros(xp.shape), np.zeros(w.shape)
    for tap in np.ndindex(*window):
        starts = [t * d for t, d in zip(tap, dilation, strict=True)]
        key = (
            slice(None),
            *(
                slice(a, a + (o - 1) * st + 1 if o else a, st)
                for a, o, st in zip(starts, outs, strides, strict=True)
            ),
        )
        wt = w[tap].astype(np.float64).reshape(cgp, groups, og)
        patch = xp[key].reshape(x.shape[0], *outs, groups, cgp)
        dxp[key] += np.einsum("...go,cgo->...gc", gg, wt).reshape(x.shape[0], *outs, groups * cgp)
        flat_p, flat_g = patch.reshape(-1, groups, cgp), gg.reshape(-1, groups, og)
        dw[tap] = np.einsum("ngc,ngo->cgo", flat_p, flat_g).reshape(cgp, groups * og)
    if wrt == "kernel":
        return dw.astype(w.dtype)
    inner = tuple(slice(b, b + d) for (b, _), d in zip(pads, dilated, strict=True))
    dxd = dxp[(slice(None), *inner, slice(None))]
    return dxd[(slice(None), *(slice(None, None, lh) for lh in lhs_dilation))].astype(x.dtype)


def _lower(k: Kernel, out: Buf, g: Buf, x: Buf, w: Buf, *, wrt: str, **attrs: Any) -> None:
    zero = const(k.b, 0, compute_type(out.elem))
    with k.loop(k.product(out.dims)) as i:
        k.store_flat(out, i, zero)
    geo = geometry(k, x, w, **attrs)
    c_in, c_out = w.dims[-2], w.dims[-1]
    per_group = k.div(c_out, geo.groups)
    xst, gst, wst = k.strides(x.dims), k.strides(g.dims), k.strides(w.dims)
    with k.loop(x.dims[0]) as n, cg.box(k, [(0, d) for d in geo.out_dims]) as ps:
        with cg.box(k, [(0, t) for t in geo.window]) as ts:
            coords = cg.tap_coords(k, geo, ps, ts)

            def body() -> None:
                real = [k.div(c, lh) for c, lh in zip(coords, geo.lhs, strict=True)]
                with k.loop(c_out) as co:
                    gv = k.load_flat(g, k.add(k.linear([n, *ps], gst[:-1]), co))
                    group = k.div(co, per_group)
                    with k.loop(c_in) as ci:
                        xc = k.add(k.mul(group, c_in), ci)
                        xi = k.add(k.linear([n, *real], xst[:-1]), xc)
                        wi = k.add(k.linear([*ts, ci], wst[:-1]), k.mul(co, 1))
                        dst, other = (
                            (xi, k.load_flat(w, wi)) if wrt == "input" else (wi, k.load_flat(x, xi))
                        )
                        prod = k.b.insert(arith.MulfOp(gv, other)).result
                        k.store_flat(
                            out, dst, k.b.insert(arith.AddfOp(k.load_flat(out, dst), prod)).result
                        )

            k.if_else(cg.inside(k, geo, coords), body, lambda: None)


def conv_grad(g: Any, y: Any, x: Any, kernel: Any, **attrs: Any) -> tuple[Any, ...]:
    """The ConvOp gradient rule."""
    from aotk.dialect import gradlib as lib

    return (
        lib.emit(ConvBackpropOp, g, x, kernel, wrt="input", **attrs),
        lib.emit(ConvBackpropOp, g, x, kernel, wrt="kernel", **attrs),
    )


register(
    OpDef(
        ir=ConvBackpropOp,
        kind=Kind.OPAQUE,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        dims=lambda k, ins, t, *, wrt, **_: list(ins[1].dims if wrt == "input" else ins[2].dims),
        grad=lambda gy, y, g, x, w, **_: (None, None, None),
    )
)
