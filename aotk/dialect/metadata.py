"""Typed function attributes through which the stages pass facts about a traced function.

- `aotk.arg_names = ["x", "w"]`: the traced function's argument names, as the user gave them.
- `aotk.updates = array<i64: out, arg, ...>`: pairs of an output that is a variable's new
  value and the input holding that variable (-1: the variable is not an input).
- `aotk.kernel = array<i64: n_in, n_out>`: marks a lowered entry, with its input and output
  counts (then come the workspace and the dynamic dims).
- `aotk.may_alias = array<i64: ...>`: the pointer arguments that may overlap another (a
  variable and the buffer its update goes to): they get no `noalias`.
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import DenseArrayBase, i64
from xdsl.ir import Operation

ARG_NAMES = "aotk.arg_names"
UPDATES = "aotk.updates"
KERNEL = "aotk.kernel"
MAY_ALIAS = "aotk.may_alias"


def set_ints(op: Operation, name: str, values: Iterable[int]) -> None:
    op.attributes[name] = DenseArrayBase.from_list(i64, list(values))


def ints(op: Operation, name: str) -> tuple[int, ...]:
    """The integers of attribute `name` of `op`; () when it has none."""
    attr = op.attributes.get(name)
    if attr is None:
        return ()
    if not isinstance(attr, DenseArrayBase):
        raise ValueError(f"{op.name}: attribute {name} must be an array<i64: ...>, got {attr}")
    return tuple(int(v) for v in attr.iter_values())
