"""Elementwise primitives: unary math, broadcasting binary ops, comparisons, select, casts.

Each op gives a scalar body; `aotk-fuse` and `convert-aotk-to-loops` build the loop nests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import FloatAttr, IntegerType, StringAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect import elementwise_grads as eg
from aotk.dialect.base import (
    AotkOp,
    BinaryElementwiseOp,
    UnaryElementwiseOp,
    broadcast_shapes,
    dtype_of,
    elem_of,
    shape_of,
    tensor,
)
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import scalar as s
from aotk.kernels import transcendental as tr


def same_type(x: Attribute, **_: Any) -> Attribute:
    return x


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


@irdl_op_definition
class NegOp(UnaryElementwiseOp):
    """Elementwise -x."""

    name = "aotk.neg"


@irdl_op_definition
class AbsOp(UnaryElementwiseOp):
    """Elementwise |x|."""

    name = "aotk.abs"


@irdl_op_definition
class SqrtOp(UnaryElementwiseOp):
    """Elementwise square root."""

    name = "aotk.sqrt"


@irdl_op_definition
class ExpOp(UnaryElementwiseOp):
    """Elementwise e**x."""

    name = "aotk.exp"


@irdl_op_definition
class LogOp(UnaryElementwiseOp):
    """Elementwise natural logarithm."""

    name = "aotk.log"


@irdl_op_definition
class TanhOp(UnaryElementwiseOp):
    """Elementwise hyperbolic tangent."""

    name = "aotk.tanh"


@irdl_op_definition
class SignOp(UnaryElementwiseOp):
    """Elementwise sign: -1, 0 or 1 (NaN stays NaN)."""

    name = "aotk.sign"


@irdl_op_definition
class AddOp(BinaryElementwiseOp):
    """Elementwise lhs + rhs, broadcasting."""

    name = "aotk.add"


@irdl_op_definition
class SubOp(BinaryElementwiseOp):
    """Elementwise lhs - rhs, broadcasting."""

    name = "aotk.sub"


@irdl_op_definition
class MulOp(BinaryElementwiseOp):
    """Elementwise lhs * rhs, broadcasting."""

    name = "aotk.mul"


@irdl_op_definition
class DivOp(BinaryElementwiseOp):
    """Elementwise float lhs / rhs, broadcasting."""

    name = "aotk.div"


@irdl_op_definition
class PowOp(BinaryElementwiseOp):
    """Elementwise float lhs ** rhs, broadcasting."""

    name = "aotk.pow"


@irdl_op_definition
class MaximumOp(BinaryElementwiseOp):
    """Elementwise maximum; NaN propagates."""

    name = "aotk.maximum"


@irdl_op_definition
class MinimumOp(BinaryElementwiseOp):
    """Elementwise minimum; NaN propagates."""

    name = "aotk.minimum"


@irdl_op_definition
class EqualOp(BinaryElementwiseOp):
    """Elementwise lhs == rhs, giving bool."""

    name = "aotk.equal"


@irdl_op_definition
class NotEqualOp(BinaryElementwiseOp):
    """Elementwise lhs != rhs, giving bool."""

    name = "aotk.not_equal"


@irdl_op_definition
class GreaterOp(BinaryElementwiseOp):
    """Elementwise lhs > rhs, giving bool."""

    name = "aotk.greater"


@irdl_op_definition
class GreaterEqualOp(BinaryElementwiseOp):
    """Elementwise lhs >= rhs."""

    name = "aotk.greater_equal"


@irdl_op_definition
class LessOp(BinaryElementwiseOp):
    """Elementwise lhs < rhs, giving bool."""

    name = "aotk.less"


@irdl_op_definition
class LessEqualOp(BinaryElementwiseOp):
    """Elementwise lhs <= rhs, giving bool."""

    name = "aotk.less_equal"


@irdl_op_definition
class SelectOp(AotkOp):
    """Elementwise cond ? on_true : on_false, broadcasting all three."""

    name = "aotk.select"
    cond = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class CastOp(AotkOp):
    """Elementwise conversion to `dtype` (float -> int truncates toward zero)."""

    name = "aotk.cast"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    dtype = prop_def(StringAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class FillLikeOp(AotkOp):
    """A tensor shaped like `x` whose every element is `value` in `dtype`."""

    name = "aotk.fill_like"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    value = prop_def(FloatAttr)
    dtype = prop_def(StringAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class ConstantOp(AotkOp):
    """A rank-0 constant; larger constants are captured buffers, not IR."""

    name = "aotk.constant"
    result = result_def(TensorType)
    value = prop_def(FloatAttr)
    dtype = prop_def(StringAttr)
    traits = traits_def(Pure())


def _np_sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x).astype(x.dtype)


def _np_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b)


def _silent(fn: Any) -> Any:
    def run(*xs: np.ndarray, **_: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(*xs)

    return run


def _lower_neg(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    if dtypes.is_float(elems[0]):
        return s.insert(b, arith.NegfOp(args[0]))
    return s.insert(b, arith.SubiOp(s.const(b, 0, args[0].type), args[0]))


def _lower_abs(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    x = args[0]
    if dtypes.is_float(elems[0]):
        return s.insert(b, math.AbsFOp(x))
    if dtypes.is_unsigned(elems[0]):
        return x
    neg = s.insert(b, arith.SubiOp(s.const(b, 0, x.type), x))
    return s.select(b, s.compare(b, "lt", x, s.const(b, 0, x.type), elems[0]), neg, x)


def _lower_sign(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    x, elem = args[0], elems[0]
    zero, one, minus = (s.const(b, v, x.type) for v in (0, 1, -1))
    negative = s.select(b, s.compare(b, "lt", x, zero, elem), minus, x)
    return s.select(b, s.compare(b, "gt", x, zero, elem), one, negative)


def _lower_select(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    return s.select(b, args[0], args[1], args[2])


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


def _infer_select(cond: Attribute, a: Attribute, c: Attribute, **_: Any) -> Attribute:
    if not dtypes.is_bool(elem_of(cond)):
        raise TypeError(f"condition must be bool, got {dtype_of(cond)}")
    t = broadcast_type(a, c)
    return tensor(elem_of(t), broadcast_shapes(shape_of(cond), shape_of(t)))


def _infer_cast(x: Attribute, *, dtype: str, **_: Any) -> Attribute:
    return tensor(dtypes.element_type(dtype), shape_of(x))


def _infer_constant(*, dtype: str, **_: Any) -> Attribute:
    return tensor(dtypes.element_type(dtype), ())


def _np_cast(x: np.ndarray, *, dtype: str, **_: Any) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return x.astype(dtype)


_GRADS = {
    NegOp: eg.neg,
    AbsOp: eg.abs_,
    SqrtOp: eg.sqrt,
    ExpOp: eg.exp,
    LogOp: eg.log,
    TanhOp: eg.tanh,
    SignOp: eg.zero,
    AddOp: eg.add,
    SubOp: eg.sub,
    MulOp: eg.mul,
    DivOp: eg.div,
    PowOp: eg.pow_,
    MaximumOp: eg.maximum,
    MinimumOp: eg.minimum,
    **dict.fromkeys(
        [EqualOp, NotEqualOp, GreaterOp, GreaterEqualOp, LessOp, LessEqualOp, FillLikeOp], eg.none
    ),
    SelectOp: eg.select,
    CastOp: eg.cast,
    ConstantOp: eg.none,
}

for _cls, _infer, _np, _lower in [
    (NegOp, numeric_type, np.negative, _lower_neg),
    (AbsOp, numeric_type, np.abs, _lower_abs),
    (SqrtOp, float_type, _silent(np.sqrt), s.math_rule(math.SqrtOp)),
    (ExpOp, float_type, _silent(np.exp), tr.rule("exp")),
    (LogOp, float_type, _silent(np.log), tr.rule("log")),
    (TanhOp, float_type, np.tanh, tr.rule("tanh")),
    (SignOp, numeric_type, _np_sign, _lower_sign),
    (AddOp, numeric_broadcast_type, np.add, s.by_type(arith.AddfOp, arith.AddiOp)),
    (SubOp, numeric_broadcast_type, np.subtract, s.by_type(arith.SubfOp, arith.SubiOp)),
    (MulOp, numeric_broadcast_type, np.multiply, s.by_type(arith.MulfOp, arith.MuliOp)),
    (DivOp, float_broadcast_type, _np_divide, s.by_type(arith.DivfOp)),
    (PowOp, float_broadcast_type, _silent(np.power), tr.rule("pow")),
    (
        MaximumOp,
        broadcast_type,
        np.maximum,
        s.by_type(arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp),
    ),
    (
        MinimumOp,
        broadcast_type,
        np.minimum,
        s.by_type(arith.MinimumfOp, arith.MinSIOp, arith.MinUIOp),
    ),
    (EqualOp, compare_type, np.equal, s.compare_rule("eq")),
    (NotEqualOp, compare_type, np.not_equal, s.compare_rule("ne")),
    (GreaterOp, compare_type, np.greater, s.compare_rule("gt")),
    (GreaterEqualOp, compare_type, np.greater_equal, s.compare_rule("ge")),
    (LessOp, compare_type, np.less, s.compare_rule("lt")),
    (LessEqualOp, compare_type, np.less_equal, s.compare_rule("le")),
    (SelectOp, _infer_select, lambda c, a, b: np.where(c, a, b), _lower_select),
    (CastOp, _infer_cast, _np_cast, _lower_cast),
    (
        FillLikeOp,
        lambda x, *, dtype, **_: tensor(dtypes.element_type(dtype), shape_of(x)),
        lambda x, *, value, dtype: np.full(x.shape, value, dtype=dtype),
        _lower_fill,
    ),
    (
        ConstantOp,
        _infer_constant,
        lambda *, value, dtype: np.array(value, dtype=dtype),
        _lower_fill,
    ),
]:
    register(
        OpDef(
            ir=_cls, kind=Kind.ELEMENTWISE, infer=_infer, numpy=_np, lower=_lower, grad=_GRADS[_cls]
        )
    )
