"""A scan whose steps keep the batch's rows apart, run by blocks of rows in parallel.

An LSTM or GRU step is row-wise: row i of its new state depends on row i of the state
and of the step's input alone (the weights are the same for every row). Blocks of rows
then need not wait for one another: each block runs all the steps on one thread, on its
rows of every buffer. The scan unsplit hands every step's kernels to the threads and
waits for them: fifty steps, fifty or more barriers, each a few microseconds.

Row-wise, for a batch of B rows (a static size): every sequence's step and every carry
has B leading rows, and every body op gives B leading rows from operands that have them
or broadcast along them. The ops known row-wise: elementwise ops and `aotk.fused`, a
matmul of a row-wise matrix by a weight from outside the scan, a slice that keeps every
row. Anything else keeps the scan whole.

The blocks run the scan's own lowering (`scan_loop`) on a copy of the scan whose body
has a dynamic leading dim: each body op then takes its rows from its buffers (a block's)
rather than from its type (all B).
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.rewriter import Rewriter

from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.fused import FusedOp, YieldOp
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.registry import Kind, kind_of
from aotk.dialect.scan import ScanOp
from aotk.dialect.scan_prepack import prepackable
from aotk.dialect.shape import ConcatOp, SliceOp
from aotk.kernels import matmul_prepacked

MOST_BLOCKS = 8  # blocks of rows at most: a few per thread, so that threads even out


def batch_rows(op: ScanOp) -> int | None:
    """B when `op`'s steps are row-wise over B rows (see the module's docstring)."""
    block = op.body.block
    args = list(block.args)
    leading = {_leading(a.type) for a in args}
    if len(leading) != 1 or None in leading or any(len(shape_of(a.type)) < 1 for a in args):
        return None
    batch = leading.pop()
    assert batch is not None
    rows: set[SSAValue] = set(args)
    for inner in block.ops:
        if isinstance(inner, YieldOp):
            return batch if all(v in rows for v in inner.operands) else None
        if not _row_wise(inner, batch, rows, op):
            return None
        rows.update(inner.results)
    return None


def block_rows(op: ScanOp, batch: int) -> int | None:
    """Rows per block for a row-wise scan of `batch` rows: whole register tiles of the
    prepacked matmul, at most MOST_BLOCKS blocks; None when that leaves fewer than two."""
    tile = matmul_prepacked.row_tile(elem_of(op.body.block.args[0].type))
    per_block = max(-(-batch // MOST_BLOCKS), tile)
    per_block = -(-per_block // tile) * tile
    return per_block if batch > per_block else None


def with_dynamic_rows(op: ScanOp, batch: int) -> ScanOp:
    """A copy of `op`, not inserted anywhere, whose body values have a dynamic leading
    dim where they had `batch`. The caller erases it."""
    copy = op.clone()
    block = copy.body.block

    def dynamic(t: Attribute) -> Attribute | None:
        if not isinstance(t, TensorType) or _leading(t) != batch:
            return None
        return tensor(elem_of(t), (None, *shape_of(t)[1:]))

    for arg in list(block.args):
        if (new := dynamic(arg.type)) is not None:
            Rewriter.replace_value_with_new_type(arg, new)
    for inner in block.ops:
        for result in list(inner.results):
            if (new := dynamic(result.type)) is not None:
                Rewriter.replace_value_with_new_type(result, new)
    return copy


def _row_wise(op: Operation, batch: int, rows: set[SSAValue], scan: ScanOp) -> bool:
    """Whether `op` gives `batch` leading rows, row i from row i of its operands alone."""
    if any(_leading(r.type) != batch for r in op.results):
        return False
    if isinstance(op, MatMulOp):  # prepacked: no scratch, which the blocks would share
        return op.lhs in rows and len(shape_of(op.lhs.type)) == 2 and prepackable(op, scan)
    if isinstance(op, SliceOp):
        attrs = op.attrs()
        return op.operands[0] in rows and (
            attrs["start"][0] == 0 and attrs["stop"][0] >= batch and attrs["step"][0] == 1
        )
    if isinstance(op, ConcatOp):
        return op.axis.value.data != 0 and all(v in rows for v in op.operands)
    if isinstance(op, FusedOp) or kind_of(op) is Kind.ELEMENTWISE:
        rank = len(shape_of(op.results[0].type))
        return all(_broadcast_or_row(v, rank, rows) for v in op.operands)
    return False


def _broadcast_or_row(value: SSAValue, rank: int, rows: set[SSAValue]) -> bool:
    """A row-wise value of the result's rank, or one that broadcasts along the rows."""
    shape = shape_of(value.type)
    if value in rows:
        return len(shape) == rank
    return len(shape) < rank or shape[0] == 1


def _leading(t: Attribute) -> int | None:
    shape = shape_of(t) if isinstance(t, TensorType) else ()
    return shape[0] if shape else None
