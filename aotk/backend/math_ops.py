"""Elementwise math, comparisons, reductions and activations of the Keras backend API.

Each function traces aotk primitives; compositions (sigmoid, softmax, relu, mean, ...)
are left to `aotk-fuse` to turn into one kernel.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import numpy as np

from aotk import dtypes
from aotk.backend.config import floatx
from aotk.backend.tensors import as_tensor, cast, scalar
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import reduce as rd
from aotk.dialect import shape_query as sq
from aotk.dialect import trace
from aotk.dialect import unary as un
from aotk.dialect.base import AotkOp
from aotk.dialect.softmax import SoftmaxOp
from aotk.dialect.trace import KTensor

Axis = int | Sequence[int] | None


def _pair(x: Any, y: Any, where: str) -> tuple[KTensor, KTensor]:
    """Two tensors; a Python number takes the other operand's dtype."""
    if isinstance(x, KTensor) and not isinstance(y, KTensor):
        return x, as_tensor(y, x.dtype, where)
    if isinstance(y, KTensor) and not isinstance(x, KTensor):
        return as_tensor(x, y.dtype, where), y
    return as_tensor(x, where=where), as_tensor(y, where=where)


def binary(op: type[AotkOp], x: Any, y: Any, where: str) -> KTensor:
    a, b = _pair(x, y, where)
    return trace.emit(op, a, b, where=where)


def unary(op: type[AotkOp], x: Any, where: str) -> KTensor:
    return trace.emit(op, as_tensor(x, where=where), where=where)


def _floating(x: Any, where: str) -> KTensor:
    """`x` as a float tensor: ints and bools are cast to floatx, as Keras does."""
    t = as_tensor(x, where=where)
    return t if dtypes.is_float(dtypes.element_type(t.dtype)) else cast(t, floatx())


def add(x: Any, y: Any) -> KTensor:
    """Elementwise x + y, broadcasting."""
    return binary(ar.AddOp, x, y, "K.add")


def subtract(x: Any, y: Any) -> KTensor:
    """Elementwise x - y, broadcasting."""
    return binary(ar.SubOp, x, y, "K.subtract")


def multiply(x: Any, y: Any) -> KTensor:
    """Elementwise x * y, broadcasting."""
    return binary(ar.MulOp, x, y, "K.multiply")


def divide(x: Any, y: Any) -> KTensor:
    """True division; integer operands are divided in floatx."""
    a, b = _pair(x, y, "K.divide")
    return binary(ar.DivOp, _floating(a, "K.divide"), _floating(b, "K.divide"), "K.divide")


def negative(x: Any) -> KTensor:
    """Elementwise -x."""
    return unary(un.NegOp, x, "K.negative")


def abs(x: Any) -> KTensor:
    """Elementwise absolute value."""
    return unary(un.AbsOp, x, "K.abs")


def square(x: Any) -> KTensor:
    """Elementwise x * x."""
    t = as_tensor(x, where="K.square")
    return trace.emit(ar.MulOp, t, t, where="K.square")


def sqrt(x: Any) -> KTensor:
    """Square root; negative inputs are clipped to 0 first, as in Keras."""
    t = _floating(x, "K.sqrt")
    return trace.emit(un.SqrtOp, maximum(t, 0.0), where="K.sqrt")


def exp(x: Any) -> KTensor:
    """Elementwise e**x."""
    return unary(un.ExpOp, _floating(x, "K.exp"), "K.exp")


def log(x: Any) -> KTensor:
    """Elementwise natural logarithm."""
    return unary(un.LogOp, _floating(x, "K.log"), "K.log")


def tanh(x: Any) -> KTensor:
    """Elementwise hyperbolic tangent."""
    return unary(un.TanhOp, _floating(x, "K.tanh"), "K.tanh")


def sign(x: Any) -> KTensor:
    """Elementwise sign: -1, 0 or 1."""
    return unary(un.SignOp, x, "K.sign")


def pow(x: Any, a: Any) -> KTensor:
    """x ** a elementwise."""
    t = _floating(x, "K.pow")
    if isinstance(a, int | float) and a == 2:
        return trace.emit(ar.MulOp, t, t, where="K.pow")
    return binary(ar.PowOp, t, a, "K.pow")


def maximum(x: Any, y: Any) -> KTensor:
    """Elementwise maximum; NaN propagates."""
    return binary(ar.MaximumOp, x, y, "K.maximum")


def minimum(x: Any, y: Any) -> KTensor:
    """Elementwise minimum; NaN propagates."""
    return binary(ar.MinimumOp, x, y, "K.minimum")


def clip(x: Any, min_value: Any, max_value: Any) -> KTensor:
    """Clip to [min_value, max_value]; a max below the min clips everything to the min, and
    a bound of None does not clip (Keras's losses pass `K.clip(x, K.epsilon(), None)`)."""
    t = as_tensor(x, where="K.clip")
    if (
        isinstance(min_value, int | float)
        and isinstance(max_value, int | float)
        and max_value < min_value
    ):
        max_value = min_value
    if min_value is not None:
        t = maximum(t, min_value)
    if max_value is not None:
        t = minimum(t, max_value)
    return t


def equal(x: Any, y: Any) -> KTensor:
    """Elementwise x == y, as bool."""
    return binary(cmp.EqualOp, x, y, "K.equal")


def not_equal(x: Any, y: Any) -> KTensor:
    """Elementwise x != y, as bool."""
    return binary(cmp.NotEqualOp, x, y, "K.not_equal")


def greater(x: Any, y: Any) -> KTensor:
    """Elementwise x > y, as bool."""
    return binary(cmp.GreaterOp, x, y, "K.greater")


def greater_equal(x: Any, y: Any) -> KTensor:
    """Elementwise x >= y, as bool."""
    return binary(cmp.GreaterEqualOp, x, y, "K.greater_equal")


def less(x: Any, y: Any) -> KTensor:
    """Elementwise x < y, as bool."""
    return binary(cmp.LessOp, x, y, "K.less")


def less_equal(x: Any, y: Any) -> KTensor:
    """Elementwise x <= y, as bool."""
    return binary(cmp.LessEqualOp, x, y, "K.less_equal")


def where(condition: Any, x: Any, y: Any, where_name: str = "K.switch") -> KTensor:
    """Elementwise select between two tensors."""
    cond = as_tensor(condition, "bool", where_name)
    a, b = _pair(x, y, where_name)
    return trace.emit(cmp.SelectOp, cond, a, b, where=where_name)


def switch(condition: Any, then_expression: Any, else_expression: Any) -> KTensor:
    """Select between two tensors (or zero-argument callables) by a bool condition tensor;
    a condition of lower rank covers the expressions' leading axes (Keras's rule)."""
    then_value = then_expression() if callable(then_expression) else then_expression
    else_value = else_expression() if callable(else_expression) else else_expression
    cond = as_tensor(condition, "bool", "K.switch")
    if cond.dtype != "bool":
        cond = cast(cond, "bool")
    rank = builtins.max(_rank(then_value), _rank(else_value))
    if 0 < cond.ndim < rank:  # as Keras's TF backend: the condition's axes lead
        from aotk.backend.shape_ops import regroup  # shape_ops builds on this module

        spec = [(a,) for a in range(cond.ndim)] + [1] * (rank - cond.ndim)
        cond = regroup(cond, spec, "K.switch")
    elif cond.ndim > rank:
        raise ValueError(
            f"K.switch: the condition has rank {cond.ndim}, more than the expressions' {rank}"
        )
    return where(cond, then_value, else_value, "K.switch")


def _rank(x: Any) -> int:
    return x.ndim if isinstance(x, KTensor) else int(np.ndim(x))


def sigmoid(x: Any) -> KTensor:
    """1 / (1 + exp(-x)), computed from exp(-|x|) so that nothing overflows."""
    return unary(un.SigmoidOp, _floating(x, "K.sigmoid"), "K.sigmoid")


def softplus(x: Any) -> KTensor:
    """log(1 + exp(x)), computed as max(x, 0) + log(1 + exp(-|x|)) so it never overflows."""
    t = _floating(x, "K.softplus")
    return add(maximum(t, 0.0), log(add(1.0, exp(negative(abs(t))))))


def relu(
    x: Any, alpha: float = 0.0, max_value: float | None = None, threshold: float = 0.0
) -> KTensor:
    """Rectified linear unit with Keras 2.2's alpha, max_value and threshold."""
    t = as_tensor(x, where="K.relu")
    if alpha == 0 and threshold == 0:
        out = maximum(t, 0.0)
        return out if max_value is None else minimum(out, max_value)
    # selecting on x < threshold keeps NaN in the result, as in the reference
    above = where(less(t, threshold), 0.0, t, "K.relu")
    above = maximum(above, 0.0)
    if max_value is not None:
        above = minimum(above, max_value)
    if isinstance(alpha, int | float) and alpha == 0:
        return above  # also keeps relu(-inf) = 0: 0 * -inf would be NaN
    below = where(less(t, threshold), multiply(alpha, subtract(t, threshold)), 0.0, "K.relu")
    return add(below, above)


def _reduce(op: type[AotkOp], x: Any, axis: Axis, keepdims: bool, where: str) -> KTensor:
    t = as_tensor(x, where=where)
    try:
        axes = rd.normalize_axes(axis, t.ndim)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}: {err} (x: shape {t.shape})") from None
    if t.dtype == "bool" and op in (rd.ReduceMaxOp, rd.ReduceMinOp):
        # NumPy's max/min of bools are bools (any/all); the primitive reduces numbers
        out = trace.emit(op, cast(t, "uint8"), where=where, axes=axes, keepdims=bool(keepdims))
        return cast(out, "bool")
    if t.dtype == "bool":
        t = cast(t, "int32")  # Keras reduces bools as ints
    return trace.emit(op, t, where=where, axes=axes, keepdims=bool(keepdims))


def sum(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Sum over `axis` (all axes if None)."""
    return _reduce(rd.ReduceSumOp, x, axis, keepdims, "K.sum")


def prod(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Product over `axis` (all axes if None)."""
    return _reduce(rd.ReduceProdOp, x, axis, keepdims, "K.prod")


def max(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Maximum over `axis` (all axes if None)."""
    return _reduce(rd.ReduceMaxOp, x, axis, keepdims, "K.max")


def min(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Minimum over `axis` (all axes if None)."""
    return _reduce(rd.ReduceMinOp, x, axis, keepdims, "K.min")


def mean(x: Any, axis: Axis = None, keepdims: bool = False) -> KTensor:
    """Mean over `axis`; bools and ints are averaged in floatx."""
    t = _floating(x, "K.mean")
    total = _reduce(rd.ReduceSumOp, t, axis, keepdims, "K.mean")
    axes = rd.normalize_axes(axis, t.ndim)
    dims = [t.shape[a] for a in axes]
    if None in dims:
        count = trace.emit(sq.DimSizeOp, t, where="K.mean", axes=axes, dtype=t.dtype)
    else:
        n = 1
        for d in dims:
            n *= d  # type: ignore[operator]
        count = scalar(n, t.dtype)
    return divide(total, count)


def softmax(x: Any, axis: int = -1) -> KTensor:
    """exp(x - max) / sum(exp(x - max)) along `axis`."""
    t = _floating(x, "K.softmax")
    if t.ndim and axis in (-1, t.ndim - 1):  # one kernel, each row read once
        return trace.emit(SoftmaxOp, t, where="K.softmax")
    shifted = subtract(t, max(t, axis, keepdims=True))
    e = exp(shifted)
    return divide(e, sum(e, axis, keepdims=True))


__all__ = [
    "abs",
    "clip",
    "equal",
    "exp",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "not_equal",
    "pow",
    "prod",
    "relu",
    "sigmoid",
    "sign",
    "softmax",
    "softplus",
    "sqrt",
    "square",
    "sum",
    "switch",
    "tanh",
]
