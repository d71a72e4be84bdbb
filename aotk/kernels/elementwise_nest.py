"""The one loop nest shared by every elementwise op and `aotk.fused` kernel.

Inputs broadcast NumPy-style: a dim that is statically 1 gets stride 0, and a dynamic dim
gets stride 0 at run time when it turns out to be 1. An input may be a strided view (a
slice read in place). When no input broadcasts or is strided, the nest collapses to one
flat loop, the form LLVM vectorizes best. The flat loop runs in chunks
of up to `CHUNK` elements (fewer for a costly body), which threads may split among them;
the nest splits its outer dim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.kernels.kernel import INDEX, Buf, DimV, Kernel

BodyFn = Callable[[Kernel, list[SSAValue]], list[SSAValue]]
# Elements per task of a flat loop: a few vector loops' worth, small enough to balance.
# Fixed by the body alone, so which element lands in a vector body or a remainder never
# depends on threads.
CHUNK = 4096
# Element operations per task, loads and stores counted: a costlier body gets fewer
# elements (down to MIN_CHUNK), so a few thousand elements of transcendentals (an LSTM's
# gates) still split.
CHUNK_OPS = 16 * CHUNK
MIN_CHUNK = 64


def broadcast_dims(k: Kernel, static: Sequence[int | None], ins: Sequence[Buf]) -> list[DimV]:
    """Dims of a broadcast result: static where the type knows them, else from the inputs."""
    rank = len(static)
    out: list[DimV] = []
    for axis, known in enumerate(static):
        if known is not None:
            out.append(known)
            continue
        candidates: list[DimV] = []
        for buf in ins:
            pos = axis - (rank - buf.rank)
            if pos >= 0 and buf.dims[pos] != 1:
                candidates.append(buf.dims[pos])
        dim: DimV = candidates[0] if candidates else 1
        for other in candidates[1:]:
            if other is not dim:
                dim = k.index_op(arith.MaxUIOp, dim, other)
        out.append(dim)
    return out


def emit(
    k: Kernel, outs: Sequence[Buf], ins: Sequence[Buf], body: BodyFn, parallel: bool = True
) -> None:
    """Loop over the outputs' dims; `body(k, input scalars) -> output scalars`. Not
    `parallel`: for a caller whose own loop shares out the work."""
    dims = list(outs[0].dims)
    # A scalar input (a learning rate, a momentum) is read once, whatever the shape: it
    # leaves the flat loop flat. As a broadcast, it sent an SGD update to the nest,
    # whose threads split the outer dim: 3 taps of a 3 x 3 kernel, 1 of a 1 x 1.
    others = [*(b for b in ins if not _scalar(b)), *outs[1:]]

    def flat() -> None:
        _flat(k, outs, ins, body, parallel)

    def nested() -> None:
        _nested(k, outs, ins, body, parallel)

    if any(b.strides is not None and not _scalar(b) for b in ins):  # no flat order
        nested()
    elif all(_same_dims(b.dims, dims) for b in others):
        flat()
    elif all(_may_match(k, b.dims, dims) for b in others):
        # Dynamic dims that usually match: a contiguous flat loop when they do at run
        # time (LLVM vectorizes it with plain loads), the broadcasting nest otherwise.
        k.if_else(_all_equal(k, others, dims), flat, nested)
    else:
        nested()


def _scalar(buf: Buf) -> bool:
    """Whether `buf` has one element, by its type."""
    return all(d == 1 for d in buf.dims)


def _flat(k: Kernel, outs: Sequence[Buf], ins: Sequence[Buf], body: BodyFn, parallel: bool) -> None:
    total = k.product(outs[0].dims)
    scalars = [k.load_flat(b, 0) if _scalar(b) else None for b in ins]
    element = _element_block(k, outs, ins, body, scalars)
    chunk = _chunk(k.body_cost(element))
    if isinstance(total, int) and total <= chunk:
        k.loop_over(element, total, trips=chunk)
        return
    chunks = k.div(k.add(total, chunk - 1), chunk)
    with k.loop(chunks, parallel=parallel) as c:
        start = k.mul(c, chunk)
        k.loop_over(element, k.min(k.add(start, chunk), total), lb=start, trips=chunk)


def _chunk(cost: int) -> int:
    """Elements per task for a body of `cost` operations an element: CHUNK_OPS worth, a
    multiple of MIN_CHUNK, at most CHUNK."""
    return max(MIN_CHUNK, min(CHUNK, CHUNK_OPS // max(cost, 1) // MIN_CHUNK * MIN_CHUNK))


def _element_block(
    k: Kernel,
    outs: Sequence[Buf],
    ins: Sequence[Buf],
    body: BodyFn,
    scalars: Sequence[SSAValue | None],
) -> Block:
    """The flat loop's body for element i (its argument), built before the loop so that
    its cost can size the chunks; `scalars`: per input, its value if it is a scalar
    (loaded before the loop), else None."""
    block = Block(arg_types=[INDEX])
    outer, k.b = k.b, Builder(InsertPoint.at_end(block))
    try:
        i = block.args[0]
        loads = [k.load_flat(b, i) if v is None else v for b, v in zip(ins, scalars, strict=True)]
        values = body(k, loads)
        for out, v in zip(outs, values, strict=True):
            k.store_flat(out, i, v)
    finally:
        k.b = outer
    return block


def _nested(
    k: Kernel, outs: Sequence[Buf], ins: Sequence[Buf], body: BodyFn, parallel: bool
) -> None:
    dims = list(outs[0].dims)
    out_strides = [k.strides(o.dims) for o in outs]
    # An input in an output's own buffer (computed in place, which only an input read
    # at the index it is written may be) is read with the output's strides: one address
    # for the load and the store, which LLVM's vectorizer needs to see. Broadcast
    # strides from other dims hid it: the in-place gates of a recurrent step with
    # dynamic rows ran scalar, 3.5x slower.
    own = {o.mem: st for o, st in zip(outs, out_strides, strict=True) if o.rank == len(dims)}
    in_strides = [
        own[b.mem]
        if b.mem in own and b.strides is None and b.rank == len(dims)
        else _broadcast_strides(k, b, dims)
        for b in ins
    ]
    with k.nest(dims, parallel=parallel and len(dims) > 1) as ivs:
        loads = [k.load_flat(b, k.linear(ivs, st)) for b, st in zip(ins, in_strides, strict=True)]
        values = body(k, loads)
        for out, st, v in zip(outs, out_strides, values, strict=True):
            k.store_flat(out, k.linear(ivs[len(ivs) - out.rank :], st), v)


def _may_match(k: Kernel, a: Sequence[DimV], b: Sequence[DimV]) -> bool:
    """Same rank, and every pair of dims equal or decided only at run time (not a 1
    against a dim known to be no 1: a generic kernel's size, `Kernel.typical`)."""
    return len(a) == len(b) and all(
        x is y or x == y or _unknown(k, x, y) or _unknown(k, y, x)
        for x, y in zip(a, b, strict=True)
    )


def _unknown(k: Kernel, x: DimV, y: DimV) -> bool:
    """Whether `x` may equal `y` (an int, or a run-time dim) at run time."""
    return isinstance(x, SSAValue) and not (y == 1 and x in k.typical)


def _all_equal(k: Kernel, bufs: Sequence[Buf], dims: Sequence[DimV]) -> SSAValue:
    cond: SSAValue | None = None
    for buf in bufs:
        for x, y in zip(buf.dims, dims, strict=True):
            if x is y or (isinstance(x, int) and isinstance(y, int)):
                continue
            eq = k.compare("eq", x, y)
            cond = eq if cond is None else k.both(cond, eq)
    assert cond is not None
    return cond


def _same_dims(a: Sequence[DimV], b: Sequence[DimV]) -> bool:
    return len(a) == len(b) and all(
        x is y or (isinstance(x, int) and x == y) for x, y in zip(a, b, strict=True)
    )


def _broadcast_strides(k: Kernel, buf: Buf, dims: Sequence[DimV]) -> list[DimV]:
    """Strides of `buf` over the full result index, 0 on broadcast axes."""
    own = list(buf.strides) if buf.strides is not None else k.strides(buf.dims)
    pad = len(dims) - buf.rank
    out: list[DimV] = [0] * pad
    for axis, (d, st) in enumerate(zip(buf.dims, own, strict=True)):
        full = dims[pad + axis]
        if d == 1 and full != 1:
            out.append(0)
        elif isinstance(d, SSAValue) and d is not full:
            out.append(k.select(k.compare("eq", d, 1), 0, st))
        else:
            out.append(st)
    return out


__all__ = ["INDEX", "BodyFn", "broadcast_dims", "emit"]
