"""`aotk.softmax`: exp(x - max) / sum(exp(x - max)) along the last axis, as one kernel.

`K.softmax` along the last axis (what Keras's softmax activations and losses use) emits
it; along another axis it stays the composition. The lowering is `kernels/row_reductions.py`:
each row read once from memory, rows split across threads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition

from aotk import dtypes
from aotk.dialect.base import UnaryElementwiseOp, dtype_of, elem_of, shape_of
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import row_reductions
from aotk.kernels.dim_arith import Dim, DimArith
from aotk.kernels.kernel import Buf, Kernel


@irdl_op_definition
class SoftmaxOp(UnaryElementwiseOp):
    """Softmax of `x` along its last axis."""

    name = "aotk.softmax"


def _infer(x: Attribute, **_: Any) -> Attribute:
    if not dtypes.is_float(elem_of(x)):
        raise TypeError(f"expected a float tensor, got {dtype_of(x)}")
    if not shape_of(x):
        raise ValueError("expected a tensor of rank >= 1 (softmax runs along the last axis)")
    return x


def _shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    return list(dims[0])


def _numpy(x: np.ndarray) -> np.ndarray:
    """The composition K.softmax used to be, in the compute type (float32 for float16)."""
    wide = x.astype(np.float32) if x.dtype == np.float16 else x
    with np.errstate(invalid="ignore", over="ignore"):
        e = np.exp(wide - wide.max(axis=-1, keepdims=True, initial=-np.inf))
        return (e / e.sum(axis=-1, keepdims=True)).astype(x.dtype)


def _lower(k: Kernel, out: Buf, x: Buf) -> None:
    row_reductions.emit_softmax(k, out, x)


def _grad(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    """dx = y * (g - sum(g * y)) along the last axis."""
    from aotk.dialect import gradlib as lib

    along = lib.reduce_sum(lib.mul(g, y), [y.ndim - 1], keepdims=True)
    return (lib.mul(y, lib.sub(g, along)),)


register(
    OpDef(
        ir=SoftmaxOp,
        kind=Kind.OPAQUE,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        grad=_grad,
        shape=_shape,
    )
)
