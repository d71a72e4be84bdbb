"""A scan whose steps keep the batch's rows apart, run by blocks of rows in parallel.

An LSTM or GRU step is row-wise: row i of its new state depends on row i of the state
and of the step's input alone (the weights are the same for every row). Blocks of rows
then need not wait for one another: each block runs all the steps on one thread, on its
rows of every buffer. The scan whole hands each step's kernels to the threads and waits
for them: a barrier or more a step.

Row-wise: every sequence's step and every carry has the same leading dim, the batch's
rows, and every body op gives those rows from operands that have them or broadcast
along them. The ops known row-wise: elementwise ops and `aotk.fused`, a prepacked
matmul of a row-wise matrix by a weight from outside the scan, a slice that keeps every
row, a concatenation along another axis, a reshape that keeps the rows (K.rnn's mask).
A value from outside the scan with the batch's rows (a dropout mask made once for all
steps) may be an elementwise operand: each block reads its own rows of it. Anything
else keeps the scan whole, as do static rows too few for two blocks. Blocks are whole
register tiles of the matmul's rows, at most MOST_BLOCKS of them. Rows known only at
the call are split only if every step, carry and such value has as many then (a step
of one row may broadcast against a state of many); else one block runs them all.

The blocks run the scan's own lowering (`scan_loop`) on a copy of the scan whose body
has a dynamic leading dim: each body op then takes its rows from its buffers (a block's)
rather than from its type (all of them).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from aotk.dialect.base import elem_of, encode_attr, shape_of, tensor
from aotk.dialect.fused import FusedOp, YieldOp
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.registry import Kind, kind_of
from aotk.dialect.scan import ScanOp
from aotk.dialect.scan_prepack import defined_within, prepackable
from aotk.dialect.shape import FULL, ConcatOp, ReshapeOp, SliceOp
from aotk.kernels import matmul_prepacked
from aotk.kernels.kernel import DimV, Kernel

MOST_BLOCKS = 8  # blocks of rows at most: a few per thread, so that threads even out


@dataclass(frozen=True)
class RowSplit:
    """How a row-wise scan runs by blocks: over `batch` rows (None: known at run time)
    in blocks of `per_block` (None: chosen at run time) of whole `tile`s of rows;
    `captured`: the values from outside the scan that its steps read by rows."""

    batch: int | None
    per_block: int | None
    tile: int
    captured: tuple[SSAValue, ...] = ()


def row_split(op: ScanOp) -> RowSplit | None:
    """How `op` runs by blocks of rows; None when it runs whole: its steps are not
    row-wise, or its static rows make fewer than two blocks."""
    block = op.body.block
    args = list(block.args)
    if any(len(shape_of(a.type)) < 1 for a in args):
        return None
    leading = {shape_of(a.type)[0] for a in args}
    if len(leading) != 1:
        return None
    batch = leading.pop()
    rows: set[SSAValue] = set(args)
    captured = _captured_rows(op, batch)
    if captured is None:
        return None
    rows.update(captured)
    for inner in block.ops:
        if isinstance(inner, YieldOp):
            if not all(v in rows for v in inner.operands):
                return None
            break
        if not _row_wise(inner, batch, rows, op):
            return None
        rows.update(inner.results)
    tile = matmul_prepacked.row_tile(elem_of(args[0].type))
    if batch is None:
        return RowSplit(None, None, tile, captured)
    per_block = -(-max(-(-batch // MOST_BLOCKS), tile) // tile) * tile
    return RowSplit(batch, per_block, tile, captured) if batch > per_block else None


def _captured_rows(scan: ScanOp, batch: int | None) -> tuple[SSAValue, ...] | None:
    """The values from outside `scan` with `batch` leading rows that its steps read by
    rows (elementwise operands of the result's rank), in order of first use; None when
    one of them is read otherwise too (a block's rows of it would not serve)."""
    by_rows: dict[SSAValue, None] = {}
    otherwise: set[SSAValue] = set()
    for inner in scan.body.block.ops:
        for value in inner.operands:
            shape = shape_of(value.type)
            if not shape or shape[0] != batch or defined_within(value, scan):
                continue
            if _elementwise(inner) and len(shape_of(inner.results[0].type)) == len(shape):
                by_rows[value] = None
            else:  # a matmul's weight, or a broadcast, whose rows only match by chance
                otherwise.add(value)
    return None if otherwise & by_rows.keys() else tuple(by_rows)


def block_rows(k: Kernel, rows: DimV, tile: int) -> DimV:
    """Rows per block of `rows` (found at run time): whole tiles, at most MOST_BLOCKS
    blocks."""
    least = k.max(k.div(k.add(rows, MOST_BLOCKS - 1), MOST_BLOCKS), tile)
    return k.mul(k.div(k.add(least, tile - 1), tile), tile)


def with_dynamic_rows(op: ScanOp, batch: int | None) -> ScanOp:
    """A copy of `op`, not inserted anywhere, whose body values have a dynamic leading
    dim where they had `batch`, and whose reshapes to `batch` rows infer them. The
    caller erases it."""
    copy = op.clone()
    if batch is None:
        return copy
    block = copy.body.block

    def dynamic(t: Attribute) -> Attribute | None:
        if not isinstance(t, TensorType) or not shape_of(t) or shape_of(t)[0] != batch:
            return None
        return tensor(elem_of(t), (None, *shape_of(t)[1:]))

    for arg in list(block.args):
        if (new := dynamic(arg.type)) is not None:
            Rewriter.replace_value_with_new_type(arg, new)
    for inner in block.ops:
        for result in list(inner.results):
            if (new := dynamic(result.type)) is not None:
                Rewriter.replace_value_with_new_type(result, new)
        if isinstance(inner, ReshapeOp) and inner.attrs()["shape"][0] == batch:
            inner.properties["shape"] = encode_attr((-1, *inner.attrs()["shape"][1:]))
    return copy


def _row_wise(op: Operation, batch: int | None, rows: set[SSAValue], scan: ScanOp) -> bool:
    """Whether `op` gives `batch` leading rows, row i from row i of its operands alone."""
    if any(not shape_of(r.type) or shape_of(r.type)[0] != batch for r in op.results):
        return False
    if isinstance(op, MatMulOp):  # prepacked: no scratch, which the blocks would share
        return op.lhs in rows and len(shape_of(op.lhs.type)) == 2 and prepackable(op, scan)
    if isinstance(op, SliceOp):
        start, stop, step = (op.attrs()[name][0] for name in ("start", "stop", "step"))
        every_row = stop == FULL or (batch is not None and stop >= batch)
        return op.operands[0] in rows and start == 0 and every_row and step == 1
    if isinstance(op, ConcatOp):
        return op.axis.value.data != 0 and all(v in rows for v in op.operands)
    if isinstance(op, ReshapeOp):
        return _keeps_rows(op, batch, rows)
    if _elementwise(op):
        rank = len(shape_of(op.results[0].type))
        return all(_broadcast_or_row(v, rank, rows) for v in op.operands)
    return False


def _elementwise(op: Operation) -> bool:
    return isinstance(op, FusedOp) or kind_of(op) is Kind.ELEMENTWISE


def _keeps_rows(op: ReshapeOp, batch: int | None, rows: set[SSAValue]) -> bool:
    """Whether a reshape maps row i of its operand to row i: its leading dim is the
    batch's or inferred (-1: a block's rows then) and each row keeps its size."""
    shape = list(op.attrs()["shape"])
    inner = shape_of(op.x.type)[1:]
    if op.x not in rows or not shape or shape[0] not in (-1, batch) or -1 in shape[1:]:
        return False
    return None not in inner and math.prod(shape[1:]) == math.prod(inner)  # type: ignore[arg-type]


def _broadcast_or_row(value: SSAValue, rank: int, rows: set[SSAValue]) -> bool:
    """A row-wise value of the result's rank, or one that broadcasts along the rows."""
    shape = shape_of(value.type)
    if value in rows:
        return len(shape) == rank
    return len(shape) < rank or shape[0] == 1
