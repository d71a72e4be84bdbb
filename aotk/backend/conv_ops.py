"""Convolutions of the Keras API, channels_last and channels_first; the family's pooling
(`pool_ops`) and locally connected (`local_conv_ops`) functions are re-exported here.

Every function moves channels_first data to channels_last, emits `aotk.conv`, and moves
the result back. A transposed convolution is a convolution of the input dilated by the
strides (`lhs_dilation`) with the flipped kernel; depthwise convolutions use one feature
group per input channel, and separable ones add a 1x1 convolution.
"""

from __future__ import annotations

from typing import Any

from aotk.backend import conv_common as cc
from aotk.backend.config import check_data_format, image_data_format
from aotk.backend.local_conv_ops import local_conv1d, local_conv2d
from aotk.backend.pool_ops import pool2d, pool3d
from aotk.backend.shape_ops import reshape
from aotk.backend.static_eval import static_int, static_ints
from aotk.dialect.conv_backprop import transposed_kernel
from aotk.dialect.trace import KTensor
from aotk.kernels.dim_arith import STATIC
from aotk.kernels.window import same_pads


def _conv(
    x: Any,
    kernel: Any,
    rank: int,
    args: tuple[Any, Any, Any, Any],
    where: str,
) -> KTensor:
    """A plain convolution; `args` are (strides, padding, data_format, dilation_rate)."""
    strides, padding, data_format, dilation_rate = args
    fmt = check_data_format(data_format, where)
    t, w = cc.input_tensor(x, rank, where), cc.kernel_tensor(kernel, rank, where)
    st = cc.ints(strides, rank, "strides", where)
    dil = cc.ints(dilation_rate, rank, "dilation_rate", where)
    mode = cc.padding_mode(
        padding, where, ("valid", "same", "causal") if rank == 1 else cc.PADDINGS
    )
    t = cc.to_last(t, fmt)
    cc.check_channels(t, w.shape[-2], f"the kernel {w.shape}", where)  # type: ignore[arg-type]
    # causal: pad the time axis on the left only, so no output sees a later step
    before = (dil[0] * (w.shape[0] - 1),) if mode == "causal" else (0,) * rank  # type: ignore[operator]
    return cc.from_last(cc.emit_conv(t, w, where, st, dil, mode, pad_before=before), fmt)


def conv1d(
    x: Any,
    kernel: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = 1,
) -> KTensor:
    """1D convolution; kernel (width, in_channels, out_channels); padding may be 'causal'."""
    return _conv(x, kernel, 1, (strides, padding, data_format, dilation_rate), "K.conv1d")


def conv2d(
    x: Any,
    kernel: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = (1, 1),
) -> KTensor:
    """2D convolution; kernel (rows, cols, in_channels, out_channels)."""
    return _conv(x, kernel, 2, (strides, padding, data_format, dilation_rate), "K.conv2d")


def conv3d(
    x: Any,
    kernel: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = (1, 1, 1),
) -> KTensor:
    """3D convolution; kernel (depth, rows, cols, in_channels, out_channels)."""
    return _conv(x, kernel, 3, (strides, padding, data_format, dilation_rate), "K.conv3d")


def _depthwise(x: KTensor, w: KTensor, args: tuple[Any, ...], where: str, name: str) -> KTensor:
    """Channels_last depthwise convolution; `args` are (strides, padding, dilation_rate)."""
    rank = x.ndim - 2
    strides, padding, dilation_rate = args
    st = cc.ints(strides, rank, "strides", where)
    dil = cc.ints(dilation_rate, rank, "dilation_rate", where)
    mode = cc.padding_mode(padding, where)
    channels, mult = w.shape[-2], w.shape[-1]
    cc.check_channels(x, channels, f"the {name} {w.shape}", where)  # type: ignore[arg-type]
    flat = reshape(w, (*w.shape[:-2], 1, channels * mult))  # type: ignore[operator]
    return cc.emit_conv(x, flat, where, st, dil, mode, groups=channels)


def depthwise_conv2d(
    x: Any,
    depthwise_kernel: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = (1, 1),
) -> KTensor:
    """Per-channel 2D convolution; kernel (rows, cols, in_channels, multiplier)."""
    where = "K.depthwise_conv2d"
    fmt = check_data_format(data_format, where)
    t = cc.to_last(cc.input_tensor(x, 2, where), fmt)
    w = cc.kernel_tensor(depthwise_kernel, 2, where, "depthwise_kernel")
    y = _depthwise(t, w, (strides, padding, dilation_rate), where, "depthwise_kernel")
    return cc.from_last(y, fmt)


def _separable(
    x: Any, kernels: tuple[Any, Any], rank: int, args: tuple[Any, ...], where: str
) -> KTensor:
    """Depthwise convolution, then a 1x1 convolution with the pointwise kernel."""
    strides, padding, data_format, dilation_rate = args
    fmt = check_data_format(data_format, where)
    t = cc.to_last(cc.input_tensor(x, rank, where), fmt)
    dw = cc.kernel_tensor(kernels[0], rank, where, "depthwise_kernel")
    pw = cc.kernel_tensor(kernels[1], rank, where, "pointwise_kernel")
    mid = dw.shape[-2] * dw.shape[-1]  # type: ignore[operator]
    if pw.shape[:-1] != (1,) * rank + (mid,):
        raise ValueError(
            f"{where}: pointwise_kernel must have shape {(1,) * rank + (mid, 'filters')} for "
            f"depthwise_kernel {dw.shape}, got {pw.shape}"
        )
    y = _depthwise(t, dw, (strides, padding, dilation_rate), where, "depthwise_kernel")
    ones = (1,) * rank
    return cc.from_last(cc.emit_conv(y, pw, where, ones, ones, "valid"), fmt)


def separable_conv1d(
    x: Any,
    depthwise_kernel: Any,
    pointwise_kernel: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = 1,
) -> KTensor:
    """Depthwise 1D convolution followed by a 1x1 convolution."""
    args = (strides, padding, data_format, dilation_rate)
    return _separable(x, (depthwise_kernel, pointwise_kernel), 1, args, "K.separable_conv1d")


def separable_conv2d(
    x: Any,
    depthwise_kernel: Any,
    pointwise_kernel: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = (1, 1),
) -> KTensor:
    """Depthwise 2D convolution followed by a 1x1 convolution."""
    args = (strides, padding, data_format, dilation_rate)
    return _separable(x, (depthwise_kernel, pointwise_kernel), 2, args, "K.separable_conv2d")


def _output_shape(output_shape: Any, rank: int, fmt: str, where: str) -> tuple[int | None, ...]:
    """output_shape in channels_last order; None where it is only known at run time.

    Entries may be tensors (Keras builds them from `K.shape(x)`): those known while
    tracing count as ints; a batch or spatial dim that is not known is left to the
    transposed convolution's own geometry, which is what Keras asks for by default.
    """
    if isinstance(output_shape, KTensor):
        dims = static_ints(output_shape)
    elif isinstance(output_shape, list | tuple):
        dims = [_static_dim(d) for d in output_shape]
    else:
        dims = None
    if (
        dims is None
        or len(dims) != rank + 2
        or any(d is not None and d < 1 for d in dims[1:])
        or dims[-1 if fmt == "channels_last" else 1] is None
    ):
        raise ValueError(
            f"{where}: output_shape must be {rank + 2} dims in {fmt} order (ints, or scalar "
            f"tensors; batch and spatial dims may be None), got {output_shape!r}"
        )
    return tuple(dims) if fmt == "channels_last" else (dims[0], *dims[2:], dims[1])


def _static_dim(d: Any) -> int | None:
    if isinstance(d, KTensor):
        return static_int(d)
    try:
        return None if d is None else int(d)
    except (TypeError, ValueError):
        return -1  # refused by the caller with the whole output_shape in the message


def _transposed_pads(
    t: KTensor, w: KTensor, out: tuple[int | None, ...], params: tuple[Any, ...], where: str
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Padding of the dilated input so that a stride-1 convolution gives `out`'s dims."""
    strides, dilation, mode = params
    before, after = [], []
    for d, size in enumerate(t.shape[1:-1]):
        total, s = out[1 + d], strides[d]
        assert size is not None
        extent = (w.shape[d] - 1) * dilation[d] + 1  # type: ignore[operator]
        if total is None:  # Keras's default: the smallest output the forward maps to `size`
            total = size * s if mode == "same" else size * s + max(extent - s, 0)
        if mode == "same":
            expect, pb = -(-total // s), same_pads(STATIC, total, s, extent)[0]
        else:
            expect, pb = (total - extent) // s + 1, 0
        if size != expect:
            raise ValueError(
                f"{where}: output_shape {out[1:-1]} does not fit x of spatial shape "
                f"{t.shape[1:-1]}: a '{mode}' convolution of size {total} with stride {s} "
                f"and window {extent} gives {max(expect, 0)}, not {size}"
            )
        before.append(extent - 1 - pb)
        after.append(total - (size - 1) * s - 1 + pb)
    return tuple(before), tuple(after)


def _check_transpose(t: KTensor, w: KTensor, out: tuple[int | None, ...], where: str) -> None:
    """Channels, static spatial dims and batch of a transposed convolution's operands."""
    cc.check_channels(t, w.shape[-1], f"the kernel {w.shape}", where)  # type: ignore[arg-type]
    if out[-1] != w.shape[-2]:
        raise ValueError(
            f"{where}: output_shape has {out[-1]} channels but the kernel {w.shape} gives "
            f"{w.shape[-2]}"
        )
    if None in t.shape[1:-1]:
        raise ValueError(
            f"{where}: x must have static spatial dims (output_shape fixes them), got {t.shape}"
        )
    if None not in (out[0], t.shape[0]) and out[0] != t.shape[0]:
        raise ValueError(f"{where}: output_shape batch {out[0]} differs from x's {t.shape[0]}")


def _conv_transpose(
    x: Any, kernel: Any, output_shape: Any, args: tuple[Any, ...], rank: int, where: str
) -> KTensor:
    """Transposed convolution; kernel (*window, out_channels, in_channels)."""
    strides, padding, data_format, dilation_rate = args
    fmt = check_data_format(data_format, where)
    t = cc.to_last(cc.input_tensor(x, rank, where), fmt)
    w = cc.kernel_tensor(kernel, rank, where)
    st = cc.ints(strides, rank, "strides", where)
    dil = cc.ints(dilation_rate, rank, "dilation_rate", where)
    mode = cc.padding_mode(padding, where)
    out = _output_shape(output_shape, rank, fmt, where)
    _check_transpose(t, w, out, where)
    before, after = _transposed_pads(t, w, out, (st, dil, mode), where)
    ones = (1,) * rank
    y = cc.emit_conv(
        t, transposed_kernel(w, where), where, ones, dil, "explicit", lhs_dilation=st,
        pad_before=before, pad_after=after,
    )  # fmt: skip
    return cc.from_last(y, fmt)


def conv2d_transpose(
    x: Any,
    kernel: Any,
    output_shape: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    dilation_rate: Any = (1, 1),
) -> KTensor:
    """Transposed 2D convolution; kernel (rows, cols, out_channels, in_channels)."""
    args = (strides, padding, data_format, dilation_rate)
    return _conv_transpose(x, kernel, output_shape, args, 2, "K.conv2d_transpose")


def conv3d_transpose(
    x: Any,
    kernel: Any,
    output_shape: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: str | None = None,
) -> KTensor:
    """Transposed 3D convolution; kernel (depth, rows, cols, out_channels, in_channels)."""
    args = (strides, padding, data_format, 1)
    return _conv_transpose(x, kernel, output_shape, args, 3, "K.conv3d_transpose")


_DIM_ORDERINGS = {"th": "channels_first", "tf": "channels_last"}


def deconv2d(
    x: Any,
    kernel: Any,
    output_shape: Any,
    strides: Any = (1, 1),
    border_mode: str = "valid",
    dim_ordering: str = "th",
    image_shape: Any = None,
    filter_shape: Any = None,
) -> KTensor:
    """Keras 1 name of conv2d_transpose: dim_ordering 'th' is channels_first, 'tf'
    channels_last ('default': the image data format); the shape hints are not needed."""
    if dim_ordering == "default":
        fmt = image_data_format()
    elif dim_ordering in _DIM_ORDERINGS:
        fmt = _DIM_ORDERINGS[dim_ordering]
    else:
        raise ValueError(
            f"K.deconv2d: dim_ordering must be 'th', 'tf' or 'default', got {dim_ordering!r}"
        )
    mode = cc.padding_mode(border_mode, "K.deconv2d", name="border_mode")
    return _conv_transpose(x, kernel, output_shape, (strides, mode, fmt, 1), 2, "K.deconv2d")


__all__ = [
    "conv1d",
    "conv2d",
    "conv2d_transpose",
    "conv3d",
    "conv3d_transpose",
    "deconv2d",
    "depthwise_conv2d",
    "local_conv1d",
    "local_conv2d",
    "pool2d",
    "pool3d",
    "separable_conv1d",
    "separable_conv2d",
]
