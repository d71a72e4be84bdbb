"""Python operators on tensors: `+ - * / ** @`, unary `-`, comparisons and `x[...]`."""

from __future__ import annotations

from typing import Any

from aotk.backend import math_ops as m
from aotk.backend import shape_ops as s
from aotk.dialect.trace import KTensor


def _reflected(fn: Any) -> Any:
    return lambda self, other: fn(other, self)


_OPERATORS = {
    "__add__": m.add,
    "__radd__": _reflected(m.add),
    "__sub__": m.subtract,
    "__rsub__": _reflected(m.subtract),
    "__mul__": m.multiply,
    "__rmul__": _reflected(m.multiply),
    "__truediv__": m.divide,
    "__rtruediv__": _reflected(m.divide),
    "__pow__": m.pow,
    "__rpow__": _reflected(m.pow),
    "__matmul__": s.dot,
    "__rmatmul__": _reflected(s.dot),
    "__neg__": m.negative,
    "__pos__": lambda self: self,
    "__abs__": m.abs,
    "__lt__": m.less,
    "__le__": m.less_equal,
    "__gt__": m.greater,
    "__ge__": m.greater_equal,
    "__getitem__": s.getitem,
}


def install() -> None:
    """Give KTensor its operators (== and != stay identity, as tensors are dict keys)."""
    for name, fn in _OPERATORS.items():
        setattr(KTensor, name, fn)
