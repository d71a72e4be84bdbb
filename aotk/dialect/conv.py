"""`aotk.conv`: convolution over 1 to 3 spatial dims, channels_last.

x [N, *S, C] with a kernel [*K, C / groups, O] gives [N, *P, O]. Strides, kernel dilation,
input dilation (`lhs_dilation`: zeros between input elements, which makes a transposed
convolution a plain one), explicit per-side padding or TF's "same" padding (computed from
the run-time dims, so dynamic spatial dims work), and feature groups (depthwise).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import conv_kernel
from aotk.kernels.conv_geometry import geometry
from aotk.kernels.kernel import Buf, DimV, Kernel


@irdl_op_definition
class ConvOp(AotkOp):
    """N-d convolution (a correlation, as in TF) of channels_last `x` with `kernel`."""

    name = "aotk.conv"
    x = operand_def(TensorType)
    kernel = operand_def(TensorType)
    result = result_def(TensorType)
    strides = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    lhs_dilation = prop_def(DenseArrayBase)
    pad_before = prop_def(DenseArrayBase)
    pad_after = prop_def(DenseArrayBase)
    padding = prop_def(StringAttr)  # "explicit" (pad_before/pad_after) or "same"
    groups = prop_def(IntegerAttr)
    traits = traits_def(Pure())


def same_pads(size: int, stride: int, extent: int) -> tuple[int, int]:
    """TF's "same" padding of one axis: the odd element goes after."""
    out = -(-size // stride)
    total = max((out - 1) * stride + extent - size, 0)
    return total // 2, total - total // 2


def conv_out_dim(size: int, extent: int, stride: int, lhs: int, pads: tuple[int, int]) -> int:
    """Output size of one axis; `extent` is the dilated window, (k - 1) * dilation + 1."""
    dilated = (size - 1) * lhs + 1 if size > 0 else 0
    return (dilated + pads[0] + pads[1] - extent) // stride + 1


def _check_params(n: int, **params: Sequence[int]) -> None:
    for name, values in params.items():
        low = 0 if name.startswith("pad") else 1
        if len(values) != n or any(v < low for v in values):
            raise ValueError(f"{name} must be {n} ints >= {low}, got {tuple(values)}")


def _check_operands(x: Attribute, kernel: Attribute, groups: int) -> None:
    xs, ks = shape_of(x), shape_of(kernel)
    if len(xs) < 3 or len(ks) != len(xs):
        raise ValueError(
            "expected x [N, *spatial, C] and a kernel [*window, C / groups, O] of equal rank "
            f">= 3, got {fmt_shape(xs)} and {fmt_shape(ks)}"
        )
    if elem_of(x) != elem_of(kernel):
        raise TypeError(f"x and kernel have different dtypes {dtype_of(x)} and {dtype_of(kernel)}")
    if not dtypes.is_float(elem_of(x)):
        raise TypeError(f"expected float tensors, got {dtype_of(x)}")
    if None in ks:
        raise ValueError(f"the kernel shape must be static, got {fmt_shape(ks)}")
    cin, out_ch = ks[-2], ks[-1]
    assert cin is not None and out_ch is not None
    if groups < 1 or out_ch % groups:
        raise ValueError(f"groups {groups} must be >= 1 and divide the {out_ch} output channels")
    if xs[-1] is not None and xs[-1] != cin * groups:
        raise ValueError(
            f"x has {xs[-1]} channels, the kernel {fmt_shape(ks)} expects {cin} * {groups} groups"
        )


def _out_dim(size: int, window: int, d: int, attrs: dict[str, Any]) -> int:
    """Output size of spatial axis d; raise if the padded input is smaller than the window."""
    stride, dilation, lhs = attrs["strides"][d], attrs["dilation"][d], attrs["lhs_dilation"][d]
    extent = (window - 1) * dilation + 1
    if attrs["padding"] == "same":
        pads = same_pads(size, stride, extent)
    else:
        pads = (attrs["pad_before"][d], attrs["pad_after"][d])
    dim = conv_out_dim(size, extent, stride, lhs, pads)
    dilated = (size - 1) * lhs + 1
    if dilated + sum(pads) < extent if size > 0 else dim < 0 or lhs > 1:
        raise ValueError(
            f"spatial axis {d} of size {size} (padded {pads}) is smaller than the "
            f"window {window} dilated by {dilation}"
        )
    return dim


def infer_conv(
    x: Attribute,
    kernel: Attribute,
    *,
    strides: Sequence[int],
    dilation: Sequence[int],
    lhs_dilation: Sequence[int],
    pad_before: Sequence[int],
    pad_after: Sequence[int],
    padding: str,
    groups: int,
    **_: Any,
) -> Attribute:
    _check_operands(x, kernel, groups)
    xs, ks = shape_of(x), shape_of(kernel)
    windows = dict(strides=strides, dilation=dilation, lhs_dilation=lhs_dilation)
    pads = dict(pad_before=pad_before, pad_after=pad_after)
    _check_params(len(xs) - 2, **windows, **pads)
    if padding not in ("explicit", "same"):
        raise ValueError(f"padding must be 'explicit' or 'same', got {padding!r}")
    if padding == "same" and any(v != 1 for v in lhs_dilation):
        raise ValueError(f"'same' padding needs lhs_dilation 1, got {tuple(lhs_dilation)}")
    attrs = {**windows, **pads, "padding": padding}
    spatial = [
        None if size is None else _out_dim(size, ks[d], d, attrs)  # type: ignore[arg-type]
        for d, size in enumerate(xs[1:-1])
    ]
    return tensor(elem_of(x), [xs[0], *spatial, ks[-1]])


def np_padded_input(
    x: np.ndarray,
    w: np.ndarray,
    strides: Sequence[int],
    dilation: Sequence[int],
    lhs_dilation: Sequence[int],
    pad_before: Sequence[int],
    pad_after: Sequence[int],
    padding: str,
) -> tuple[np.ndarray, list[tuple[int, int]], list[int], list[int]]:
    """x dilated and padded in float64, with the pads, dilated sizes and output sizes."""
    window = w.shape[:-2]
    extents = [(k - 1) * d + 1 for k, d in zip(window, dilation, strict=True)]
    sizes = x.shape[1:-1]
    if padding == "same":
        pads = [same_pads(s, st, e) for s, st, e in zip(sizes, strides, extents, strict=True)]
    else:
        pads = list(zip(pad_before, pad_after, strict=True))
    dilated = [(s - 1) * lh + 1 if s else 0 for s, lh in zip(sizes, lhs_dilation, strict=True)]
    xd = np.zeros((x.shape[0], *dilated, x.shape[-1]))
    xd[(slice(None), *(slice(None, None, lh) for lh in lhs_dilation))] = x
    xp = np.pad(xd, [(0, 0), *pads, (0, 0)])
    outs = [
        conv_out_dim(s, e, st, lh, p)
        for s, e, st, lh, p in zip(sizes, extents, strides, lhs_dilation, pads, strict=True)
    ]
    return xp, pads, dilated, outs


def np_conv(
    x: np.ndarray,
    w: np.ndarray,
    *,
    strides: Sequence[int],
    dilation: Sequence[int],
    lhs_dilation: Sequence[int],
    pad_before: Sequence[int],
    pad_after: Sequence[int],
    padding: str,
    groups: int,
) -> np.ndarray:
    """The oracle: one strided window per kernel tap, contracted per group in float64."""
    xp, _, _, outs = np_padded_input(
        x, w, strides, dilation, lhs_dilation, pad_before, pad_after, padding
    )
    cg, og = w.shape[-2], w.shape[-1] // groups
    acc = np.zeros((x.shape[0], *outs, groups, og))
    for tap in np.ndindex(*w.shape[:-2]):
        starts = [t * d for t, d in zip(tap, dilation, strict=True)]
        key = tuple(
            slice(a, a + (o - 1) * st + 1 if o else a, st)
            for a, o, st in zip(starts, outs, strides, strict=True)
        )
        patch = xp[(slice(None), *key)].reshape(x.shape[0], *outs, groups, cg)
        wt = w[tap].astype(np.float64).reshape(cg, groups, og)
        acc += np.einsum("...gc,cgo->...go", patch, wt)
    return acc.reshape(x.shape[0], *outs, groups * og).astype(x.dtype)


def _dims(k: Kernel, ins: Sequence[Buf], result_type: Attribute, **attrs: Any) -> list[DimV]:
    x, w = ins
    geom = geometry(k, x, w, **attrs)
    return [x.dims[0], *geom.out_dims, w.dims[-1]]


def _lower(k: Kernel, out: Buf, x: Buf, w: Buf, **attrs: Any) -> None:
    conv_kernel.emit(k, out, x, w, geometry(k, x, w, **attrs))


def _grad(g: Any, y: Any, x: Any, kernel: Any, **attrs: Any) -> tuple[Any, ...]:
    from aotk.dialect.conv_backprop import conv_grad

    return conv_grad(g, y, x, kernel, **attrs)


register(
    OpDef(
        ir=ConvOp,
        kind=Kind.OPAQUE,
        infer=infer_conv,
        numpy=np_conv,
        lower=_lower,
        dims=_dims,
        grad=_grad,
    )
)
