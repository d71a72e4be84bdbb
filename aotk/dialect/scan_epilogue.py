"""A recurrent step's gate math run by row blocks right after its matmul, in one loop.

An LSTM step is `z = x_t + h @ U` (a prepacked matmul, `scan_prepack`), then one fused
elementwise kernel on slices of z: two parallel loops a step, so two hand-overs to the
threads and a barrier between them, and z written out whole before the gates read it
back. When z (a matrix) is read only by that kernel, through views that keep its rows
whole, one parallel loop over blocks of rows does both: the matmul of a block's rows,
then the gates of those rows while they are in L1. A block's rows of the product need
only its rows of `h` and `x_t`, so the gates may overwrite them (the carry written in
place) once the block's product is done.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import Block, Operation, SSAValue

from aotk.dialect import strided_views
from aotk.dialect.base import shape_of
from aotk.dialect.fused import FusedOp, scalar_body
from aotk.dialect.registry import BodyLowering
from aotk.dialect.shape import FULL, SliceOp
from aotk.kernels import elementwise_nest, library
from aotk.kernels.kernel import Buf, DimV


@dataclass(frozen=True)
class Epilogue:
    """The fused kernel that reads a product, and the views it reads it through."""

    fused: FusedOp
    views: tuple[SliceOp, ...]


def find(product: SSAValue, matmul: Operation) -> Epilogue | None:
    """The epilogue of the matrix `product` of `matmul`, if one fused kernel is all that
    reads it (directly or through row-whole views), and nothing but those views (and
    the add the matmul does) runs between the two."""
    if len(shape_of(product.type)) != 2:
        return None
    views = [u.operation for u in product.uses if isinstance(u.operation, SliceOp)]
    readers = {u.operation for v in views for u in v.result.uses}
    readers |= {u.operation for u in product.uses if not isinstance(u.operation, SliceOp)}
    fused = readers.pop() if len(readers) == 1 else None
    if not isinstance(fused, FusedOp) or not all(_row_whole(v) for v in views):
        return None
    block = matmul.parent_block()
    assert block is not None
    # The kernel runs where the matmul is: nothing between them may see it run early
    # (read a carry it writes in place, say), nor compute one of its inputs.
    allowed = {product.owner, *views}
    if any(op not in allowed for op in _between(block, matmul, fused)):
        return None
    if any(len(shape_of(r.type)) != 2 for r in fused.outputs):
        return None
    return Epilogue(fused, tuple(views))  # type: ignore[arg-type]


def _row_whole(view: Operation) -> bool:
    """A slice lowered as a view that keeps every row (it slices the columns only)."""
    if not isinstance(view, SliceOp) or not strided_views.is_view(view):
        return False
    attrs = view.attrs()
    return (attrs["start"][0], attrs["stop"][0], attrs["step"][0]) == (0, FULL, 1)


def _between(block: Block, first: Operation, last: Operation) -> list[Operation]:
    """The ops of `block` strictly between `first` and `last`."""
    ops = list(block.ops)
    return ops[ops.index(first) + 1 : ops.index(last)]


def bind(low: BodyLowering, epilogue: Epilogue, targets: dict[SSAValue, Buf]) -> list[Buf]:
    """Bind the views and the fused kernel's results (as their own lowering would)."""
    for view in epilogue.views:
        low.lower_op(view, targets)
    fused = epilogue.fused
    ins = [low.bufs[v] for v in fused.inputs]
    dims = elementwise_nest.broadcast_dims(low.k, shape_of(fused.outputs[0].type), ins)
    return low.bind_results(fused, dims, targets)


def emit(
    low: BodyLowering,
    epilogue: Epilogue,
    matmul: tuple[str, Buf, Buf, Buf, list[Buf]],
    mnk: tuple[DimV, DimV, DimV],
    rows_per_block: int,
) -> None:
    """The prepacked matmul `matmul` = (name, C, A, packed B, [X]) and the fused kernel
    after it: by blocks of rows in one parallel loop when every input of the kernel has
    the product's rows or broadcasts along them (checked at run time where the dims
    are), else one after the other."""
    k, m = low.k, mnk[0]
    fused = epilogue.fused
    ins = [low.bufs[v] for v in fused.inputs]
    outs = [low.bufs[r] for r in fused.outputs]
    body = _body(fused)
    unsure = [b.dims[0] for b in ins if b.rank == 2 and b.dims[0] != 1 and b.dims[0] is not m]
    static = [d for d in unsure if isinstance(d, int) and isinstance(m, int)]
    dynamic = [d for d in unsure if not (isinstance(d, int) and isinstance(m, int))]

    def by_blocks() -> None:
        _by_blocks(low, (ins, outs, body), matmul, mnk, rows_per_block)

    def one_then_other() -> None:
        name, c, a, packed, addend = matmul
        library.call(k, name, [c, a, packed, *addend, *mnk])
        elementwise_nest.emit(k, outs, ins, body)

    if any(d != m for d in static):  # the product itself is broadcast
        one_then_other()
    elif not dynamic:
        by_blocks()
    else:
        checks = [k.b.insert(arith.CmpiOp(k.index(d), k.index(m), "eq")).result for d in dynamic]
        cond = checks[0]
        for other in checks[1:]:
            cond = k.b.insert(arith.AndIOp(cond, other)).result
        k.if_else(cond, by_blocks, one_then_other)


def _body(fused: FusedOp) -> elementwise_nest.BodyFn:
    return lambda k, xs: scalar_body(k, fused.body.block, xs)


def _by_blocks(
    low: BodyLowering,
    kernel: tuple[list[Buf], list[Buf], elementwise_nest.BodyFn],
    matmul: tuple[str, Buf, Buf, Buf, list[Buf]],
    mnk: tuple[DimV, DimV, DimV],
    rows_per_block: int,
) -> None:
    k = low.k
    ins, outs, body = kernel
    name, c, a, packed, addend = matmul
    m, n, kdim = mnk
    with k.loop(k.div(k.add(m, rows_per_block - 1), rows_per_block), parallel=True) as b:
        r0 = k.mul(b, rows_per_block)
        rows = k.min(rows_per_block, k.sub(m, r0))
        blocks = [_rows(low, buf, r0, rows) for buf in (c, a, *addend)]
        library.call(k, name, [blocks[0], blocks[1], packed, *blocks[2:], rows, n, kdim])
        elementwise_nest.emit(
            k,
            [_rows(low, o, r0, rows) for o in outs],
            [_rows(low, i, r0, rows) for i in ins],
            body,
            parallel=False,  # the blocks are the threads' work
        )


def _rows(low: BodyLowering, buf: Buf, r0: DimV, rows: DimV) -> Buf:
    """Rows r0 .. r0 + rows of a matrix (dense or a view), or `buf` itself when it is
    broadcast along rows (fewer axes, or one row)."""
    if buf.rank < 2 or buf.dims[0] == 1:
        return buf
    k = low.k
    strides: Sequence[DimV] = buf.strides or k.strides(buf.dims)
    moved = k.view(buf, k.mul(r0, strides[0]), (rows, *buf.dims[1:]))
    return Buf(moved.mem, moved.dims, buf.elem, buf.strides)
