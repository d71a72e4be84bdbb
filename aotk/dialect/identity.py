"""Identities that matter only before compilation; `aotk-simplify` forwards their operand,
so they cost nothing in compiled code.

`aotk.stop_gradient`: the identity for values, a wall for gradients (`K.gradients` sees
no path through it).

`aotk.same_shape`: a cotangent `x` with the shape of `like`, checked when a call's shapes
are known (`call_check`, and the interpreter). Gradients of broadcasting ops sum a
cotangent down to its operand's shape, but a dim the trace does not know (None) cannot
be summed: `gradlib.sum_to` assumes it was not broadcast, and this op says so, so that a
call whose operand does broadcast there (1 against 5, say) is refused with a clear error
rather than given a gradient of the wrong shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import (
    AotkOp,
    Dim,
    Shape,
    UnaryElementwiseOp,
    elem_of,
    fmt_shape,
    shape_of,
    tensor,
)
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.dim_arith import STATIC, DimArith


@irdl_op_definition
class StopGradientOp(UnaryElementwiseOp):
    """x, with no gradient flowing back to x."""

    name = "aotk.stop_gradient"


def _lower(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    return args[0]


register(
    OpDef(
        ir=StopGradientOp,
        kind=Kind.ELEMENTWISE,
        infer=lambda x, **_: x,
        numpy=lambda x: x,
        lower=_lower,
        grad=lambda g, y, x: (None,),
    )
)


@irdl_op_definition
class SameShapeOp(AotkOp):
    """x, whose shape is like's at every call (like's values are not read)."""

    name = "aotk.same_shape"
    x = operand_def(TensorType)
    like = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _check_same(x: Shape, like: Shape) -> None:
    """Raise unless x's dims may be like's: equal wherever both are known."""
    for axis, (a, b) in enumerate(zip(x, like, strict=True)):
        if a is not None and b is not None and a != b:
            raise ValueError(
                f"a cotangent of shape {fmt_shape(x)} for an operand of shape "
                f"{fmt_shape(like)}: the operand was broadcast along axis {axis}, which its "
                "gradient, traced with that dim unknown (None), cannot sum over; declare "
                "the dim 1 to broadcast it, or feed equal dims"
            )


def _infer_same_shape(x: Attribute, like: Attribute, **_: Any) -> Attribute:
    a, b = shape_of(x), shape_of(like)
    if len(a) != len(b):
        raise ValueError(f"ranks differ: {fmt_shape(a)} and {fmt_shape(b)}")
    _check_same(a, b)
    return tensor(elem_of(x), _same_shape(STATIC, [a, b]))


def _same_shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    """x's dims, each known where either knows it."""
    return [d if isinstance(d, int) else e for d, e in zip(*dims, strict=True)]


def _numpy_same_shape(x: np.ndarray, like: np.ndarray) -> np.ndarray:
    _check_same(x.shape, like.shape)
    return x


def _grad_same_shape(g: Any, y: Any, x: Any, like: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return lib.sum_to(g, x), None


register(
    OpDef(
        ir=SameShapeOp,
        kind=Kind.VIEW,
        infer=_infer_same_shape,
        numpy=_numpy_same_shape,
        lower=None,
        shape=_same_shape,
        grad=_grad_same_shape,
    )
)
