"""`aotk-merge-scans`: one loop where two scans run the same steps.

Backpropagation through time needs the state each step started from, so the gradient of an
`aotk.scan` traces a second scan over the same sequences with the same body, which also
stacks those states (`dialect/scan_bptt.py`). The forward scan then runs twice. When a scan
B has the same operands as an earlier scan A and B's body is A's, yielding the same values
first and more after them, B computes everything A does: B moves up to A's place, A's
results become B's first results, and A is erased.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.scan import ScanOp
from aotk.ir_walk import ops_within
from aotk.transforms.structure import op_signature


def merge_scans(module: ModuleOp) -> int:
    """Merge every scan into a later one that subsumes it; return how many merged."""
    merged = 0
    scans = [op for op in ops_within(module) if isinstance(op, ScanOp)]
    for a in scans:
        b = next((b for b in scans if b is not a and _subsumes(b, a)), None)
        if b is None or b.parent is None or a.parent is None:
            continue
        a_block = a.parent_block()
        assert a_block is not None
        _rematerialize_late_constants(b, a)
        b.detach()
        a_block.insert_op_before(b, a)
        for old, new in zip(a.results, b.results, strict=False):
            old.replace_all_uses_with(new)
        a.detach()
        a.erase()
        scans = [s for s in scans if s is not a]
        merged += 1
    return merged


def _subsumes(b: ScanOp, a: ScanOp) -> bool:
    """B computes A: same operands and step count, and A's body is a prefix of B's."""
    return (
        b.parent_block() is a.parent_block()
        and b.num_seq == a.num_seq
        and list(b.operands) == list(a.operands)
        and len(b.results) >= len(a.results)
        and list(b.result_types)[: len(a.results)] == list(a.result_types)
        and _same_body(a.body.block, b.body.block)
        and _defined_before(b, a)
    )


def _late_values(b: ScanOp, a: ScanOp) -> list[SSAValue]:
    """The values B uses that are defined in A's block after A (B cannot move up past
    them as it is)."""
    block = a.parent_block()
    assert block is not None
    before = set()
    for op in block.ops:
        if op is a:
            break
        before.add(op)
    inside = set(ops_within(b))
    return [
        v
        for op in ops_within(b)
        for v in op.operands
        if isinstance(v.owner, Operation)
        and v.owner not in inside
        and v.owner not in before
        and v.owner.parent_block() is block
    ]


def _defined_before(b: ScanOp, a: ScanOp) -> bool:
    """B may move to A's place: what it uses is defined before A, or is a constant (cse
    may have given B's body a constant of the code after A: it is made again)."""
    return all(isinstance(v.owner, ConstantOp) for v in _late_values(b, a))


def _rematerialize_late_constants(b: ScanOp, a: ScanOp) -> None:
    """A copy before A of each constant B uses from after A."""
    copies: dict[SSAValue, SSAValue] = {}
    for v in _late_values(b, a):
        if v not in copies:
            clone = v.owner.clone()  # type: ignore[union-attr]
            a.parent_block().insert_op_before(clone, a)  # type: ignore[union-attr]
            copies[v] = clone.results[0]
    inside = set(ops_within(b))
    for v, copy in copies.items():
        for use in list(v.uses):
            if use.operation in inside:
                use.operation.operands[use.index] = copy


def _same_body(a: Block, b: Block) -> bool:
    """The same ops on the same values, B's terminator yielding A's values first."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(a.args, b.args, strict=False))
    if len(a.args) != len(b.args) or [x.type for x in a.args] != [x.type for x in b.args]:
        return False
    if not _same_ops(list(a.ops)[:-1], list(b.ops)[:-1], mapping):
        return False
    a_end, b_end = a.last_op, b.last_op
    assert a_end is not None and b_end is not None
    ends = list(b_end.operands)[: len(a_end.operands)]
    return _keys(a_end.operands, mapping) == _keys(ends, {})


def _keys(values: Iterable[SSAValue], mapping: dict[SSAValue, SSAValue]) -> list[Hashable]:
    """What must match: a constant by its value (cse may have moved or shared it), any
    other value by its counterpart in the other body."""
    return [
        ("constant", op_signature(v.owner))
        if isinstance(v.owner, ConstantOp)
        else mapping.get(v, v)
        for v in values
    ]


def _same_ops(a_ops: list[Operation], b_ops: list[Operation], mapping: dict) -> bool:
    """Pairwise the same op on corresponding values (constants aside); extends `mapping`
    with the results."""
    a_ops = [op for op in a_ops if not isinstance(op, ConstantOp)]
    b_ops = [op for op in b_ops if not isinstance(op, ConstantOp)]
    if len(a_ops) != len(b_ops):
        return False
    for x, y in zip(a_ops, b_ops, strict=True):
        if op_signature(x) != op_signature(y) or len(x.regions) != len(y.regions):
            return False
        if _keys(x.operands, mapping) != _keys(y.operands, {}):
            return False
        for rx, ry in zip(x.regions, y.regions, strict=True):
            bx, by = rx.block, ry.block
            mapping.update(zip(bx.args, by.args, strict=False))
            if len(bx.args) != len(by.args) or not _same_ops(list(bx.ops), list(by.ops), mapping):
                return False
        mapping.update(zip(x.results, y.results, strict=True))
    return True


@dataclass(frozen=True)
class AotkMergeScansPass(ModulePass):
    """Merge each scan into a later one that computes it and more."""

    name = "aotk-merge-scans"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_scans(op)
