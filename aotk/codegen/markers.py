"""Vector operations that the llvm dialect aotk lowers to cannot spell, named by calls
that `expand` rewrites in the LLVM IR module.

xDSL's llvm dialect verifies `llvm.fcmp`, `llvm.icmp` and `llvm.select` on scalars only
(a compare's operands floats or integers, its result and a select's condition i1) and
has no `extractelement`. So aotk names these operations on vectors as calls of
`llvm.aotk.<kind>.<type>` (an `llvm.call_intrinsic`, whose prefix the dialect checks),
which verify and print at every stage, and `expand` replaces each call in the module
that `llvm_ir.to_llvm_text` makes: LLVM never sees the names. The kinds:

- `lane_permute` (`lane_permute`): `y[i] = table[index[i]]`;
- `fcmp.<predicate>` and `icmp.<predicate>`, arith's predicates: a vector of i1;
- `select`: `cond ? a : b` lane by lane, `cond` a vector of i1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir
from llvmlite.ir.instructions import CallInstr

from aotk.codegen import lane_permute

PREFIX = "llvm.aotk."
Expansion = Callable[[ir.IRBuilder, str, Sequence[Any]], ir.Value]  # llvmlite values

# arith's float predicates as llvmlite spells them: (ordered, operator)
_FLOAT = {
    "oeq": (True, "=="),
    "ogt": (True, ">"),
    "oge": (True, ">="),
    "olt": (True, "<"),
    "ole": (True, "<="),
    "one": (True, "!="),
    "ord": (True, "ord"),
    "ueq": (False, "=="),
    "ugt": (False, ">"),
    "uge": (False, ">="),
    "ult": (False, "<"),
    "ule": (False, "<="),
    "une": (False, "!="),
    "uno": (False, "uno"),
}
_INT = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def name(kind: str, type_suffix: str) -> str:
    """The marker for `kind` (see the module's list) on values of `type_suffix` (v8f32)."""
    return f"{PREFIX}{kind}.{type_suffix}"


def expand(module: ir.Module) -> None:
    """Replace every marker call in `module` by what it names, and drop the markers'
    declarations."""
    markers = [f for f in module.functions if f.name.startswith(PREFIX)]
    if not markers:
        return
    for fn in module.functions:
        calls = [
            (block, instr)
            for block in fn.blocks
            for instr in block.instructions
            if isinstance(instr, CallInstr) and instr.callee in markers
        ]
        for block, call in calls:
            _replace(fn, block, call)
    for f in markers:
        del module.globals[f.name]


def _replace(fn: ir.Function, block: ir.Block, call: CallInstr) -> None:
    kind, _, rest = call.callee.name[len(PREFIX) :].partition(".")
    builder = ir.IRBuilder(block)
    builder.position_before(call)
    value = _EXPANSIONS[kind](builder, rest, call.args)
    block.instructions.remove(call)
    for other in fn.blocks:
        for instr in other.instructions:
            instr.replace_usage(call, value)


def _fcmp(builder: ir.IRBuilder, rest: str, args: Sequence[Any]) -> ir.Value:
    predicate = rest.partition(".")[0]
    lhs, rhs = args
    if predicate in ("false", "true"):
        flags = ir.VectorType(ir.IntType(1), lhs.type.count)
        return ir.Constant(flags, [int(predicate == "true")] * lhs.type.count)
    ordered, op = _FLOAT[predicate]
    compare = builder.fcmp_ordered if ordered else builder.fcmp_unordered
    return compare(op, lhs, rhs)


def _icmp(builder: ir.IRBuilder, rest: str, args: Sequence[Any]) -> ir.Value:
    predicate = rest.partition(".")[0]
    op = _INT[predicate.removeprefix("s").removeprefix("u")]
    compare = builder.icmp_unsigned if predicate.startswith("u") else builder.icmp_signed
    lhs, rhs = args
    return compare(op, lhs, rhs)


def _select(builder: ir.IRBuilder, rest: str, args: Sequence[Any]) -> ir.Value:
    cond, a, b = args
    return builder.select(cond, a, b)


_EXPANSIONS: dict[str, Expansion] = {
    "lane_permute": lambda builder, _, args: lane_permute.build(builder, *args),
    "fcmp": _fcmp,
    "icmp": _icmp,
    "select": _select,
}
