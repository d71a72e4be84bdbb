"""`aotk.pool`: max and average pooling over 1 to 3 spatial dims, channels_last.

Padding is "valid" or TF's "same"; padded elements never count: a max ignores them and an
average divides by the number of input elements under the window, as TensorFlow does.
Lowering: per output position, the window's in-bounds range is computed per axis (no
per-element checks); float32/64 and integers accumulate along the contiguous channel row
of the output (LLVM vectorizes it), float16 in a float32 register per element.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, Float16Type, StringAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.conv import same_pads
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import conv_geometry as cg
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import by_type, compute_type, const, convert

MODES = ("max", "avg")


@irdl_op_definition
class PoolOp(AotkOp):
    """Max or average over windows of channels_last `x`, per channel."""

    name = "aotk.pool"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    window = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    padding = prop_def(StringAttr)  # "valid" or "same"
    mode = prop_def(StringAttr)  # "max" or "avg"
    traits = traits_def(Pure())


def pooled_dim(size: int, window: int, stride: int, padding: str) -> int:
    if padding == "same":
        return -(-size // stride)
    return (size - window) // stride + 1


def infer_pool(
    x: Attribute,
    *,
    window: Sequence[int],
    strides: Sequence[int],
    padding: str,
    mode: str,
    **_: Any,
) -> Attribute:
    xs = shape_of(x)
    n = len(xs) - 2
    if n < 1:
        raise ValueError(f"expected x [N, *spatial, C] of rank >= 3, got {fmt_shape(xs)}")
    for name, values in (("window", window), ("strides", strides)):
        if len(values) != n or any(v < 1 for v in values):
            raise ValueError(f"{name} must be {n} ints >= 1, got {tuple(values)}")
    if padding not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}")
    if mode not in MODES:
        raise ValueError(f"mode must be 'max' or 'avg', got {mode!r}")
    elem = elem_of(x)
    if dtypes.is_bool(elem) or (mode == "avg" and not dtypes.is_float(elem)):
        kinds = "float" if mode == "avg" else "numeric"
        raise TypeError(f"{mode} pooling needs a {kinds} tensor, got {dtype_of(x)}")
    out: list[int | None] = [xs[0]]
    for d in range(n):
        size = xs[1 + d]
        if size is not None and padding == "valid" and size < window[d]:
            raise ValueError(
                f"spatial axis {d} of size {size} is smaller than the window {window[d]}"
            )
        out.append(None if size is None else pooled_dim(size, window[d], strides[d], padding))
    return tensor(elem, [*out, xs[-1]])


def np_pool(
    x: np.ndarray, *, window: Sequence[int], strides: Sequence[int], padding: str, mode: str
) -> np.ndarray:
    """The oracle: pad with a neutral value, reduce each strided window tap by tap."""
    sizes = x.shape[1:-1]
    outs = [pooled_dim(s, k, st, padding) for s, k, st in zip(sizes, window, strides, strict=True)]
    pads = [
        same_pads(s, st, k) if padding == "same" else (0, 0)
        for s, k, st in zip(sizes, window, strides, strict=True)
    ]
    width = [(0, 0), *pads, (0, 0)]
    if x.dtype.kind == "f":
        low = -np.inf
    else:
        low = np.iinfo(x.dtype).min
    wide = x.astype(np.float64) if mode == "avg" else x
    xp = np.pad(wide, width, constant_values=low if mode == "max" else 0)
    ones = np.pad(np.ones(sizes), pads)
    acc = np.full((x.shape[0], *outs, x.shape[-1]), low if mode == "max" else 0, dtype=xp.dtype)
    count = np.zeros(outs)
    for tap in np.ndindex(*window):
        key = tuple(
            slice(t, t + (o - 1) * st + 1 if o else t, st)
            for t, o, st in zip(tap, outs, strides, strict=True)
        )
        patch = xp[(slice(None), *key)]
        acc = np.maximum(acc, patch) if mode == "max" else acc + patch
        count += ones[key]
    if mode == "avg":
        acc = acc / count[..., None]
    return acc.astype(x.dtype)


def window_pads(k: Kernel, size: DimV, window: int, stride: int, padding: str) -> tuple[DimV, DimV]:
    if padding == "same":
        before = cg.same_pads(k, size, stride, window)[0]
        return before, k.div(k.add(size, stride - 1), stride)
    return 0, k.div(k.add(k.sub(size, window), stride), stride)


def _dims(
    k: Kernel, ins: Sequence[Buf], result_type: Attribute, *, window: Any, strides: Any, **a: Any
) -> list[DimV]:
    x = ins[0]
    spatial = [
        window_pads(k, x.dims[1 + d], window[d], strides[d], a["padding"])[1]
        for d in range(len(window))
    ]
    return [x.dims[0], *spatial, x.dims[-1]]


_COMBINE = {
    "max": by_type(arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp),
    "avg": by_type(arith.AddfOp, arith.AddiOp),
}


def _lower(
    k: Kernel, out: Buf, x: Buf, *, window: Any, strides: Any, padding: str, mode: str
) -> None:
    pads = [
        window_pads(k, x.dims[1 + d], window[d], strides[d], padding)[0] for d in range(len(window))
    ]
    full: list[cg.Range] = [(0, d) for d in out.dims[1:-1]]
    xst, ost = k.strides(x.dims), k.strides(out.dims)
    init = const(k.b, _identity(mode, x.elem), compute_type(x.elem))
    # threads split images and output rows: each position writes only its own row
    with cg.image_box(k, x.dims[0], full) as (n, ps):
        spans: list[cg.Range] = []
        for d, p in enumerate(ps):
            start = k.sub(k.mul(p, strides[d]), pads[d])
            spans.append((cg.smax(k, start, 0), k.min(k.add(start, window[d]), x.dims[1 + d])))
        where = (n, k.linear([n, *ps], ost[:-1]), spans, xst)
        count = window_count(k, spans, x.elem) if mode == "avg" else None
        rows = _scalar_rows if isinstance(x.elem, Float16Type) else _rows
        rows(k, out, x, where, init, _COMBINE[mode], count, window)


def _scalar_rows(
    k: Kernel,
    out: Buf,
    x: Buf,
    where: tuple[SSAValue, DimV, list[cg.Range], list[DimV]],
    init: SSAValue,
    combine: Any,
    count: SSAValue | None,
    window: Sequence[int],
) -> None:
    """Per channel, fold the window in a register (float16: rounded once, at the end)."""
    n, obase, spans, xst = where
    with k.loop(x.dims[-1]) as c:

        def tap(xi: Sequence[SSAValue], acc: Sequence[SSAValue]) -> list[SSAValue]:
            v = k.load_flat(x, k.add(k.linear([n, *xi], xst[:-1]), c))
            return [combine(k.b, [acc[0], v], [x.elem] * 2, x.elem)]

        lows, highs = [lo for lo, _ in spans], [hi for _, hi in spans]
        acc = cg.fold_nest(k, highs, [init], tap, lows, window)[0]
        _finish(k, out, k.add(obase, c), acc, count)


def _rows(
    k: Kernel,
    out: Buf,
    x: Buf,
    where: tuple[SSAValue, DimV, list[cg.Range], list[DimV]],
    init: SSAValue,
    combine: Any,
    count: SSAValue | None,
    window: Sequence[int],
) -> None:
    """Accumulate the window into the output row, the channel loop innermost."""
    n, obase, spans, xst = where
    channels = x.dims[-1]
    with k.loop(channels) as c:
        k.store_flat(out, k.add(obase, c), init)
    with cg.box(k, spans, window) as xi:
        xbase = k.linear([n, *xi], xst[:-1])
        with k.loop(channels) as c:
            at = k.add(obase, c)
            v = combine(
                k.b, [k.load_flat(out, at), k.load_flat(x, k.add(xbase, c))], [x.elem] * 2, x.elem
            )
            k.store_flat(out, at, v)
    if count is not None:
        with k.loop(channels) as c:
            at = k.add(obase, c)
            _finish(k, out, at, k.load_flat(out, at), count)


def _finish(k: Kernel, out: Buf, at: DimV, acc: SSAValue, count: SSAValue | None) -> None:
    if count is not None:
        acc = k.b.insert(arith.DivfOp(acc, count)).result
    k.store_flat(out, at, acc)


def window_count(k: Kernel, spans: Sequence[cg.Range], elem: Attribute) -> SSAValue:
    """The number of input elements under the window, as a float of the compute type."""
    total = k.product([k.sub(hi, lo) for lo, hi in spans])
    as_int = k.b.insert(arith.IndexCastOp(k.index(total), i64)).result
    return convert(k.b, as_int, i64, compute_type(elem))


def _identity(mode: str, elem: Attribute) -> float | int:
    if mode == "avg":
        return 0
    if dtypes.is_float(elem):
        return float("-inf")
    return int(np.iinfo(dtypes.numpy_dtype(elem)).min)


def _grad(g: Any, y: Any, x: Any, **attrs: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib
    from aotk.dialect.pool_grad import PoolGradOp

    return (lib.emit(PoolGradOp, g, x, y, **attrs),)


register(
    OpDef(
        ir=PoolOp,
        kind=Kind.OPAQUE,
        infer=infer_pool,
        numpy=np_pool,
        lower=_lower,
        dims=_dims,
        grad=_grad,
    )
)
