"""Carries of a scan that nothing needs: their final value is not read, and no value the
loop does need is computed from them.

A scan written by hand, or one of merged scans, may carry a value nobody reads (K.gradients
itself gives a backward scan carries only for the values asked for). Such a carry can go
with the ops that compute its new value (`aotk-scan-accumulations` rebuilds the scan
without it).
"""

from __future__ import annotations

from xdsl.ir import Block, Operation, SSAValue
from xdsl.transforms.dead_code_elimination import would_be_trivially_dead

from aotk.dialect import trace
from aotk.dialect.fused import YieldOp
from aotk.dialect.scan import ScanOp


def dead_carries(scan: ScanOp) -> set[int]:
    """The carries of `scan` whose results are unread and that no needed value (a read
    result's new value or what an op with effects reads, transitively) depends on."""
    block = scan.body.block
    end = block.last_op
    assert isinstance(end, YieldOp)
    n_c = scan.num_carries
    needed = {i for i in range(n_c) if scan.results[i].uses}
    roots = [v for j, v in enumerate(end.values[n_c:]) if scan.results[n_c + j].uses]
    roots += [v for op in block.ops if _has_effects(op) for v in trace.used_values(op)]
    while True:
        reached = _depends_on([*roots, *(end.values[i] for i in needed)], block)
        more = {i for i in range(n_c) if block.args[scan.num_seq + i] in reached}
        if more <= needed:
            return set(range(n_c)) - needed
        needed |= more


def _depends_on(values: list[SSAValue], block: Block) -> set[SSAValue]:
    """`values` and every value of `block` (op results and arguments) they are computed
    from."""
    seen: set[SSAValue] = set()
    stack = list(values)
    while stack:
        value = stack.pop()
        if value in seen:
            continue
        seen.add(value)
        owner = value.owner
        if isinstance(owner, Operation) and owner.parent_block() is block:
            stack.extend(trace.used_values(owner))
    return seen


def _has_effects(op: Operation) -> bool:
    return not isinstance(op, YieldOp) and not would_be_trivially_dead(op)
