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
- `aotk.allocation` (on a `ptr_xdsl.ptradd` of an entry's workspace pointer): a buffer
  the workspace planner placed there, which overlaps no other buffer live with it
  (`lowering.aliasing`).
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, StringAttr, i64
from xdsl.ir import Operation

ARG_NAMES = "aotk.arg_names"
UPDATES = "aotk.updates"
KERNEL = "aotk.kernel"
MAY_ALIAS = "aotk.may_alias"
SHARED_LOOPS = "aotk.shared_loops"
ALIAS_CLASSES = "aotk.alias_classes"
ALLOCATION = "aotk.allocation"


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


def check(fn: func.FuncOp) -> None:
    """Raise ValueError, naming the function and the attribute, if one of `fn`'s aotk
    attributes does not fit its signature (what a pass reading it would index out of)."""
    args, outs = fn.function_type.inputs.data, fn.function_type.outputs.data
    where = f"function @{fn.sym_name.data}: attribute"
    names = fn.attributes.get(ARG_NAMES)
    if names is not None and not (
        isinstance(names, ArrayAttr) and all(isinstance(n, StringAttr) for n in names.data)
    ):
        raise ValueError(f"{where} {ARG_NAMES} must be an array of strings, got {names}")
    _check_updates(ints(fn, UPDATES), args, outs, f"{where} {UPDATES}")
    kernel = ints(fn, KERNEL)
    if KERNEL in fn.attributes and (len(kernel) != 2 or min(kernel) < 0 or sum(kernel) > len(args)):
        raise ValueError(
            f"{where} {KERNEL} must be [inputs, outputs] counting at most the {len(args)} "
            f"arguments, got {list(kernel)}"
        )
    for i in ints(fn, MAY_ALIAS):
        if not 0 <= i < len(args):
            raise ValueError(f"{where} {MAY_ALIAS}: argument {i} out of range [0, {len(args)})")
    classes = ints(fn, ALIAS_CLASSES)
    if ALIAS_CLASSES in fn.attributes and len(classes) != len(args):
        raise ValueError(
            f"{where} {ALIAS_CLASSES} must have one class per argument ({len(args)}), "
            f"got {len(classes)}"
        )


def _check_updates(pairs: tuple[int, ...], args: tuple, outs: tuple, where: str) -> None:
    if len(pairs) % 2:
        raise ValueError(f"{where} must hold (output, input) pairs, got {len(pairs)} integers")
    seen: set[int] = set()
    for out, arg in zip(pairs[::2], pairs[1::2], strict=True):
        if not 0 <= out < len(outs) or out in seen:
            raise ValueError(
                f"{where}: output {out} is out of range [0, {len(outs)}) or updated twice"
            )
        seen.add(out)
        if not -1 <= arg < len(args):
            raise ValueError(f"{where}: input {arg} is out of range [-1, {len(args)})")
        if arg >= 0 and args[arg] != outs[out]:
            raise ValueError(
                f"{where}: output {out} ({outs[out]}) cannot update input {arg} ({args[arg]})"
            )
