"""More elementwise math: rounding half to even, sin, cos, log1p and expm1.

Each op gives a scalar body that LLVM vectorizes: `llvm.roundeven`, aotk's own polynomial
kernels for sin/cos (f32, `vecmath_trig`) and log1p/expm1 (`vecmath`). float64 sin and cos
call libm once per element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import math
from xdsl.dialects.builtin import Float32Type
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition

from aotk import dtypes
from aotk.dialect.base import UnaryElementwiseOp
from aotk.dialect.elementwise import float_type, numeric_type
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import vecmath, vecmath_trig
from aotk.kernels.scalar import ScalarRule, insert


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


def _silent(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    def run(x: np.ndarray, **_: Any) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(x)

    return run


def _np_round(x: np.ndarray, **_: Any) -> np.ndarray:
    return np.round(x) if x.dtype.kind == "f" else x


def _lower_round(
    b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
) -> SSAValue:
    if not dtypes.is_float(elems[0]):
        return args[0]
    return insert(b, math.RoundEvenOp(args[0]))


def _trig(
    kernel: Callable[[Builder, SSAValue], SSAValue], libm: type[math.SinOp | math.CosOp]
) -> ScalarRule:
    """f32 (and f16, computed in f32) use the polynomial kernel; f64 calls libm."""

    def lower(
        b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
    ) -> SSAValue:
        if isinstance(args[0].type, Float32Type):
            return kernel(b, args[0])
        return insert(b, libm(args[0]))

    return lower


def _vecmath(kernel: Callable[[Builder, SSAValue], SSAValue]) -> ScalarRule:
    """float16 is computed in float32, which the kernels take."""

    def lower(
        b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
    ) -> SSAValue:
        return kernel(b, args[0])

    return lower


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


def _grad_round(g: Any, y: Any, x: Any) -> tuple[Any, ...]:
    from aotk.dialect import elementwise_grads

    return elementwise_grads.zero(g, y, x)


for _cls, _infer, _np, _lower, _grad in [
    (RoundOp, numeric_type, _np_round, _lower_round, _grad_round),
    (SinOp, float_type, _silent(np.sin), _trig(vecmath_trig.sin, math.SinOp), _grad_sin),
    (CosOp, float_type, _silent(np.cos), _trig(vecmath_trig.cos, math.CosOp), _grad_cos),
    (Log1pOp, float_type, _silent(np.log1p), _vecmath(vecmath.log1p), _grad_log1p),
    (Expm1Op, float_type, _silent(np.expm1), _vecmath(vecmath.expm1), _grad_expm1),
]:
    register(
        OpDef(ir=_cls, kind=Kind.ELEMENTWISE, infer=_infer, numpy=_np, lower=_lower, grad=_grad)
    )
