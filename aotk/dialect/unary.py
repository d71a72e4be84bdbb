"""Elementwise math of one operand: neg, abs, sign, sqrt, exp, log, tanh, sigmoid, rounding
half to even, sin, cos, log1p and expm1.

Each op gives a scalar body that LLVM vectorizes: `llvm.roundeven`, aotk's own polynomial
kernels for exp, log and tanh (`transcendental`), sin/cos (f32, `vecmath_trig`) and
log1p/expm1/sigmoid (`vecmath`). float64 sin and cos call libm once per element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition

from aotk import dtypes
from aotk.dialect.base import UnaryElementwiseOp
from aotk.dialect.elementwise import (
    float_type,
    numeric_type,
    register_elementwise,
    silent,
    zero_grad,
)
from aotk.kernels import scalar as s
from aotk.kernels import transcendental as tr
from aotk.kernels import vecmath, vecmath_trig
from aotk.kernels.scalar import ScalarRule


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
class SigmoidOp(UnaryElementwiseOp):
    """Elementwise 1 / (1 + e**-x), computed from e**-|x| so nothing overflows."""

    name = "aotk.sigmoid"


@irdl_op_definition
class SignOp(UnaryElementwiseOp):
    """Elementwise sign: -1, 0 or 1 (NaN stays NaN)."""

    name = "aotk.sign"


@irdl_op_definition
class RoundOp(UnaryElementwiseOp):
    """Elementwise rounding to the nearest integer, ties to even; integers are unchanged."""

    name = "aotk.round"


@irdl_op_definition
class SinOp(UnaryElementwiseOp):
    """Elementwise sine."""

    name = "aotk.sin"


@irdl_op_definition
class CosOp(UnaryElementwiseOp):
    """Elementwise cosine."""

    name = "aotk.cos"


@irdl_op_definition
class Log1pOp(UnaryElementwiseOp):
    """Elementwise log(1 + x), accurate near 0."""

    name = "aotk.log1p"


@irdl_op_definition
class Expm1Op(UnaryElementwiseOp):
    """Elementwise e**x - 1, accurate near 0."""

    name = "aotk.expm1"


def _np_sigmoid(x: np.ndarray) -> np.ndarray:
    one = np.ones((), x.dtype)
    return one / (one + np.exp(-x))


def _np_sign(x: np.ndarray) -> np.ndarray:
    return np.sign(x).astype(x.dtype)


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


def _np_round(x: np.ndarray, **_: Any) -> np.ndarray:
    return np.round(x) if x.dtype.kind == "f" else x


def _lower_round(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    if not dtypes.is_float(elems[0]):
        return args[0]
    return s.insert(b, math.RoundEvenOp(args[0]))


def _trig(
    kernel: Callable[[Builder, SSAValue], SSAValue], libm: type[math.SinOp | math.CosOp]
) -> ScalarRule:
    """f32 (and f16, computed in f32) use the polynomial kernel; f64 calls libm."""

    def lower(
        b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
    ) -> SSAValue:
        if isinstance(args[0].type, Float32Type):
            return kernel(b, args[0])
        return s.insert(b, libm(args[0]))

    return lower


def _vecmath(kernel: Callable[[Builder, SSAValue], SSAValue]) -> ScalarRule:
    """float16 is computed in float32, which the kernels take."""

    def lower(
        b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
    ) -> SSAValue:
        return kernel(b, args[0])

    return lower


def _grad_neg(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.neg(g),)


def _grad_abs(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.mul(g, lib.emit(SignOp, x)),)


def _grad_sqrt(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.div(g, lib.mul(lib.const(2.0, y), y)),)


def _grad_exp(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.mul(g, y),)


def _grad_log(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.div(g, x),)


def _grad_tanh(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.mul(g, lib.sub(lib.const(1.0, y), lib.mul(y, y))),)


def _grad_sigmoid(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.mul(g, lib.mul(y, lib.sub(lib.const(1.0, y), y))),)


def _grad_sin(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.mul(g, lib.emit(CosOp, x)),)


def _grad_cos(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.neg(lib.mul(g, lib.emit(SinOp, x))),)


def _grad_log1p(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.div(g, lib.add(lib.const(1.0, x), x)),)


def _grad_expm1(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.mul(g, lib.add(y, lib.const(1.0, y))),)


register_elementwise(
    [
        (NegOp, numeric_type, np.negative, _lower_neg, _grad_neg),
        (AbsOp, numeric_type, np.abs, _lower_abs, _grad_abs),
        (SqrtOp, float_type, silent(np.sqrt), s.math_rule(math.SqrtOp), _grad_sqrt),
        (ExpOp, float_type, silent(np.exp), tr.rule("exp"), _grad_exp),
        (LogOp, float_type, silent(np.log), tr.rule("log"), _grad_log),
        (TanhOp, float_type, np.tanh, tr.rule("tanh"), _grad_tanh),
        (SigmoidOp, float_type, silent(_np_sigmoid), _vecmath(vecmath.sigmoid), _grad_sigmoid),
        (SignOp, numeric_type, _np_sign, _lower_sign, zero_grad),
        (RoundOp, numeric_type, _np_round, _lower_round, zero_grad),
        (SinOp, float_type, silent(np.sin), _trig(vecmath_trig.sin, math.SinOp), _grad_sin),
        (CosOp, float_type, silent(np.cos), _trig(vecmath_trig.cos, math.CosOp), _grad_cos),
        (Log1pOp, float_type, silent(np.log1p), _vecmath(vecmath.log1p), _grad_log1p),
        (Expm1Op, float_type, silent(np.expm1), _vecmath(vecmath.expm1), _grad_expm1),
    ]
)
