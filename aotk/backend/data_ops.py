"""Shape and data movement of the Keras API: repeat, stack, gather, padding, resizing.

Repeats, tiles and nearest-neighbour resizes are one broadcast between two free views;
`K.tile` lives in `tile_ops.py`, `batch_dot` and `in_top_k` in `batch_ops.py`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from aotk import dtypes
from aotk.backend.batch_ops import batch_dot, in_top_k
from aotk.backend.config import check_data_format, floatx
from aotk.backend.math_ops import equal
from aotk.backend.shape_ops import permute_dimensions, regroup
from aotk.backend.static_eval import static_value
from aotk.backend.tensors import as_tensor, cast
from aotk.dialect import data as dd
from aotk.dialect import gather as dg
from aotk.dialect import shape as sh
from aotk.dialect import trace
from aotk.dialect import upsample as up
from aotk.dialect.base import normalize_axis
from aotk.dialect.trace import KTensor


def int_arg(value: Any, where: str, name: str, minimum: int = 0) -> int:
    """A Python int >= `minimum`, or a clear TypeError/ValueError."""
    if isinstance(value, KTensor):
        raise TypeError(f"{where}: {name} must be a Python int, got a tensor {value!r}")
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{where}: {name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"{where}: {name} must be an int >= {minimum}, got {value}")
    return int(value)


def _axis(axis: Any, rank: int, where: str) -> int:
    try:
        return normalize_axis(axis, rank, "axis")
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}: {err}") from None


def _rank(t: KTensor, rank: int, what: str, where: str) -> None:
    if t.ndim != rank:
        raise ValueError(f"{where}: expected a {rank}D tensor {what}, got shape {t.shape}")


def stretch(t: KTensor, reps: dict[int, int], where: str, outer: bool = False) -> KTensor:
    """Repeat each element `reps[a]` times along axis a (whole axis when `outer`)."""
    reps = {a: r for a, r in reps.items() if r != 1}
    if not reps:
        return t
    expand: list[int | tuple[int, ...]] = []
    target: list[int] = []
    merge: list[tuple[int, ...]] = []
    for a in range(t.ndim):
        pos = len(expand)
        if a not in reps:
            merge.append((pos,))
            expand.append((a,))
            target.append(-1)
            continue
        merge.append((pos, pos + 1))
        expand += [1, (a,)] if outer else [(a,), 1]
        target += [reps[a], -1] if outer else [-1, reps[a]]
    wide = trace.emit(dd.BroadcastToOp, regroup(t, expand, where), where=where, shape=target)
    return regroup(wide, merge, where)


def repeat(x: Any, n: int) -> KTensor:
    """(samples, dim) -> (samples, n, dim)."""
    t = as_tensor(x, where="K.repeat")
    _rank(t, 2, "(samples, dim)", "K.repeat")
    n = int_arg(n, "K.repeat", "n")
    return trace.emit(
        dd.BroadcastToOp,
        regroup(t, [(0,), 1, (1,)], "K.repeat"),
        where="K.repeat",
        shape=(-1, n, -1),
    )


def repeat_elements(x: Any, rep: int, axis: int) -> KTensor:
    """Repeat each element `rep` times along `axis`, like np.repeat."""
    t = as_tensor(x, where="K.repeat_elements")
    rep = int_arg(rep, "K.repeat_elements", "rep")
    out = stretch(t, {_axis(axis, t.ndim, "K.repeat_elements"): rep}, "K.repeat_elements")
    out._keras_shape = out.shape  # as TF's backend marks it (Keras's backend suite asks)
    return out


def stack(x: Any, axis: int = 0) -> KTensor:
    """Join a list of same-shape tensors along a new axis (a tensor: its axis 0 moves)."""
    if isinstance(x, KTensor):  # np.stack semantics: the slices along axis 0 are stacked
        if x.ndim == 0:
            raise ValueError("K.stack: cannot stack the slices of a scalar")
        a = _axis(axis, x.ndim, "K.stack")
        order = list(range(1, x.ndim))
        order.insert(a, 0)
        return permute_dimensions(x, order)
    if not isinstance(x, list | tuple) or not x:
        raise ValueError(f"K.stack: expected a non-empty list of tensors, got {x!r}")
    # numbers beside tensors take the tensors' dtype, as in TF (Keras stacks [1, K.size(y)])
    dtype = next((v.dtype for v in x if isinstance(v, KTensor)), None)
    ts = [as_tensor(v, dtype, where="K.stack") for v in x]
    for i, t in enumerate(ts[1:], 1):
        if t.ndim != ts[0].ndim or any(
            a != b and None not in (a, b) for a, b in zip(t.shape, ts[0].shape, strict=True)
        ):
            raise ValueError(f"K.stack: x[{i}] has shape {t.shape}, x[0] has {ts[0].shape}")
        if t.dtype != ts[0].dtype:
            raise TypeError(f"K.stack: x[{i}] has dtype {t.dtype}, x[0] has {ts[0].dtype}")
    a = _axis(axis, ts[0].ndim + 1, "K.stack")
    spec: list[int | tuple[int, ...]] = [(i,) for i in range(ts[0].ndim)]
    spec.insert(a, 1)
    parts = [regroup(t, spec, "K.stack") for t in ts]
    if len(parts) == 1:
        return parts[0]
    return trace.emit(sh.ConcatOp, *parts, where="K.stack", axis=a)


def reverse(x: Any, axes: Any) -> KTensor:
    """Reverse the element order along `axes` (an int or a list of ints)."""
    t = as_tensor(x, where="K.reverse")
    items = [axes] if isinstance(axes, int | np.integer) else axes
    if isinstance(items, str) or not isinstance(items, Sequence):
        raise TypeError(f"K.reverse: axes must be an int or a list of ints, got {axes!r}")
    norm = [_axis(a, t.ndim, "K.reverse") for a in items]
    if len(set(norm)) != len(norm):
        raise ValueError(f"K.reverse: axes {tuple(items)} repeat an axis of rank {t.ndim}")
    if not norm:
        return t
    return trace.emit(sh.SliceOp, t, where="K.reverse", **sh.reversal(t.ndim, norm))


def slice(x: Any, start: Any, size: Any) -> KTensor:
    """x[start[i]:start[i] + size[i]] on every axis; size -1 takes the rest of the axis."""
    t = as_tensor(x, where="K.slice")
    where = "K.slice"
    for name, v in (("start", start), ("size", size)):
        if isinstance(v, KTensor) or not isinstance(v, Sequence | np.ndarray):
            raise TypeError(f"{where}: {name} must be a list of {t.ndim} ints, got {v!r}")
        if len(v) != t.ndim:
            raise ValueError(
                f"{where}: {name} must be a list of {t.ndim} ints (one per axis of {t.shape}), "
                f"got {v!r}"
            )
    first = [int_arg(s, where, f"start[{i}]", minimum=-(2**62)) for i, s in enumerate(start)]
    sizes = [int_arg(s, where, f"size[{i}]", minimum=-1) for i, s in enumerate(size)]
    stops = [sh.FULL if z == -1 else s + z for s, z in zip(first, sizes, strict=True)]
    return trace.emit(
        sh.SliceOp, t, where=where, start=tuple(first), stop=tuple(stops), step=(1,) * t.ndim
    )


def _indices(indices: Any, where: str) -> KTensor:
    """An integer index tensor (Python lists and arrays become constants)."""
    if not isinstance(indices, KTensor):
        array = np.asarray(indices)
        if array.dtype.kind not in "iu":
            raise TypeError(f"{where}: indices must be integers, got {array.dtype} {indices!r}")
        indices = as_tensor(array, where=where)
    if not dtypes.is_int(dtypes.element_type(indices.dtype)):
        raise TypeError(f"{where}: indices must be an integer tensor, got {indices.dtype}")
    return indices


def gather(reference: Any, indices: Any) -> KTensor:
    """reference[indices] along axis 0; negative indices count from the end, indices out
    of [-n, n) give zeros."""
    ref = as_tensor(reference, where="K.gather")
    if ref.ndim == 0:
        raise ValueError("K.gather: reference must have rank >= 1, got a scalar")
    idx = _indices(indices, "K.gather")
    return trace.emit(dg.GatherOp, ref, idx, where="K.gather", axis=0, batch_dims=0)


def one_hot(indices: Any, num_classes: int) -> KTensor:
    """(...) integer classes -> (..., num_classes) of floatx; out-of-range rows are zeros."""
    idx = _indices(indices, "K.one_hot")
    n = int_arg(num_classes, "K.one_hot", "num_classes")
    if idx.dtype != "int64":
        idx = cast(idx, "int64")
    classes = trace.emit(dg.IotaOp, where="K.one_hot", start=0.0, step=1.0, size=n, dtype="int64")
    column = regroup(idx, [*((i,) for i in range(idx.ndim)), 1], "K.one_hot")
    return cast(equal(column, classes), floatx())


def _number(value: Any, where: str, name: str) -> float | int:
    if isinstance(value, KTensor):
        known = static_value(value) if value.ndim == 0 else None
        if known is None:
            raise TypeError(
                f"{where}: {name} must be a number or a scalar tensor known while tracing; "
                f"this one would make the result's length depend on data: {value!r}"
            )
        value = known.item()
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"{where}: {name} must be a number, got {value!r}")
    return value.item() if isinstance(value, np.generic) else value


def arange(start: Any, stop: Any = None, step: Any = 1, dtype: str = "int32") -> KTensor:
    """1D range [start, stop) by `step` (one argument: [0, start)), in `dtype`."""
    where = "K.arange"
    lo = _number(start, where, "start")
    hi = None if stop is None else _number(stop, where, "stop")
    delta = _number(step, where, "step")
    if hi is None:
        lo, hi = 0, lo
    if delta == 0:
        raise ValueError(f"{where}: step must not be 0")
    if all(isinstance(v, int) for v in (lo, hi, delta)):
        size = len(range(lo, hi, delta))  # type: ignore[arg-type]
    else:
        size = max(math.ceil((hi - lo) / delta), 0)
    name = dtypes.normalize(dtype, f"{where}: dtype")
    return trace.emit(
        dg.IotaOp, where=where, start=float(lo), step=float(delta), size=size, dtype=name
    )


def _pairs(padding: Any, n: int, where: str) -> list[tuple[int, int]]:
    """`n` (before, after) pairs of non-negative ints."""
    groups = [padding] if n == 1 else padding
    if not isinstance(groups, Sequence) or len(groups) != n:
        raise ValueError(f"{where}: padding must be {n} pairs of ints, got {padding!r}")
    out = []
    for i, pair in enumerate(groups):
        if not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(f"{where}: padding[{i}] must be a pair of ints, got {pair!r}")
        out.append(tuple(int_arg(p, where, f"padding[{i}][{j}]") for j, p in enumerate(pair)))
    return out  # type: ignore[return-value]


def _pad(t: KTensor, pads: dict[int, tuple[int, int]], where: str) -> KTensor:
    before = tuple(pads.get(a, (0, 0))[0] for a in range(t.ndim))
    after = tuple(pads.get(a, (0, 0))[1] for a in range(t.ndim))
    if not any(before) and not any(after):
        return t
    return trace.emit(dd.PadOp, t, where=where, before=before, after=after, value=0.0)


def temporal_padding(x: Any, padding: Any = (1, 1)) -> KTensor:
    """Zero-pad axis 1 of a (batch, steps, features) tensor."""
    t = as_tensor(x, where="K.temporal_padding")
    _rank(t, 3, "(batch, steps, features)", "K.temporal_padding")
    pad = _pairs(padding, 1, "K.temporal_padding")
    return _pad(t, {1: pad[0]}, "K.temporal_padding")


def _spatial_axes(data_format: str | None, n: int, where: str) -> list[int]:
    fmt = check_data_format(data_format, where)
    return list(range(2, 2 + n)) if fmt == "channels_first" else list(range(1, 1 + n))


def spatial_2d_padding(
    x: Any, padding: Any = ((1, 1), (1, 1)), data_format: str | None = None
) -> KTensor:
    """Zero-pad the rows and columns of a 4D tensor."""
    where = "K.spatial_2d_padding"
    axes = _spatial_axes(data_format, 2, where)
    t = as_tensor(x, where=where)
    _rank(t, 4, "(batch, ...) with 2 spatial axes", where)
    return _pad(t, dict(zip(axes, _pairs(padding, 2, where), strict=True)), where)


def spatial_3d_padding(
    x: Any, padding: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None
) -> KTensor:
    """Zero-pad the depth, rows and columns of a 5D tensor."""
    where = "K.spatial_3d_padding"
    axes = _spatial_axes(data_format, 3, where)
    t = as_tensor(x, where=where)
    _rank(t, 5, "(batch, ...) with 3 spatial axes", where)
    return _pad(t, dict(zip(axes, _pairs(padding, 3, where), strict=True)), where)


def resize_images(
    x: Any,
    height_factor: int,
    width_factor: int,
    data_format: str | None,
    interpolation: str = "nearest",
) -> KTensor:
    """Upscale rows and columns by integer factors, by 'nearest' or 'bilinear' sampling."""
    where = "K.resize_images"
    rows, cols = _spatial_axes(data_format, 2, where)
    t = as_tensor(x, where=where)
    _rank(t, 4, "(batch, ...) with 2 spatial axes", where)
    fh = int_arg(height_factor, where, "height_factor", minimum=1)
    fw = int_arg(width_factor, where, "width_factor", minimum=1)
    if interpolation == "nearest":
        return stretch(t, {rows: fh, cols: fw}, where)
    if interpolation != "bilinear":
        raise ValueError(
            f"{where}: interpolation should be one of 'nearest' or 'bilinear', "
            f"got {interpolation!r}"
        )
    if not dtypes.is_float(dtypes.element_type(t.dtype)):
        t = cast(t, floatx())
    # columns first, then rows: the order of TensorFlow's bilinear arithmetic
    for axis, factor in ((cols, fw), (rows, fh)):
        if factor != 1:
            t = trace.emit(up.UpsampleLinearOp, t, where=where, axis=axis, factor=factor)
    return t


def resize_volumes(
    x: Any, depth_factor: int, height_factor: int, width_factor: int, data_format: str | None
) -> KTensor:
    """Upscale depth, rows and columns of a 5D tensor by repeating elements."""
    where = "K.resize_volumes"
    axes = _spatial_axes(data_format, 3, where)
    t = as_tensor(x, where=where)
    _rank(t, 5, "(batch, ...) with 3 spatial axes", where)
    names = ("depth_factor", "height_factor", "width_factor")
    factors = [
        int_arg(f, where, name, minimum=1)
        for f, name in zip((depth_factor, height_factor, width_factor), names, strict=True)
    ]
    return stretch(t, dict(zip(axes, factors, strict=True)), where)


__all__ = [
    "arange",
    "batch_dot",
    "gather",
    "in_top_k",
    "one_hot",
    "repeat",
    "repeat_elements",
    "resize_images",
    "resize_volumes",
    "reverse",
    "slice",
    "spatial_2d_padding",
    "spatial_3d_padding",
    "stack",
    "temporal_padding",
]
