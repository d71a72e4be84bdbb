"""Session-level functions of the Keras API: uids, sparse tensors, predicates, printing."""

from __future__ import annotations

import weakref
from collections import defaultdict
from typing import Any

import numpy as np

from aotk.backend.sparse import KSparseTensor, densify
from aotk.backend.tensors import as_tensor
from aotk.dialect import elementwise as ew
from aotk.dialect import trace
from aotk.dialect.debug import PrintTensorOp
from aotk.dialect.trace import KTensor

# per graph, as Keras keeps them per TF graph: K.clear_session starts every prefix again
_UIDS: weakref.WeakKeyDictionary[trace.Graph, defaultdict[str, int]] = weakref.WeakKeyDictionary()
_MANUAL_VAR_INIT = {"value": False}


def get_uid(prefix: str = "") -> int:
    """1 for the first call with `prefix` in the current graph, then 2, 3, ..."""
    uids = _UIDS.setdefault(trace.graph(), defaultdict(int))
    uids[prefix] += 1
    return uids[prefix]


def reset_uids() -> None:
    """Start every prefix's uids again at 1."""
    _UIDS.clear()


def manual_variable_initialization(value: bool) -> None:
    """Set Keras's manual-initialization flag.

    aotk variables hold their initial value from the moment they are made, so the flag
    changes nothing; it is kept for code that sets it.
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"K.manual_variable_initialization: value must be a bool, got {value!r}")
    _MANUAL_VAR_INIT["value"] = bool(value)


def is_sparse(tensor: Any) -> bool:
    """Whether `tensor` is a sparse tensor."""
    return isinstance(tensor, KSparseTensor)


def to_dense(tensor: Any) -> Any:
    """A sparse tensor as a dense one (computed by compiled code); other tensors unchanged."""
    if not isinstance(tensor, KSparseTensor):
        return tensor
    return densify(tensor, "K.to_dense")


def is_tensor(x: Any) -> bool:
    """Whether `x` is a symbolic tensor (variables and sparse tensors included)."""
    return isinstance(x, KTensor | KSparseTensor)


def is_keras_tensor(x: Any) -> bool:
    """Whether `x` was made by a Keras layer or Input (has `_keras_history`).

    Placeholders and variables made by the backend are not Keras tensors.
    """
    if not is_tensor(x):
        raise ValueError(
            f"K.is_keras_tensor: expected a symbolic tensor, got an instance of {type(x)!r}"
        )
    return hasattr(x, "_keras_history")


def is_placeholder(x: Any) -> bool:
    """Whether `x` is a placeholder of the current graph."""
    if isinstance(x, KSparseTensor):
        return x.dense_dims is not None and is_placeholder(x.values)
    return (
        isinstance(x, KTensor)
        and x.graph is trace.graph()
        and x.value in trace.graph().placeholders
    )


def identity(x: Any, name: str | None = None) -> KTensor:
    """A new tensor with the content of `x` (free after compilation)."""
    t = as_tensor(x, where="K.identity")
    out = trace.emit(ew.CastOp, t, where="K.identity", dtype=t.dtype)
    if name is not None:
        out.name = name
    return out


def print_tensor(x: Any, message: str = "") -> KTensor:
    """`x`, printing `message` and its values to stdout whenever the result is computed."""
    if not isinstance(message, str):
        raise TypeError(f"K.print_tensor: message must be a str, got {message!r}")
    t = as_tensor(x, where="K.print_tensor")
    return trace.emit(PrintTensorOp, t, where="K.print_tensor", message=message)


__all__ = [
    "get_uid",
    "identity",
    "is_keras_tensor",
    "is_placeholder",
    "is_sparse",
    "is_tensor",
    "manual_variable_initialization",
    "print_tensor",
    "reset_uids",
    "to_dense",
]
