"""Broadcasting binary math: add, subtract, multiply, divide, power, maximum and minimum.

Gradients sum each operand's cotangent back to its shape, undoing the broadcast.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.irdl import irdl_op_definition

from aotk.dialect.base import BinaryElementwiseOp
from aotk.dialect.elementwise import (
    broadcast_type,
    float_broadcast_type,
    numeric_broadcast_type,
    register_elementwise,
    silent,
)
from aotk.kernels import scalar as s
from aotk.kernels import transcendental as tr


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


def _np_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(a, b)


def _grad_add(g: Any, y: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return lib.sum_to(g, a), lib.sum_to(g, b)


def _grad_sub(g: Any, y: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return lib.sum_to(g, a), lib.sum_to(lib.neg(g), b)


def _grad_mul(g: Any, y: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return lib.sum_to(lib.mul(g, b), a), lib.sum_to(lib.mul(g, a), b)


def _grad_div(g: Any, y: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    ga = lib.div(g, b)
    gb = lib.neg(lib.mul(ga, y))  # -g * a / b**2 == -(g / b) * (a / b)
    return lib.sum_to(ga, a), lib.sum_to(gb, b)


def _grad_pow(g: Any, y: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib
    from aotk.dialect.compare import GreaterOp
    from aotk.dialect.unary import LogOp

    one = lib.const(1.0, a)
    ga = lib.mul(g, lib.mul(b, lib.emit(PowOp, a, lib.sub(b, one))))
    # d/db a**b = a**b * log(a), taken as 0 where a <= 0 (as TensorFlow does)
    positive = lib.emit(GreaterOp, a, lib.const(0.0, a))
    safe_log = lib.select(
        positive, lib.emit(LogOp, lib.select(positive, a, one)), lib.zeros_like(a)
    )
    gb = lib.mul(g, lib.mul(y, safe_log))
    return lib.sum_to(ga, a), lib.sum_to(gb, b)


def _pick(g: Any, mask: Any, a: Any, b: Any) -> tuple[Any, ...]:
    """g to `a` where `mask` holds, to `b` elsewhere."""
    from aotk.dialect import gradlib as lib

    zero = lib.zeros_like(g)
    return (
        lib.sum_to(lib.select(mask, g, zero), a),
        lib.sum_to(lib.select(mask, zero, g), b),
    )


def _grad_maximum(g: Any, y: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib
    from aotk.dialect.compare import GreaterEqualOp

    return _pick(g, lib.emit(GreaterEqualOp, a, b), a, b)


def _grad_minimum(g: Any, y: Any, a: Any, b: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib
    from aotk.dialect.compare import LessEqualOp

    return _pick(g, lib.emit(LessEqualOp, a, b), a, b)


register_elementwise(
    [
        (AddOp, numeric_broadcast_type, np.add, s.by_type(arith.AddfOp, arith.AddiOp), _grad_add),
        (
            SubOp,
            numeric_broadcast_type,
            np.subtract,
            s.by_type(arith.SubfOp, arith.SubiOp),
            _grad_sub,
        ),
        (
            MulOp,
            numeric_broadcast_type,
            np.multiply,
            s.by_type(arith.MulfOp, arith.MuliOp),
            _grad_mul,
        ),
        (DivOp, float_broadcast_type, _np_divide, s.by_type(arith.DivfOp), _grad_div),
        (PowOp, float_broadcast_type, silent(np.power), tr.rule("pow"), _grad_pow),
        (
            MaximumOp,
            broadcast_type,
            np.maximum,
            s.by_type(arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp),
            _grad_maximum,
        ),
        (
            MinimumOp,
            broadcast_type,
            np.minimum,
            s.by_type(arith.MinimumfOp, arith.MinSIOp, arith.MinUIOp),
            _grad_minimum,
        ),
    ]
)
