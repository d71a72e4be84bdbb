"""Views whose shape comes from run-time dims: expand_dims, reshape_like, reshape_dims.

`aotk.reshape` takes a static target with at most one inferred dim. These cover what
that cannot say when several dims are dynamic, which gradients need all the time: put
reduced axes back as size 1, and give a cotangent the exact shape of a value; and what
Keras says with `K.reshape(y, (-1, K.shape(x)[1], 4))`: a dim of another tensor.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from aotk.dialect.base import AotkOp, Shape, elem_of, fmt_shape, shape_of, tensor
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


@irdl_op_definition
class ReshapeDimsOp(AotkOp):
    """The first operand's elements with dims `shape`: each a static size, -1 for the one
    the others leave, or -2 for a dim of an operand (the next (operand, axis) pair of
    `taken`; the other operands' values are not read)."""

    name = "aotk.reshape_dims"
    xs = var_operand_def(TensorType)
    result = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    taken = prop_def(DenseArrayBase)
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


def reshape_dims_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, shape: Sequence[int], taken: Sequence[int]
) -> list[Dim]:
    """`shape` with each -2 the dim `taken` names, and the -1 (if any) what x leaves."""
    out = _taken_dims(dims, shape, taken)
    if -1 in shape:
        i = list(shape).index(-1)
        out[i] = a.div(a.product(dims[0]), a.product(out[:i] + out[i + 1 :]))
    return out


def _taken_dims(
    dims: Sequence[Sequence[Dim]], shape: Sequence[int], taken: Sequence[int]
) -> list[Dim]:
    """`shape` with each -2 the dim of the next (operand, axis) pair of `taken`."""
    pairs = iter(zip(taken[::2], taken[1::2], strict=True))
    out: list[Dim] = []
    for d in shape:
        if d == -2:
            k, axis = next(pairs)
            out.append(dims[k][axis])
        else:
            out.append(d)
    return out


def _check_reshape_dims(
    shapes: Sequence[Shape], shape: Sequence[int], taken: Sequence[int]
) -> None:
    """Raise unless `shape` and `taken` are well formed for operands of `shapes`."""
    if any(d < -2 for d in shape) or list(shape).count(-1) > 1:
        raise ValueError(f"shape {tuple(shape)} must hold sizes >= 0, -2, and at most one -1")
    if len(taken) != 2 * list(shape).count(-2):
        raise ValueError(f"taken {tuple(taken)} must hold an (operand, axis) pair per -2")
    for k, axis in zip(taken[::2], taken[1::2], strict=True):
        if not 0 <= k < len(shapes) or not 0 <= axis < len(shapes[k]):
            raise ValueError(f"taken names axis {axis} of operand {k}, which has none")


def _fitted(shapes: Sequence[Shape], shape: Sequence[int], taken: Sequence[int]) -> list[Dim]:
    """The result's dims; raise where the known dims show that x's elements do not make
    them (before any division by zero)."""
    x = shapes[0]
    out = _taken_dims(shapes, shape, taken)
    total = STATIC.product(x)
    made = STATIC.product([d for d, s in zip(out, shape, strict=True) if s != -1])
    if total is not None and made is not None:
        if -1 in shape and (made == 0 or total % made):
            raise ValueError(
                f"cannot infer the -1 of {_fmt(out, shape)} from {fmt_shape(x)}: "
                f"{total} elements are not a multiple of {made}"
            )
        if -1 not in shape and total != made:
            raise ValueError(f"cannot reshape {fmt_shape(x)} to {_fmt(out, shape)}")
    return reshape_dims_shape(STATIC, shapes, shape=shape, taken=taken)


def _fmt(out: Sequence[Dim], shape: Sequence[int]) -> str:
    """The result's dims as far as known, its inferred dim written -1."""
    return fmt_shape(tuple(-1 if s == -1 else d for d, s in zip(out, shape, strict=True)))


def _infer_reshape_dims(
    *xs: Attribute, shape: Sequence[int], taken: Sequence[int], **_: Any
) -> Attribute:
    shapes = [shape_of(x) for x in xs]
    _check_reshape_dims(shapes, shape, taken)
    return tensor(elem_of(xs[0]), _fitted(shapes, shape, taken))


def _np_reshape_dims(*xs: np.ndarray, shape: Sequence[int], taken: Sequence[int]) -> np.ndarray:
    return xs[0].reshape(_fitted([x.shape for x in xs], shape, taken))


def _grad_reshape_dims(g: Any, y: Any, x: Any, *donors: Any, **_: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return lib.emit(ReshapeLikeOp, g, x), *(None for _ in donors)


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
register(
    OpDef(
        ir=ReshapeDimsOp,
        kind=Kind.VIEW,
        infer=_infer_reshape_dims,
        numpy=_np_reshape_dims,
        lower=None,
        shape=reshape_dims_shape,
        grad=_grad_reshape_dims,
    )
)
