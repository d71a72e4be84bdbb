"""Comparisons (giving bool, broadcasting) and select.

Comparisons have no gradient; select passes the cotangent to the branch each element took.
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

from aotk import dtypes
from aotk.dialect.base import (
    AotkOp,
    BinaryElementwiseOp,
    broadcast_shapes,
    dtype_of,
    elem_of,
    shape_of,
    tensor,
)
from aotk.dialect.elementwise import broadcast_type, compare_type, no_grad, register_elementwise
from aotk.kernels import scalar as s


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


def _lower_select(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    return s.select(b, args[0], args[1], args[2])


def _infer_select(cond: Attribute, a: Attribute, c: Attribute, **_: Any) -> Attribute:
    if not dtypes.is_bool(elem_of(cond)):
        raise TypeError(f"condition must be bool, got {dtype_of(cond)}")
    t = broadcast_type(a, c)
    return tensor(elem_of(t), broadcast_shapes(shape_of(cond), shape_of(t)))


def _grad_select(g: Any, y: Any, c: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    zero = lib.zeros_like(g)
    return (
        None,
        lib.sum_to(lib.select(c, g, zero), a),
        lib.sum_to(lib.select(c, zero, g), b),
    )


register_elementwise(
    [
        (EqualOp, compare_type, np.equal, s.compare_rule("eq"), no_grad),
        (NotEqualOp, compare_type, np.not_equal, s.compare_rule("ne"), no_grad),
        (GreaterOp, compare_type, np.greater, s.compare_rule("gt"), no_grad),
        (GreaterEqualOp, compare_type, np.greater_equal, s.compare_rule("ge"), no_grad),
        (LessOp, compare_type, np.less, s.compare_rule("lt"), no_grad),
        (LessEqualOp, compare_type, np.less_equal, s.compare_rule("le"), no_grad),
        (SelectOp, _infer_select, lambda c, a, b: np.where(c, a, b), _lower_select, _grad_select),
    ]
)
