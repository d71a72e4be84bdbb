"""`aotk.upsample_linear`: linear interpolation along one axis by an integer factor.

Output o of an axis of size n reads sources i0 = o // f and i1 = min(i0 + 1, n - 1) with
weight w = (o % f) / f, as TensorFlow 1's `resize_bilinear` (align_corners=False) does;
applied along the width and then the height it gives that op's bilinear resize.
`aotk.upsample_linear_grad` is its adjoint: each input gathers its outputs' cotangents,
weighted by 1 - w (or 1 at the clamped last input) from its own outputs and by w from the
outputs of the input before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import AnyFloat, IntegerAttr, IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const


@irdl_op_definition
class UpsampleLinearOp(AotkOp):
    """x with `axis` stretched `factor` times by linear interpolation (edge-clamped)."""

    name = "aotk.upsample_linear"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    factor = prop_def(IntegerAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class UpsampleLinearGradOp(AotkOp):
    """The cotangent of upsample_linear's input from the cotangent g of its result: `axis`
    shrinks `factor` times."""

    name = "aotk.upsample_linear_grad"
    g = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    factor = prop_def(IntegerAttr)
    traits = traits_def(Pure())


def infer_upsample(x: Attribute, *, axis: int, factor: int, **_: Any) -> Attribute:
    shape = shape_of(x)
    if not dtypes.is_float(elem_of(x)):
        raise TypeError(f"expected a float tensor, got {dtype_of(x)}")
    if not 0 <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for {fmt_shape(shape)}")
    if factor < 1:
        raise ValueError(f"factor must be >= 1, got {factor}")
    return tensor(elem_of(x), upsample_shape(STATIC, [shape], axis=axis, factor=factor))


def infer_upsample_grad(g: Attribute, *, axis: int, factor: int, **_: Any) -> Attribute:
    shape = shape_of(g)
    infer_upsample(g, axis=axis, factor=factor)
    d = shape[axis]
    if d is not None and d % factor:
        raise ValueError(f"axis {axis} of g {fmt_shape(shape)} is not a multiple of {factor}")
    return tensor(elem_of(g), upsample_grad_shape(STATIC, [shape], axis=axis, factor=factor))


def upsample_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, axis: int, factor: int
) -> list[Dim]:
    out = list(dims[0])
    out[axis] = a.mul(out[axis], factor)
    return out


def upsample_grad_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, axis: int, factor: int
) -> list[Dim]:
    out = list(dims[0])
    out[axis] = a.div(out[axis], factor)
    return out


def _weight(k: Kernel, rem: DimV, factor: int, ct: AnyFloat) -> SSAValue:
    """w = rem / factor in the compute type, rounded as in TensorFlow."""
    wide = k.b.insert(arith.IndexCastOp(k.index(rem), IntegerType(64)))
    r = k.b.insert(arith.SIToFPOp(wide.result, ct)).result
    # (o % f) / f exactly: a product by 1 / f is exact only for powers of two
    if factor & (factor - 1) == 0:
        return k.b.insert(arith.MulfOp(r, const(k.b, 1.0 / factor, ct))).result
    return k.b.insert(arith.DivfOp(r, const(k.b, float(factor), ct))).result


def _lower(k: Kernel, out: Buf, x: Buf, *, axis: int, factor: int) -> None:
    ct = cast(AnyFloat, compute_type(x.elem))
    with k.nest(out.dims, parallel=True) as ivs:
        o = ivs[axis]
        i0 = k.div(o, factor)
        i1 = k.min(k.add(i0, 1), k.sub(x.dims[axis], 1))
        w = _weight(k, k.sub(o, k.mul(i0, factor)), factor, ct)
        lo = k.load(x, [*ivs[:axis], i0, *ivs[axis + 1 :]])
        hi = k.load(x, [*ivs[:axis], i1, *ivs[axis + 1 :]])
        diff = k.b.insert(arith.SubfOp(hi, lo)).result
        step = k.b.insert(arith.MulfOp(diff, w)).result
        k.store(out, ivs, k.b.insert(arith.AddfOp(lo, step)).result)


def _np_upsample(x: np.ndarray, *, axis: int, factor: int) -> np.ndarray:
    n = x.shape[axis]
    o = np.arange(n * factor)
    i0 = o // factor
    i1 = np.minimum(i0 + 1, n - 1)
    wide = np.float32 if x.dtype == np.float16 else x.dtype  # kernels compute float16 in float32
    w = ((o % factor) / np.asarray(factor, wide)).astype(wide)
    w = w.reshape((1,) * axis + (-1,) + (1,) * (x.ndim - axis - 1))
    lo = np.take(x, i0, axis=axis).astype(wide)
    hi = np.take(x, i1, axis=axis).astype(wide)
    return (lo + (hi - lo) * w).astype(x.dtype)


def _lower_grad(k: Kernel, out: Buf, g: Buf, *, axis: int, factor: int) -> None:
    ct = cast(AnyFloat, compute_type(g.elem))
    zero, one = const(k.b, 0.0, ct), const(k.b, 1.0, ct)
    with k.nest(out.dims, parallel=True) as ivs:
        i = ivs[axis]
        last = k.b.insert(arith.CmpiOp(i, k.index(k.sub(out.dims[axis], 1)), "eq")).result
        has_prev = k.b.insert(arith.CmpiOp(i, k.index(0), "ugt")).result
        prev = k.sub(k.b.insert(arith.MaxUIOp(i, k.index(1))).result, 1)

        def term(r: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
            w = _weight(k, r, factor, ct)
            own_w = k.b.insert(arith.SelectOp(last, one, _sub(k, one, w))).result
            own = k.load(g, [*ivs[:axis], k.add(k.mul(i, factor), r), *ivs[axis + 1 :]])
            before = k.load(g, [*ivs[:axis], k.add(k.mul(prev, factor), r), *ivs[axis + 1 :]])
            from_prev = k.b.insert(arith.MulfOp(before, w)).result
            total = _add(k, acc[0], k.b.insert(arith.MulfOp(own, own_w)).result)
            return [_add(k, total, k.b.insert(arith.SelectOp(has_prev, from_prev, zero)).result)]

        k.store(out, ivs, k.fold_loop(factor, [zero], term)[0])


def _add(k: Kernel, a: SSAValue, c: SSAValue) -> SSAValue:
    return k.b.insert(arith.AddfOp(a, c)).result


def _sub(k: Kernel, a: SSAValue, c: SSAValue) -> SSAValue:
    return k.b.insert(arith.SubfOp(a, c)).result


def _np_upsample_grad(g: np.ndarray, *, axis: int, factor: int) -> np.ndarray:
    n = g.shape[axis] // factor
    wide = np.float32 if g.dtype == np.float16 else g.dtype
    moved = np.moveaxis(g.astype(wide), axis, -1)
    blocks = moved.reshape(*moved.shape[:-1], n, factor)
    w = (np.arange(factor) / np.asarray(factor, wide)).astype(wide)
    own_w = np.where(np.arange(n)[:, None] == n - 1, np.ones((), wide), 1 - w).astype(wide)
    out = (blocks * own_w).sum(-1)
    out[..., 1:] += (blocks[..., :-1, :] * w).sum(-1)
    return np.moveaxis(out, -1, axis).astype(g.dtype)


def _grad(g: Any, y: Any, x: Any, *, axis: int, factor: int) -> tuple[Any, ...]:
    from aotk.dialect.gradlib import emit

    return (emit(UpsampleLinearGradOp, g, axis=axis, factor=factor),)


def _grad_of_grad(g: Any, y: Any, x: Any, *, axis: int, factor: int) -> tuple[Any, ...]:
    """The adjoint of the adjoint is the interpolation itself."""
    from aotk.dialect.gradlib import emit

    return (emit(UpsampleLinearOp, g, axis=axis, factor=factor),)


register(
    OpDef(
        ir=UpsampleLinearOp,
        kind=Kind.OPAQUE,
        infer=infer_upsample,
        numpy=_np_upsample,
        lower=_lower,
        shape=upsample_shape,
        grad=_grad,
    )
)
register(
    OpDef(
        ir=UpsampleLinearGradOp,
        kind=Kind.OPAQUE,
        infer=infer_upsample_grad,
        numpy=_np_upsample_grad,
        lower=_lower_grad,
        shape=upsample_grad_shape,
        grad=_grad_of_grad,
    )
)
