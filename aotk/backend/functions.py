"""`K.function` and `K.clear_session`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import SSAValue

from aotk import function as _function
from aotk import host_code
from aotk.backend.session import reset_uids
from aotk.backend.training import KUpdate, make_update
from aotk.dialect import trace


def function(
    inputs: Sequence[Any], outputs: Any, updates: Any = None, name: str | None = None, **kwargs: Any
) -> _function.Function:
    """Compile `outputs` as a function of the placeholders `inputs`."""
    if kwargs:
        raise TypeError(f"K.function: unexpected keyword arguments {sorted(kwargs)}")
    # checked before anything iterates them: a tensor would be iterated along its first axis
    if not isinstance(inputs, list | tuple):
        raise TypeError(f"K.function: inputs must be a list of placeholders, got {inputs!r}")
    if not isinstance(outputs, list | tuple | trace.KTensor):
        raise TypeError(f"K.function: outputs must be a tensor or a list, got {outputs!r}")
    if updates is not None and not isinstance(updates, list | tuple):
        raise TypeError(f"K.function: updates must be a list, got {updates!r}")
    return _function.Function(list(inputs), outputs, _updates(updates), name=name)


def _updates(updates: Any) -> list[KUpdate]:
    """K.update results and (variable, new value) pairs, as KUpdates; an update given again
    (a variable and the same value) counts once, as Keras lists a shared layer's updates
    once for each model that wraps it."""
    out: dict[tuple[SSAValue, SSAValue], KUpdate] = {}
    for i, u in enumerate(updates or []):
        if isinstance(u, tuple | list) and len(u) == 2:
            u = make_update(u[0], u[1], "K.function")
        elif not isinstance(u, KUpdate):
            raise TypeError(
                f"K.function: updates[{i}] must be a K.update result or a (variable, value) pair, "
                f"got {u!r}"
            )
        out.setdefault((u.variable.value, u.value.value), u)
    return list(out.values())


def clear_session() -> None:
    """Drop the traced graph and the compiled code, and reset the uids."""
    trace.reset_graph()
    host_code.clear_cache()
    reset_uids()


__all__ = [
    "clear_session",
    "function",
]
