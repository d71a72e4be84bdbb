"""The learning phase: K.learning_phase, set_learning_phase, in_train_phase, in_test_phase.

As in Keras's TensorFlow backend, `learning_phase()` is a bool scalar placeholder until
`set_learning_phase(v)` fixes it; from then on it is the Python int `v`, so Keras sees a
static phase and stops feeding it. A K.function may take the placeholder as an input (fed
0 or 1); otherwise it is fed the fixed phase (0, test, unless set) on every call. The
state belongs to the traced graph, so `K.clear_session()` resets it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aotk.backend.math_ops import switch
from aotk.dialect import trace
from aotk.dialect.trace import KTensor


def learning_phase() -> KTensor | int:
    """The learning phase: a bool scalar placeholder (1 while training), or the fixed int."""
    g = trace.graph()
    if g.fixed_phase is not None:
        return g.fixed_phase
    if g.learning_phase is None:
        g.learning_phase = KTensor(
            trace.placeholder_arg((), "bool", "keras_learning_phase"), name="keras_learning_phase"
        )
    return g.learning_phase


def set_learning_phase(value: int) -> None:
    """Fix the learning phase: 0 (test) or 1 (train)."""
    if value not in (0, 1) or isinstance(value, float):
        raise ValueError(f"K.set_learning_phase: expected 0 (test) or 1 (train), got {value!r}")
    trace.graph().fixed_phase = int(value)


def _value(x: Any) -> Any:
    return x() if isinstance(x, Callable) else x  # type: ignore[arg-type]


def in_train_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """`x` while training, `alt` otherwise (either may be a zero-argument callable).

    With the default `training`, a result that depends on the phase placeholder is marked
    `_uses_learning_phase`, which is how Keras knows to feed the phase to a model.
    """
    uses_phase = training is None
    if training is None:
        training = learning_phase()
    if not isinstance(training, KTensor):  # a Python flag picks a branch while tracing
        return _value(x) if training else _value(alt)
    out = switch(training, x, alt)
    if uses_phase:
        out._uses_learning_phase = True
    return out


def in_test_phase(x: Any, alt: Any, training: Any = None) -> Any:
    """`x` at test time, `alt` while training."""
    return in_train_phase(alt, x, training=training)


__all__ = ["in_test_phase", "in_train_phase", "learning_phase", "set_learning_phase"]
