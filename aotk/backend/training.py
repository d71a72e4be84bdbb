"""Gradients and variable updates: K.gradients, K.stop_gradient, K.update and friends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aotk import autodiff
from aotk.backend.math_ops import add, multiply, subtract
from aotk.backend.tensors import KVariable, as_tensor
from aotk.dialect.base import fmt_shape
from aotk.dialect.trace import KTensor


@dataclass(frozen=True)
class KUpdate:
    """`variable <- value`, applied by K.function after computing every output."""

    variable: KVariable
    value: KTensor


def gradients(loss: KTensor, variables: Any) -> list[KTensor | None]:
    """Gradients of `loss` (summed if not scalar) with respect to each of `variables`."""
    return autodiff.gradients(loss, variables)


def stop_gradient(variables: Any) -> Any:
    """The same tensor(s), seen as constants by K.gradients."""
    return autodiff.stop_gradient(variables)


def update(x: KVariable, new_x: Any) -> KUpdate:
    """Set a variable to a new value."""
    return make_update(x, new_x, "K.update")


def update_add(x: KVariable, increment: Any) -> KUpdate:
    """Add `increment` to a variable."""
    x = _target(x, "K.update_add")
    return make_update(x, add(x, as_tensor(increment, x.dtype, "K.update_add")), "K.update_add")


def update_sub(x: KVariable, decrement: Any) -> KUpdate:
    """Subtract `decrement` from a variable."""
    x = _target(x, "K.update_sub")
    return make_update(
        x, subtract(x, as_tensor(decrement, x.dtype, "K.update_sub")), "K.update_sub"
    )


def moving_average_update(x: KVariable, value: Any, momentum: float) -> KUpdate:
    """x <- x * momentum + value * (1 - momentum)."""
    x = _target(x, "K.moving_average_update")
    value = as_tensor(value, x.dtype, "K.moving_average_update")
    new = add(multiply(x, float(momentum)), multiply(value, 1.0 - float(momentum)))
    return make_update(x, new, "K.moving_average_update")


def _target(x: Any, where: str) -> KVariable:
    if not isinstance(x, KVariable):
        raise TypeError(f"{where}: the target must be a variable, got {x!r}")
    return x


def make_update(x: Any, value: Any, where: str) -> KUpdate:
    """Check that `value` fits variable `x` and pair them."""
    x = _target(x, where)
    value = as_tensor(value, x.dtype, where)
    if value.dtype != x.dtype:
        raise TypeError(
            f"{where}: variable '{x.name}' is {x.dtype}, the new value is {value.dtype}"
        )
    shape = value.shape
    if len(shape) != x.ndim or any(
        d is not None and d != s for d, s in zip(shape, x.shape, strict=True)
    ):
        raise ValueError(
            f"{where}: variable '{x.name}' has shape {fmt_shape(x.shape)}, "
            f"the new value has shape {fmt_shape(shape)}"
        )
    return KUpdate(x, value)


__all__ = [
    "gradients",
    "moving_average_update",
    "stop_gradient",
    "update",
    "update_add",
    "update_sub",
]
