"""Typed function attributes through which the stages pass facts about a traced function.

- `aotk.arg_names = ["x", "w"]`: the traced function's argument names, as the user gave them.
- `aotk.updates = array<i64: out, arg, ...>`: pairs of an output that is a variable's new
  value and the input holding that variable (-1: the variable is not an input).
- `aotk.kernel = array<i64: n_in, n_out>`: marks a lowered entry, with its input and output
  counts (then come the workspace and the dynamic dims).
- `aotk.may_alias = array<i64: ...>`: the pointer arguments that may overlap another (a
  variable and the buffer its update goes to): they get no `noalias`.
- `aotk.shared_loops`: marks the loops of an op that several ops of an entry call
  (`lowering.op_memo`); its kernels are outlined as an entry's are.
- `aotk.alias_classes = array<i64: ...>`: of such loops, for each argument, the first
  argument that came from the same `noalias` argument of the entry (-1: none did).
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects.builtin import DenseArrayBase, i64
from xdsl.ir import Operation

ARG_NAMES = "aotk.arg_names"
UPDATES = "aotk.updates"
KERNEL = "aotk.kernel"
MAY_ALIAS = "aotk.may_alias"
SHARED_LOOPS = "aotk.shared_loops"
ALIAS_CLASSES = "aotk.alias_classes"


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
