"""Views whose shape comes from run-time dims: expand_dims and reshape_like.

`aotk.reshape` takes a static target with at most one inferred dim. These two cover what
that cannot say when several dims are dynamic, which gradients need all the time: put
reduced axes back as size 1, and give a cotangent the exact shape of a value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import AotkOp, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.dim_arith import STATIC, Dim, DimArith


@irdl_op_definition
class ExpandDimsOp(AotkOp):
    """x with size-1 axes inserted so that they sit at positions `axes` of the result."""

    name = "aotk.expand_dims"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    traits = traits_def(Pure())


@irdl_op_definition
class ReshapeLikeOp(AotkOp):
    """x's elements with the dims of `like` (whose values are not read)."""

    name = "aotk.reshape_like"
    x = operand_def(TensorType)
    like = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def expand_dims_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, axes: Sequence[int]
) -> list[Dim]:
    """x's dims with a 1 inserted at each of `axes` (positions in the result)."""
    out = list(dims[0])
    for axis in sorted(axes):
        out.insert(axis, 1)
    return out


def reshape_like_shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    return list(dims[1])


def _infer_expand(x: Attribute, *, axes: Sequence[int], **_: Any) -> Attribute:
    rank = len(shape_of(x)) + len(axes)
    if len(set(axes)) != len(axes) or any(not 0 <= a < rank for a in axes):
        raise ValueError(f"axes {tuple(axes)} must be distinct positions of a rank-{rank} result")
    return tensor(elem_of(x), expand_dims_shape(STATIC, [shape_of(x)], axes=axes))


def _infer_reshape_like(x: Attribute, like: Attribute, **_: Any) -> Attribute:
    a, b = shape_of(x), shape_of(like)
    if None not in a and None not in b and math.prod(a) != math.prod(b):  # type: ignore[arg-type]
        raise ValueError(f"cannot reshape {fmt_shape(a)} like {fmt_shape(b)}")
    return tensor(elem_of(x), reshape_like_shape(STATIC, [a, b]))


def _grad_expand(g: Any, y: Any, x: Any, *, axes: Sequence[int]) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.emit(ReshapeLikeOp, g, x),)


def _grad_reshape_like(g: Any, y: Any, x: Any, like: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return lib.emit(ReshapeLikeOp, g, x), None


register(
    OpDef(
        ir=ExpandDimsOp,
        kind=Kind.VIEW,
        infer=_infer_expand,
        numpy=lambda x, *, axes: x.reshape(expand_dims_shape(STATIC, [x.shape], axes=axes)),
        lower=None,
        shape=expand_dims_shape,
        grad=_grad_expand,
    )
)
register(
    OpDef(
        ir=ReshapeLikeOp,
        kind=Kind.VIEW,
        infer=_infer_reshape_like,
        numpy=lambda x, like: np.reshape(x, like.shape),
        lower=None,
        shape=reshape_like_shape,
        grad=_grad_reshape_like,
    )
)
