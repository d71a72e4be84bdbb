"""Backend names that real Keras 2.2/2.3 imports or calls beyond the reference API.

`import keras` with `KERAS_BACKEND=aotk.backend` reads these at import time; the layers,
optimizers and metrics call them while building a model. docs/keras.md lists the whole
contract (these names, the tensor attributes Keras reads, the learning phase).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from aotk.backend.math_ops import prod
from aotk.backend.sparse import KSparseTensor
from aotk.backend.tensors import KVariable, as_tensor, cast
from aotk.dialect import shape_query as sq
from aotk.dialect import trace
from aotk.dialect.trace import KTensor

F = TypeVar("F", bound=Callable[..., Any])


def is_variable(x: Any) -> bool:
    """Whether `x` is a backend variable."""
    return isinstance(x, KVariable)


def size(x: Any, name: str | None = None) -> KTensor:
    """The number of elements of `x`, as an int32 scalar read at run time."""
    if isinstance(x, KSparseTensor):
        raise TypeError("K.size: x must be a dense tensor, got a sparse tensor")
    t = as_tensor(x, where="K.size")
    if None not in t.shape:
        return as_tensor(math.prod(t.shape), "int32")  # type: ignore[arg-type]
    return cast(prod(trace.emit(sq.ShapeOfOp, t, where="K.size")), "int32")


def get_variable_shape(x: Any) -> tuple[int, ...]:
    """The shape of a variable, as a tuple of ints."""
    if not isinstance(x, KVariable):
        raise TypeError(f"K.get_variable_shape: expected a variable, got {x!r}")
    return tuple(x.storage.shape)


@contextmanager
def name_scope(name: str) -> Iterator[str]:
    """Prefix the names of the variables made inside it with `name/`."""
    if not isinstance(name, str):
        raise TypeError(f"K.name_scope: name must be a str, got {name!r}")
    scopes = trace.graph().name_scopes
    scopes.append(re.sub(r"[^A-Za-z0-9_.\-]", "_", name))
    try:
        yield "/".join(scopes)
    finally:
        scopes.pop()


@contextmanager
def control_dependencies(control_inputs: Any) -> Iterator[None]:
    """Inside it, reads of a variable that one of `control_inputs` updates see the new value.

    That is what TensorFlow's control dependencies give Keras: a stateful metric's result
    is computed after its update. Other control inputs (tensors) are ordering hints that a
    pure graph does not need.
    """
    from aotk.backend.training import KUpdate

    reads = trace.graph().updated_reads
    saved = dict(reads)
    for u in _flatten(control_inputs):
        if isinstance(u, KUpdate):
            reads[u.variable.value] = reads.get(u.value.value, u.value.value)
    try:
        yield
    finally:
        reads.clear()
        reads.update(saved)


def _flatten(xs: Any) -> list[Any]:
    if xs is None:
        return []
    if isinstance(xs, list | tuple):
        return [y for x in xs for y in _flatten(x)]
    return [xs]


def pattern_broadcast(x: Any, broadcastable: Any) -> KTensor:
    """`x` unchanged: aotk broadcasts by shape, so Theano's patterns are not needed."""
    return as_tensor(x, where="K.pattern_broadcast")


def symbolic(func: F) -> F:
    """Decorator for graph-building functions: every aotk function is symbolic."""
    return func


def eager(func: F) -> F:
    """Decorator for eager functions: aotk has no eager mode, so this changes nothing."""
    return func


class Session:
    """What `K.get_session()` returns: `run` evaluates tensors with compiled code."""

    graph = property(lambda self: trace.graph())

    def run(self, fetches: Any, feed_dict: dict[Any, Any] | None = None) -> Any:
        """Compute `fetches` (a tensor or a list), feeding `feed_dict`'s placeholders."""
        from aotk.function import Function

        feeds = dict(feed_dict or {})
        outputs = fetches if isinstance(fetches, list | tuple) else [fetches]
        fn = Function(list(feeds), list(outputs), where="K.get_session().run")
        values = fn(list(feeds.values()))
        return values if isinstance(fetches, list | tuple) else values[0]


_SESSION = Session()


def get_session() -> Session:
    """The session: its `run(fetches, feed_dict)` computes tensors."""
    return _SESSION


def set_session(session: Any) -> None:
    """Accept only the session `get_session` returns: aotk has no other kind."""
    if session is not _SESSION:
        raise ValueError(
            f"K.set_session: aotk has one session, the one K.get_session() returns; got {session!r}"
        )


__all__ = [
    "control_dependencies",
    "eager",
    "get_session",
    "get_variable_shape",
    "is_variable",
    "name_scope",
    "pattern_broadcast",
    "set_session",
    "size",
    "symbolic",
]
