"""Elementwise primitives: the type rules every family shares, casts, fills and constants.

Each elementwise op gives a scalar body; `aotk-fuse` and `convert-aotk-to-loops` build the
loop nests. The families live beside this file: `unary.py` (math of one operand),
`arithmetic.py` (broadcasting binary math) and `compare.py` (comparisons and select), each
op with its class, type rule, NumPy rule, scalar lowering and gradient in one place.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import (
    AotkOp,
    ElementTypeAttr,
    broadcast_shapes,
    dtype_of,
    elem_of,
    shape_of,
    tensor,
)
from aotk.dialect.registry import (
    GradRule,
    InferRule,
    Kind,
    LowerRule,
    NumpyRule,
    OpDef,
    lookup,
    register,
)
from aotk.kernels import scalar as s
from aotk.kernels.kernel import Kernel


def lower_scalar(k: Kernel, op: AotkOp, xs: list[SSAValue]) -> SSAValue:
    """The scalar body of one elementwise op on the elements `xs` of its operands."""
    elems = [elem_of(v.type) for v in op.operands]
    rule = lookup(op).lower
    assert rule is not None, f"{op.name} has no scalar rule"
    out = elem_of(op.results[0].type)
    return s.rounded(k.b, rule(k.b, xs, elems, out, **op.attrs()), out)


def float_type(x: Attribute, **_: Any) -> Attribute:
    if not dtypes.is_float(elem_of(x)):
        raise TypeError(f"expected a float tensor, got {dtype_of(x)}")
    return x


def numeric_type(x: Attribute, **_: Any) -> Attribute:
    if dtypes.is_bool(elem_of(x)):
        raise TypeError("expected a numeric tensor, got bool")
    return x


def broadcast_type(lhs: Attribute, rhs: Attribute, **_: Any) -> Attribute:
    """Result type of a binary op: equal dtypes, broadcast shapes."""
    if elem_of(lhs) != elem_of(rhs):
        raise TypeError(f"operands have different dtypes {dtype_of(lhs)} and {dtype_of(rhs)}")
    return tensor(elem_of(lhs), broadcast_shapes(shape_of(lhs), shape_of(rhs)))


def numeric_broadcast_type(lhs: Attribute, rhs: Attribute, **_: Any) -> Attribute:
    return numeric_type(broadcast_type(lhs, rhs))


def float_broadcast_type(lhs: Attribute, rhs: Attribute, **_: Any) -> Attribute:
    return float_type(broadcast_type(lhs, rhs))


def compare_type(lhs: Attribute, rhs: Attribute, **_: Any) -> Attribute:
    t = broadcast_type(lhs, rhs)
    return tensor(IntegerType(1), shape_of(t))


def silent(fn: Callable[..., np.ndarray]) -> NumpyRule:
    """`fn` on arrays with NumPy's floating-point warnings off (inf and NaN are results)."""

    def run(*xs: np.ndarray, **_: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*xs)

    return run


def zero_grad(g: Any, y: Any, *xs: Any, **_: Any) -> tuple[Any, ...]:
    """A piecewise-constant function: zero gradient for float inputs, none for others."""
    from aotk.dialect import gradlib as lib

    return tuple(
        lib.zeros_like(x) if dtypes.is_float(dtypes.element_type(x.dtype)) else None for x in xs
    )


def no_grad(g: Any, y: Any, *xs: Any, **_: Any) -> tuple[Any, ...]:
    return tuple(None for _ in xs)


def register_elementwise(
    rows: Sequence[tuple[type[IRDLOperation], InferRule, NumpyRule, LowerRule, GradRule]],
) -> None:
    """Register (op class, type rule, NumPy rule, scalar lowering, gradient) rows."""
    for cls, infer, numpy, lower, grad in rows:
        register(
            OpDef(ir=cls, kind=Kind.ELEMENTWISE, infer=infer, numpy=numpy, lower=lower, grad=grad)
        )


@irdl_op_definition
class CastOp(AotkOp):
    """Elementwise conversion to `dtype` (float -> int truncates toward zero)."""

    name = "aotk.cast"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    dtype = prop_def(ElementTypeAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class FillLikeOp(AotkOp):
    """A tensor shaped like `x` whose every element is `value` in `dtype`."""

    name = "aotk.fill_like"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    value = prop_def(FloatAttr | IntegerAttr)  # an int64 needs all its 64 bits: see K.constant
    dtype = prop_def(ElementTypeAttr)
    traits = traits_def(Pure())


def is_zero_fill(value: SSAValue) -> bool:
    """Whether `value` is an `aotk.fill_like` with zero (as a gradient's sum starts)."""
    owner = value.owner
    return isinstance(owner, FillLikeOp) and owner.attrs()["value"] == 0.0


@irdl_op_definition
class ConstantOp(AotkOp):
    """A rank-0 constant; larger constants are captured buffers, not IR."""

    name = "aotk.constant"
    result = result_def(TensorType)
    value = prop_def(FloatAttr | IntegerAttr)  # an int64 needs all its 64 bits: see K.constant
    dtype = prop_def(ElementTypeAttr)
    traits = traits_def(Pure())


def _lower_cast(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    return s.convert(b, args[0], elems[0], out)


def _lower_fill(
    b: Builder,
    args: Sequence[SSAValue],
    elems: Sequence[Attribute],
    out: Attribute,
    *,
    value: float,
    **_: Any,
) -> SSAValue:
    return s.const(b, value, s.compute_type(out))


def _infer_cast(x: Attribute, *, dtype: str, **_: Any) -> Attribute:
    return tensor(dtypes.element_type(dtype), shape_of(x))


def _infer_constant(*, value: float | int, dtype: str, **_: Any) -> Attribute:
    _check_fits(value, dtype)
    return tensor(dtypes.element_type(dtype), ())


def _infer_fill(x: Attribute, *, value: float | int, dtype: str, **_: Any) -> Attribute:
    _check_fits(value, dtype)
    return tensor(dtypes.element_type(dtype), shape_of(x))


def _check_fits(value: float | int, dtype: str) -> None:
    """An integer element must be `value` truncated, as NumPy casts; NumPy refuses NaN,
    infinity and what the type's range does not hold (a float type rounds any value)."""
    element = dtypes.element_type(dtype)
    if not dtypes.is_int(element):
        return
    info = np.iinfo(dtype)
    exact = isinstance(value, int) or math.isfinite(value)
    if not (exact and info.min <= math.trunc(value) <= info.max):
        raise ValueError(f"value {value} does not fit {dtype} [{info.min}, {info.max}]")


def _np_cast(x: np.ndarray, *, dtype: str, **_: Any) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return x.astype(dtype)


def _np_fill(shape: tuple[int, ...], value: float | int, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore"):  # a float type's overflow is infinity, as compiled
        return np.full(shape, value, dtype=dtype)


def _grad_cast(g: Any, y: Any, x: Any, **_: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    if not dtypes.is_float(dtypes.element_type(x.dtype)) or not dtypes.is_float(
        dtypes.element_type(y.dtype)
    ):
        return (None,)
    return (lib.cast(g, x.dtype),)


register_elementwise(
    [
        (CastOp, _infer_cast, _np_cast, _lower_cast, _grad_cast),
        (
            FillLikeOp,
            _infer_fill,
            lambda x, *, value, dtype: _np_fill(x.shape, value, dtype),
            _lower_fill,
            no_grad,
        ),
        (
            ConstantOp,
            _infer_constant,
            lambda *, value, dtype: _np_fill((), value, dtype),
            _lower_fill,
            no_grad,
        ),
    ]
)
