"""`aotk.logsumexp`: log(sum(exp(x))) along the last axis, as one kernel.

`K.logsumexp` over the last axis alone emits it; over other axes it stays the
composition, whose result it matches: shifted by the maximum when that is finite, so rows
of -inf give -inf and +inf or NaN propagate. The lowering is `kernels/row_reductions.py`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import row_reductions
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, Kernel


@irdl_op_definition
class LogSumExpOp(AotkOp):
    """log(sum(exp(x))) along the last axis of `x`, which the result drops."""

    name = "aotk.logsumexp"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _infer(x: Attribute, **_: Any) -> Attribute:
    if not dtypes.is_float(elem_of(x)):
        raise TypeError(f"expected a float tensor, got {dtype_of(x)}")
    shape = shape_of(x)
    if not shape or shape[-1] == 0:
        raise ValueError(
            f"expected a tensor whose last axis is not empty (the maximum is undefined), "
            f"got {fmt_shape(shape)}"
        )
    return tensor(elem_of(x), _shape(STATIC, [shape]))


def _shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    return list(dims[0][:-1])


def _numpy(x: np.ndarray) -> np.ndarray:
    """The composition K.logsumexp is elsewhere, in the compute type (float32 for
    float16)."""
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        peak = wide.max(axis=-1, keepdims=True)
        shift = np.where(np.abs(peak) < np.inf, peak, 0)
        total = np.log(np.exp(wide - shift).sum(axis=-1)) + shift[..., 0]
    return total.astype(x.dtype)


def _lower(k: Kernel, out: Buf, x: Buf) -> None:
    row_reductions.emit_logsumexp(k, out, x)


def _grad(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    """dx = g * exp(x - y) along the last axis: g times the softmax of the row."""
    from aotk.dialect import gradlib as lib
    from aotk.dialect.unary import ExpOp
    from aotk.dialect.views import ExpandDimsOp

    last = (x.ndim - 1,)
    weights = lib.emit(ExpOp, lib.sub(x, lib.emit(ExpandDimsOp, y, axes=last)))
    return (lib.mul(lib.emit(ExpandDimsOp, g, axes=last), weights),)


register(
    OpDef(
        ir=LogSumExpOp,
        kind=Kind.OPAQUE,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        grad=_grad,
        shape=_shape,
    )
)
