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
from xdsl.dialects.builtin import DenseArrayBase, Float16Type, TensorType, i64
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute, SSAValue
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

from aotk import dtypes
from aotk.dialect.base import dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.conv import WindowedOp, tap_slices
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import conv_geometry as cg
from aotk.kernels.conv_geometry import Range
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import by_type, compute_type, const, convert
from aotk.kernels.window import PoolPadding, Window, member


class PoolMode(StrEnum):
    """What aotk.pool computes over each window."""

    MAX = "max"
    AVG = "avg"


@irdl_attr_definition
class PoolPaddingAttr(EnumAttribute[PoolPadding], SpacedOpaqueSyntaxAttribute):
    """aotk.pool's padding: `#aotk<pool_padding valid>` or `same`."""

    name = "aotk.pool_padding"


@irdl_attr_definition
class PoolModeAttr(EnumAttribute[PoolMode], SpacedOpaqueSyntaxAttribute):
    """`#aotk<pool_mode max>` or `avg`."""

    name = "aotk.pool_mode"


@irdl_op_definition
class PoolOp(WindowedOp):
    """Max or average over windows of channels_last `x`, per channel."""

    name = "aotk.pool"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    window = prop_def(DenseArrayBase)
    strides = prop_def(DenseArrayBase)
    padding = prop_def(PoolPaddingAttr)
    mode = prop_def(PoolModeAttr)
    traits = traits_def(Pure())


def pool_shape(a: DimArith, dims: Sequence[Sequence[Dim]], **attrs: Any) -> list[Dim]:
    """[N, *S, C] -> [N, *P, C]."""
    x = dims[0]
    return [x[0], *Window.of_pool(**attrs).out_dims(a, x[1:-1]), x[-1]]


def infer_pool(x: Attribute, *, mode: str, **attrs: Any) -> Attribute:
    xs = shape_of(x)
    if len(xs) < 3:
        raise ValueError(f"expected x [N, *spatial, C] of rank >= 3, got {fmt_shape(xs)}")
    win = Window.of_pool(**attrs)
    if win.rank != len(xs) - 2:
        raise ValueError(f"window must be {len(xs) - 2} ints >= 1, got {win.window}")
    mode = member(PoolMode, "mode", mode)
    elem = elem_of(x)
    if dtypes.is_bool(elem) or (mode == PoolMode.AVG and not dtypes.is_float(elem)):
        kinds = "float" if mode == PoolMode.AVG else "numeric"
        raise TypeError(f"{mode} pooling needs a {kinds} tensor, got {dtype_of(x)}")
    win.check_fits(xs[1:-1])
    return tensor(elem, pool_shape(STATIC, [xs], **attrs))


def np_pool(x: np.ndarray, *, mode: str, **attrs: Any) -> np.ndarray:
    """The oracle: pad with a neutral value, reduce each strided window tap by tap."""
    win = Window.of_pool(**attrs)
    sizes = x.shape[1:-1]
    outs = win.out_dims(STATIC, sizes)
    pads = [win.pads(STATIC, s, d) for d, s in enumerate(sizes)]
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    wide = x.astype(np.float64) if mode == PoolMode.AVG else x
    init = low if mode == PoolMode.MAX else 0
    xp = np.pad(wide, [(0, 0), *pads, (0, 0)], constant_values=init)
    ones = np.pad(np.ones(sizes), pads)
    acc = np.full((x.shape[0], *outs, x.shape[-1]), init, dtype=xp.dtype)
    count = np.zeros(outs)
    for tap in np.ndindex(*win.window):
        key = tap_slices(win, tap, outs)
        patch = xp[(slice(None), *key)]
        acc = np.maximum(acc, patch) if mode == PoolMode.MAX else acc + patch
        count += ones[key]
    if mode == PoolMode.AVG:
        acc = acc / count[..., None]
    return acc.astype(x.dtype)


def window_spans(k: Kernel, win: Window, sizes: Sequence[DimV], ps: Sequence[Any]) -> list[Range]:
    """Per axis, the input range [lo, hi) under the window of output position `ps`."""
    spans: list[Range] = []
    for d, p in enumerate(ps):
        start = k.sub(k.mul(p, win.strides[d]), win.pads(k, sizes[d], d)[0])
        spans.append((k.max(start, 0), k.min(k.add(start, win.window[d]), sizes[d])))
    return spans


_COMBINE = {
    PoolMode.MAX: by_type(arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp),
    PoolMode.AVG: by_type(arith.AddfOp, arith.AddiOp),
}


def _lower(k: Kernel, out: Buf, x: Buf, *, mode: str, **attrs: Any) -> None:
    win = Window.of_pool(**attrs)
    full: list[Range] = [(0, d) for d in out.dims[1:-1]]
    xst, ost = k.strides(x.dims), k.strides(out.dims)
    init = const(k.b, _identity(mode, x.elem), compute_type(x.elem))
    # threads split images and output rows: each position writes only its own row
    with cg.image_box(k, x.dims[0], full) as (n, ps):
        spans = window_spans(k, win, x.dims[1:-1], ps)
        where = (n, k.linear([n, *ps], ost[:-1]), spans, xst)
        count = window_count(k, spans, x.elem) if mode == PoolMode.AVG else None
        rows = _scalar_rows if isinstance(x.elem, Float16Type) else _rows
        rows(k, out, x, where, init, _COMBINE[PoolMode(mode)], count, win.window)


def _scalar_rows(
    k: Kernel,
    out: Buf,
    x: Buf,
    where: tuple[SSAValue, DimV, list[Range], list[DimV]],
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
    where: tuple[SSAValue, DimV, list[Range], list[DimV]],
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


def window_count(k: Kernel, spans: Sequence[Range], elem: Attribute) -> SSAValue:
    """The number of input elements under the window, as a float of the compute type."""
    total = k.product([k.sub(hi, lo) for lo, hi in spans])
    as_int = k.b.insert(arith.IndexCastOp(k.index(total), i64)).result
    return convert(k.b, as_int, i64, compute_type(elem))


def _identity(mode: str, elem: Attribute) -> float | int:
    if mode == PoolMode.AVG:
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
        shape=pool_shape,
        grad=_grad,
    )
)
