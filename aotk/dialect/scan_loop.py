"""`aotk.scan`'s lowering rule: one `scf.for` over the steps (by blocks of rows in
parallel, each through all the steps, when the steps keep the rows apart: `scan_rows`).

Every buffer the body needs is allocated once, before the loop: a first pass over the
body computes dims and workspace slices outside the loop (so they dominate it), and the
pass inside the loop writes into those slices. Carries live in their own buffers; a new
carry that is elementwise in its old value is computed right there
(`in_place.carries_in_place`). Each iteration stages the other new carries that
alias old state, then copies them in. A step output that a body op computes is written
into row t of its stacked result (`direct_outputs`); the others are copied there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from aotk.dialect import scan_prepack, scan_rows, strided_views
from aotk.dialect.base import elem_of
from aotk.dialect.fused import YieldOp
from aotk.dialect.in_place import aliases, carries_in_place
from aotk.dialect.registry import BodyLowering, Kind, kind_of
from aotk.dialect.scan import ScanOp
from aotk.kernels.kernel import PARALLEL_GRAIN, Buf, DimV, Kernel


def lower_scan(low: BodyLowering, op: ScanOp, targets: dict[SSAValue, Buf]) -> None:
    """Bufferize and (when emitting code) loop over the steps of `op`: by blocks of rows
    in parallel when its steps are row-wise (`scan_rows`), else all rows at once."""
    split = scan_rows.row_split(op)
    if split is not None and any(low.bufs[v].strides is not None for v in split.captured):
        split = None  # a strided view from outside: its rows are not dense blocks
    if split is None:
        _lower(low, op, targets, None)
        return
    copy = scan_rows.with_dynamic_rows(op, split.batch)
    try:
        pairs = list(zip(op.results, copy.results, strict=True))
        _lower(low, copy, {c: targets[r] for r, c in pairs if r in targets}, split)
        for r, c in pairs:
            low.bufs[r] = low.bufs[c]
    finally:
        copy.erase()


@dataclass
class _Plan:
    """The buffers of a scan's loop, planned before it."""

    seqs: list[Buf]
    carries: list[Buf]
    body: dict[SSAValue, Buf]
    staging: dict[int, Buf | None]
    step_outs: list[Buf]
    packs: scan_prepack.Packs


def _lower(
    low: BodyLowering,
    op: ScanOp,
    targets: dict[SSAValue, Buf],
    split: scan_rows.RowSplit | None,
) -> None:
    """`lower_scan`; by blocks of rows as `split` says, when not None."""
    k = low.k
    seqs = [low.bufs[v] for v in op.sequences]
    inits = [low.bufs[v] for v in op.inits]
    carries = [low.alloc(v.type, list(b.dims)) for v, b in zip(op.inits, inits, strict=True)]
    block = op.body.block
    yielded = block.last_op
    assert isinstance(yielded, YieldOp)
    n_c = len(carries)

    packs = scan_prepack.plan(low, op)  # before the loop: packed once for all steps
    in_place = carries_in_place(op, packs.absorbed)
    written = {yielded.values[j]: carries[j] for j in in_place}
    body_bufs = _plan_body(low, op, (seqs, carries), packs, written)
    old_state = {a for arg in block.args[op.num_seq :] for a in aliases(arg)}
    staging = {  # new carries that still live in an old carry's buffer are put aside
        j: low.alloc(v.type, list(body_bufs[v].dims)) if v in old_state else None
        for j, v in enumerate(yielded.values[:n_c])
        if j not in in_place and v is not block.args[op.num_seq + j]  # else in the carry
    }
    # a step output may be a value from outside (a loop-invariant matmul hoisted out of
    # the body): each step copies it into its row
    step_outs = [body_bufs.get(v) or low.bufs[v] for v in yielded.values[n_c:]]
    plan = _Plan(seqs, carries, body_bufs, staging, step_outs, packs)

    results = list(op.results)
    for r, c in zip(results[:n_c], carries, strict=True):  # no target: the carry's buffer
        low.bufs[r] = Buf((targets.get(r) or c).mem, c.dims, c.elem)
    for r, o in zip(results[n_c:], plan.step_outs, strict=True):
        dims = [seqs[0].dims[0], *o.dims]
        buf = targets.get(r) or low.alloc(r.type, dims)
        low.bufs[r] = Buf(buf.mem, tuple(dims), elem_of(r.type))
    if not low.code:
        return

    for init, carry in zip(inits, carries, strict=True):
        k.copy(init, carry)
    if split is None:
        _steps(low, op, plan, lambda buf: buf)
    else:
        _by_blocks(low, op, plan, split)
    for r, carry in zip(results[:n_c], carries, strict=True):
        if low.bufs[r].mem is not carry.mem:
            k.copy(carry, low.bufs[r])


def _by_blocks(low: BodyLowering, op: ScanOp, plan: _Plan, split: scan_rows.RowSplit) -> None:
    """The steps, by blocks of rows in one parallel loop; the values from outside that
    the steps read by rows are seen through the block's rows too. Rows known only at
    run time are split only where every sequence's step, carry and such value has as
    many (else one block runs all of each buffer's rows, as the scan whole would)."""
    k = low.k
    rows = plan.seqs[0].dims[1] if plan.seqs else plan.carries[0].dims[0]
    if split.per_block is not None:
        per_block, same = split.per_block, None
    else:
        per_block = scan_rows.block_rows(k, rows, split.tile)
        captured = [low.bufs[v].dims[0] for v in split.captured]
        same = _all_equal(
            k,
            [rows, *(s.dims[1] for s in plan.seqs), *(c.dims[0] for c in plan.carries), *captured],
        )
    count = k.div(k.add(rows, k.sub(per_block, 1)), per_block)
    if same is not None:
        count = k.select(same, count, 1)
    # the work hides in micro-kernel calls and a loop over the steps: any split repays
    with k.loop(count, parallel=True, trip_cost=PARALLEL_GRAIN) as b:
        first = k.mul(b, per_block)
        whole = isinstance(rows, int) and isinstance(per_block, int) and rows % per_block == 0
        size = per_block if whole else k.min(per_block, k.sub(rows, first))
        views = _BlockRows(k, first, size, same)
        outside = {v: low.bufs[v] for v in split.captured}
        low.bufs.update((v, views(b)) for v, b in outside.items())
        try:
            _steps(low, op, plan, views)
        finally:
            low.bufs.update(outside)


@dataclass
class _BlockRows:
    """The views of one block's rows, `first` on, `size` of them (each buffer's own rows
    where `same` is false), of the scan's buffers: one view a buffer, so that a kernel
    writing in place reads and writes through one pointer (two views of one carry
    defeated LLVM's runtime alias check: a Keras LSTM's gradient ran scalar, 1.9x
    slower); one select a dim, so that equal dims stay one value."""

    k: Kernel
    first: DimV
    size: DimV
    same: SSAValue | None
    views: dict[tuple[SSAValue, tuple[int | None, ...]], Buf] = field(default_factory=dict)
    sizes: dict[DimV, DimV] = field(default_factory=dict)

    def __call__(self, buf: Buf) -> Buf:
        # by buffer and row shape: its dynamic dims may be other values of the same sizes
        key = (buf.mem, tuple(d if isinstance(d, int) else None for d in buf.dims[1:]))
        if key not in self.views:
            at = self.k.mul(self.first, self.k.product(buf.dims[1:]))
            self.views[key] = self.k.view(buf, at, (self._size(buf.dims[0]), *buf.dims[1:]))
        return self.views[key]

    def _size(self, own: DimV) -> DimV:
        if self.same is None:
            return self.size
        if own not in self.sizes:
            self.sizes[own] = self.k.select(self.same, self.size, own)
        return self.sizes[own]


def _all_equal(k: Kernel, dims: list[DimV]) -> SSAValue | None:
    """An i1: whether every dim of `dims` equals the first (None when all are one)."""
    same = None
    for d in dims[1:]:
        if d is dims[0]:
            continue
        eq = k.b.insert(arith.CmpiOp(k.index(dims[0]), k.index(d), "eq")).result
        same = eq if same is None else k.b.insert(arith.AndIOp(same, eq)).result
    return same


def _steps(low: BodyLowering, op: ScanOp, plan: _Plan, part: Callable[[Buf], Buf]) -> None:
    """The loop over the steps, on the `part` of every (dense) buffer of rows."""
    k = low.k
    block = op.body.block
    yielded = block.last_op
    assert isinstance(yielded, YieldOp)
    n_c = len(plan.carries)
    results = list(op.results)
    carries = [part(c) for c in plan.carries]
    direct = direct_outputs(op)
    with k.loop(plan.seqs[0].dims[0]) as t:
        _bind_step(low, op, plan.seqs, carries, (t, part))
        rows = [
            part(k.view(low.bufs[r], k.mul(t, k.product(out.dims)), out.dims))
            for r, out in zip(results[n_c:], plan.step_outs, strict=True)
        ]
        # targets of the ops' results (a block argument is bound, never written, and so
        # is a reshape's result, to its operand's memory)
        step_targets = {
            v: part(b)
            for v, b in plan.body.items()
            if b.strides is None
            and isinstance(v.owner, Operation)
            and kind_of(v.owner) is not Kind.VIEW
        }
        step_targets.update((yielded.values[n_c + j], rows[j]) for j in direct)
        for inner in block.ops:
            if not isinstance(inner, YieldOp):
                scan_prepack.lower_op(low, inner, step_targets, plan.packs)
        news = [low.bufs[v] for v in yielded.values]
        # outputs first: an output may be (a view of) the state the step started from
        for out, row in zip(news[n_c:], rows, strict=True):
            if out.mem is not row.mem:  # not computed in its row
                k.copy(out, row)
        staging = {j: None if s is None else part(s) for j, s in plan.staging.items()}
        _update_carries(low, news[:n_c], carries, staging)


def direct_outputs(op: ScanOp) -> set[int]:
    """The step outputs a body op may compute straight into their row of the stacked
    result: yielded once, not as a carry, and written (not a view of another value)."""
    values = list(op.body.block.last_op.operands)  # type: ignore[union-attr]
    carries, outputs = values[: op.num_carries], values[op.num_carries :]
    return {
        j
        for j, v in enumerate(outputs)
        if isinstance(v.owner, Operation)
        and v.owner.parent_block() is op.body.block
        and v not in carries
        and outputs.count(v) == 1
        and kind_of(v.owner) not in (None, Kind.VIEW)
        and not strided_views.is_view(v.owner)
    }


def _update_carries(
    low: BodyLowering, news: list[Buf], carries: list[Buf], staging: dict[int, Buf | None]
) -> None:
    """Copy each new carry over its carry, except those computed there (not in
    `staging`): first aside those that still live in an old carry's buffer."""
    sources = dict(enumerate(news))
    for j, stage in staging.items():
        if stage is not None:
            sources[j] = Buf(stage.mem, news[j].dims, news[j].elem)
            low.k.copy(news[j], sources[j])
    for j in staging:
        low.k.copy(sources[j], carries[j])


def _bind_step(
    low: BodyLowering,
    op: ScanOp,
    seqs: list[Buf],
    carries: list[Buf],
    at: tuple[DimV, Callable[[Buf], Buf]],
) -> None:
    """Block arguments: the `part` of row t of each sequence, then the carries, for
    `at` = (t, part)."""
    k = low.k
    t, part = at
    args = op.body.block.args
    for arg, seq in zip(args, seqs, strict=False):
        step = seq.dims[1:]
        row = k.product(step) if seq.strides is None else seq.strides[0]  # a view's rows
        low.bufs[arg] = part(k.view(seq, k.mul(t, row), step))
    for arg, carry in zip(args[len(seqs) :], carries, strict=True):
        low.bufs[arg] = carry


def _plan_body(
    low: BodyLowering,
    op: ScanOp,
    state: tuple[list[Buf], list[Buf]],
    packs: scan_prepack.Packs,
    written: dict[SSAValue, Buf],
) -> dict[SSAValue, Buf]:
    """Allocate every body value's buffer outside the loop, except those `written` into
    a carry; return them by value."""
    block = op.body.block
    code, low.code = low.code, False
    try:
        _bind_step(low, op, *state, (0, lambda buf: buf))
        for inner in block.ops:
            if not isinstance(inner, YieldOp):
                scan_prepack.lower_op(low, inner, written, packs)
    finally:
        low.code = code
    planned: dict[SSAValue, Buf] = {}
    for inner in block.ops:
        for r in inner.results:
            planned[r] = low.bufs[r]
    for arg in block.args:
        planned[arg] = low.bufs[arg]
    return planned
