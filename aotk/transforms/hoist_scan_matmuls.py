"""`aotk-hoist-scan-matmuls`: a scan's input projections as one matmul before the loop,
and the steps' ops that read nothing of the loop before it too.

An RNN step multiplies its input x_t by a weight the loop never changes (x_t @ W in every
gate). Done per step, that is T small matmuls of `batch` rows, which cannot fill a
register tile well; done for all steps at once, it is one matmul of T * batch rows on the
whole sequence [T, batch, D] (whose leading dims fold into M), and the step reads its row
of the result. The product becomes a new sequence of the scan; a sequence the body no
longer reads is dropped.

A pure op of the body whose operands all come from outside the scan (a GRU step's slice
of its recurrent weight) is computed once, before the loop: its users then read a value
from outside, which is what a prepacked recurrent matmul (`dialect.scan_prepack`) and a
scan run by blocks of rows (`dialect.scan_rows`) need of their weights.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import BlockArgument
from xdsl.passes import ModulePass
from xdsl.traits import Pure

from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.scan import ScanOp
from aotk.dialect.scan_prepack import defined_within
from aotk.ir_walk import ops_within


def hoist_scan_matmuls(module: ModuleOp) -> int:
    """Hoist every invariant-weight matmul of a sequence step; return how many."""
    hoisted = 0
    for scan in [op for op in ops_within(module) if isinstance(op, ScanOp)]:
        _hoist_invariants(scan)
        for op in list(scan.body.block.ops):
            if isinstance(op, MatMulOp) and _hoistable(scan, op):
                _hoist(scan, op)
                hoisted += 1
        drop_unread_sequences(scan)
    return hoisted


def _hoist_invariants(scan: ScanOp) -> None:
    """Move the body's pure ops of outside values alone (in order: chains move whole)
    before `scan`."""
    parent = scan.parent_block()
    assert parent is not None
    for op in list(scan.body.block.ops):
        if (
            op.has_trait(Pure)
            and not op.regions
            and not any(defined_within(v, scan) for v in op.operands)
        ):
            op.detach()
            parent.insert_op_before(op, scan)


def _hoistable(scan: ScanOp, op: MatMulOp) -> bool:
    """lhs is a step of one of the scan's sequences, rhs is defined outside the scan."""
    lhs = op.lhs
    is_step = (
        isinstance(lhs, BlockArgument) and lhs.block is scan.body.block and lhs.index < scan.num_seq
    )
    return is_step and not op.attrs().get("transpose_lhs") and not defined_within(op.rhs, scan)


def _hoist(scan: ScanOp, op: MatMulOp) -> None:
    """matmul(step of xs, w) -> the step of matmul(xs, w), a new sequence."""
    assert isinstance(op.lhs, BlockArgument)
    sequence = scan.sequences[op.lhs.index]
    steps = shape_of(sequence.type)[0]
    stacked = tensor(elem_of(op.result.type), (steps, *shape_of(op.result.type)))
    projection = MatMulOp.make([sequence, op.rhs], stacked, **op.attrs())
    parent = scan.parent_block()
    assert parent is not None
    parent.insert_op_before(projection, scan)
    position = scan.num_seq
    scan.operands = [*scan.sequences, projection.result, *scan.inits]
    scan.properties["n_seq"] = IntegerAttr(position + 1, i64)
    step = scan.body.block.insert_arg(op.result.type, position)
    op.result.replace_all_uses_with(step)
    op.detach()
    op.erase()


def drop_unread_sequences(scan: ScanOp) -> None:
    """Remove the sequences whose steps the body does not read (one always stays)."""
    block = scan.body.block
    for index in reversed(range(scan.num_seq)):
        if block.args[index].uses or scan.num_seq == 1:
            continue
        block.erase_arg(block.args[index])
        operands = list(scan.operands)
        del operands[index]
        scan.operands = operands
        scan.properties["n_seq"] = IntegerAttr(scan.num_seq - 1, i64)


@dataclass(frozen=True)
class AotkHoistScanMatmulsPass(ModulePass):
    """Move each scan step's matmul of a sequence by an invariant weight before the loop."""

    name = "aotk-hoist-scan-matmuls"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        hoist_scan_matmuls(op)
