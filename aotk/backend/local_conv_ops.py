"""Locally connected (unshared-weight) convolutions of the Keras API.

The window taps are gathered with one strided slice each into patches [N, L, F] (L output
positions, F = window size * channels, in Keras's feature order: (taps, channels) for
channels_last, (channels, taps) for channels_first). Each position then has its own
[F, filters] weights: a 1x1 convolution over the batch axis with one group per position.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aotk.backend import conv_common as cc
from aotk.backend.config import check_data_format
from aotk.backend.shape_ops import concatenate, permute_dimensions, reshape
from aotk.backend.tensors import as_tensor
from aotk.dialect import shape as sh
from aotk.dialect import trace
from aotk.dialect.trace import KTensor


def _check_shapes(
    t: KTensor,
    w: KTensor,
    size: tuple[int, ...],
    st: tuple[int, ...],
    out: tuple[int, ...],
    where: str,
) -> None:
    """Static dims, a kernel of (positions, window * channels, filters), windows in range."""
    spatial, channels = t.shape[1:-1], t.shape[-1]
    if None in spatial or channels is None:
        raise ValueError(
            f"{where}: inputs must have static spatial dims and channels, got {t.shape}"
        )
    if w.shape[:2] != (math.prod(out), math.prod(size) * channels):
        raise ValueError(
            f"{where}: kernel shape {w.shape} should be ({math.prod(out)}, "
            f"{math.prod(size) * channels}, filters) for {out} positions of a {size} window "
            f"over {channels} channels"
        )
    for d, n in enumerate(spatial):
        if (out[d] - 1) * st[d] + size[d] > n:  # type: ignore[operator]
            raise ValueError(
                f"{where}: {out[d]} positions with stride {st[d]} and window {size[d]} "
                f"need {(out[d] - 1) * st[d] + size[d]} steps on spatial axis {d}, got {n}"
            )


def _local_conv(
    inputs: Any, kernel: Any, window: Any, strides: Any, out: tuple[int, ...], args: Any
) -> KTensor:
    data_format, where = args
    fmt = check_data_format(data_format, where)
    rank = len(out)
    t = cc.input_tensor(inputs, rank, where, "inputs")
    w = as_tensor(kernel, where=where)
    if w.ndim != 3 or None in w.shape:
        raise ValueError(
            f"{where}: kernel must have a static shape (output positions, feature_dim, "
            f"filters), got {w.shape}"
        )
    size = cc.ints(window, rank, "kernel_size", where)
    st = cc.ints(strides, rank, "strides", where)
    t = cc.to_last(t, fmt)
    _check_shapes(t, w, size, st, out, where)
    positions, features, filters = w.shape
    assert positions is not None and features is not None and filters is not None
    patches = _patches(t, size, st, out, fmt, where)
    flat = reshape(patches, (1, -1, positions * features))
    weights = reshape(permute_dimensions(w, (1, 0, 2)), (1, features, positions * filters))
    y = cc.emit_conv(flat, weights, where, (1,), (1,), "valid", groups=positions)
    batch = -1 if t.shape[0] is None else t.shape[0]
    return cc.from_last(reshape(y, (batch, *out, filters)), fmt)


def _patches(
    t: KTensor,
    size: tuple[int, ...],
    strides: tuple[int, ...],
    out: tuple[int, ...],
    fmt: str,
    where: str,
) -> KTensor:
    """[N, *out, taps, C] (channels_last) or [N, *out, C, taps] (channels_first)."""
    rank, channels = len(out), t.shape[-1]
    batch = -1 if t.shape[0] is None else t.shape[0]
    taps = []
    for tap in np.ndindex(*size):
        starts = [int(a) for a in tap]
        stops = [a + (o - 1) * s + 1 for a, o, s in zip(starts, out, strides, strict=True)]
        piece = trace.emit(
            sh.SliceOp,
            t,
            where=where,
            start=(0, *starts, 0),
            stop=(sh.FULL, *stops, sh.FULL),
            step=(1, *strides, 1),
        )
        taps.append(reshape(piece, (batch, *out, 1, channels)))  # type: ignore[arg-type]
    patches = concatenate(taps, axis=rank + 1)
    if fmt == "channels_first":
        patches = permute_dimensions(patches, (*range(rank + 1), rank + 2, rank + 1))
    return patches


def local_conv1d(
    inputs: Any, kernel: Any, kernel_size: Any, strides: Any, data_format: str | None = None
) -> KTensor:
    """1D convolution with unshared weights; kernel (output_length, feature_dim, filters)."""
    w = as_tensor(kernel, where="K.local_conv1d")
    length = w.shape[0] if w.ndim == 3 and w.shape[0] is not None else 0
    args = (data_format, "K.local_conv1d")
    return _local_conv(inputs, w, kernel_size, strides, (length,), args)


def local_conv2d(
    inputs: Any,
    kernel: Any,
    kernel_size: Any,
    strides: Any,
    output_shape: Any,
    data_format: str | None = None,
) -> KTensor:
    """2D convolution with unshared weights; kernel (output_row * output_col, feature_dim,
    filters), output_shape (output_row, output_col)."""
    out = cc.ints(output_shape, 2, "output_shape", "K.local_conv2d")
    return _local_conv(inputs, kernel, kernel_size, strides, out, (data_format, "K.local_conv2d"))


__all__ = ["local_conv1d", "local_conv2d"]
