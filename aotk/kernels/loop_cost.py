"""What a loop nest costs, for deciding which loops to split over threads.

Counted in element operations: an op per scalar, a vector op per lane, a loop's body
times its trip count (known from constant bounds, else hinted by the emitter, else
`UNKNOWN_TRIPS`), a branch as its costlier side; constants are free.
"""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.dialects import arith, scf
from xdsl.dialects.builtin import IntegerAttr, VectorType
from xdsl.ir import Block, Operation

# Trips assumed for an inner loop whose bounds are only known at run time.
UNKNOWN_TRIPS = 16


def block_cost(block: Block, hints: Mapping[Operation, int]) -> int:
    """Element operations one run of `block` executes; `hints` gives typical trip counts
    of loops with dynamic bounds."""
    total = 0
    for op in block.ops:
        if isinstance(op, arith.ConstantOp | scf.YieldOp):
            continue
        inner = [block_cost(b, hints) for r in op.regions for b in r.blocks]
        if isinstance(op, scf.ForOp):
            trips = static_trips(op)
            if trips is None:
                trips = hints.get(op, UNKNOWN_TRIPS)
            total += trips * sum(inner)
        elif isinstance(op, scf.IfOp):
            total += 1 + max(inner, default=0)
        else:
            total += _lanes(op) + sum(inner)
    return total


def _lanes(op: Operation) -> int:
    for v in (*op.results, *op.operands):
        if isinstance(v.type, VectorType):
            return v.type.element_count()
    return 1


def static_trips(loop: scf.ForOp) -> int | None:
    """The trip count of `loop` if its bounds are constants."""
    bounds = []
    for v in (loop.lb, loop.ub, loop.step):
        op = v.owner
        if not isinstance(op, arith.ConstantOp) or not isinstance(op.value, IntegerAttr):
            return None
        bounds.append(int(op.value.value.data))
    lb, ub, step = bounds
    return max(-(-(ub - lb) // step), 0)
