"""`Kernel`: the builder that lowering rules use to emit loops over flat buffers.

Every buffer is a flat, dense, row-major `memref<?xT>` (or `memref<NxT>`), with its dims
kept beside it as ints (static) or `index` SSA values (read at call time); only a slice
read in place by elementwise loops (`dialect.strided_views`) carries strides of its own.
Index arithmetic is folded while it is built when both sides are known. A loop whose
iterations write disjoint outputs can be marked parallel (`aotk-parallelize` hands it to
the thread pool).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import cast

from xdsl.builder import Builder
from xdsl.dialects import arith, memref, ptr, scf
from xdsl.dialects.arith import CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from aotk import dtypes
from aotk.kernels.loop_cost import block_cost, static_trips
from aotk.kernels.make import constant_op, flat_memref_type, for_op, if_op, make, yield_op
from aotk.kernels.pure_ops import PureOps
from aotk.kernels.scalar import compute_type, storage_type

DimV = int | SSAValue
INDEX = IndexType()
PTR = ptr.PtrType()

PARALLEL_ATTR = "aotk.parallel"  # its value: the smallest trip count worth parallelizing
# Work (element operations, counted by `body_cost`) a loop should have before it is split
# over threads: about 5 to 20 us on one core, while a hand-over to a thread costs 1 to 4.
PARALLEL_GRAIN = 1 << 18


@dataclass
class Buf:
    """A tensor in memory: flat memref, dims, and aotk element type; `strides` (in
    elements) only for a strided view, which only elementwise loops are given."""

    mem: SSAValue
    dims: tuple[DimV, ...]
    elem: Attribute
    strides: tuple[DimV, ...] | None = None

    @property
    def rank(self) -> int:
        return len(self.dims)


class Kernel:
    """Emits index arithmetic, loads, stores and loops at a movable insertion point."""

    def __init__(self, builder: Builder):
        self.b = builder
        # typical trip counts of loops with dynamic bounds, for `body_cost`
        self.trips: dict[Operation, int] = {}
        # typical values of run-time dims, hinted to the loops they bound: a generic
        # kernel's sizes, those of its first op (`lowering.generic_loops`); never 1, as
        # a 1 stays in its form, so they never broadcast
        self.typical: dict[SSAValue, int] = {}
        # Index constants are made once, at the top of the block the kernel starts in (a
        # function's entry): emitters asked for the same hundred constants 8,000 times on
        # a GRU training step, which cse then spent a fifth of the loops stage removing.
        self._entry = builder.insertion_point.block
        self._constants: dict[int, SSAValue] = {}
        # set by `share_only_when`: the run-time flag parallel loops split on
        self._share_when: SSAValue | None = None
        # index arithmetic and views, made once per block
        self.pure = PureOps()

    def index(self, v: DimV) -> SSAValue:
        if isinstance(v, SSAValue):
            return v
        known = self._constants.get(v)
        if known is None:
            op = constant_op(v, INDEX)
            first = self._entry.first_op
            if first is None:
                self._entry.add_op(op)
            else:
                self._entry.insert_op_before(op, first)
            known = self._constants[v] = op.result
        return known

    def index_op(self, cls: type[Operation], a: DimV, c: DimV) -> SSAValue:
        """`cls(a, c)`, an arith op on index values with an index result, unchecked."""
        return self.pure.get(self.b, cls, (self.index(a), self.index(c)), INDEX)

    def compare(self, pred: str, a: DimV, c: DimV) -> SSAValue:
        """The i1 `a pred c` of index values, `pred` one of arith.cmpi's ("eq", "sgt")."""
        predicate = CMPI_COMPARISON_OPERATIONS.index(pred)
        return self.pure.get(self.b, arith.CmpiOp, (self.index(a), self.index(c)), i1, predicate)

    def both(self, a: SSAValue, c: SSAValue) -> SSAValue:
        """`a and c` of two i1 values."""
        return self.pure.get(self.b, arith.AndIOp, (a, c), i1)

    def either(self, a: SSAValue, c: SSAValue) -> SSAValue:
        """`a or c` of two i1 values."""
        return self.pure.get(self.b, arith.OrIOp, (a, c), i1)

    def pointer(self, mem: SSAValue) -> SSAValue:
        """The `!ptr_xdsl.ptr` of memref `mem`: the one it was viewed from, if it was."""
        # not while a range is recorded: its source may lie outside it (`movable`)
        if isinstance(mem.owner, ptr.FromPtrOp) and self.pure.movable is None:
            return mem.owner.source
        return self.pure.get(self.b, ptr.ToPtrOp, (mem,), PTR)

    def moved(self, pointer: SSAValue, nbytes: DimV) -> SSAValue:
        """`pointer` moved by `nbytes`."""
        if nbytes == 0:
            return pointer
        return self.pure.get(self.b, ptr.PtrAddOp, (pointer, self.index(nbytes)), PTR)

    def memref_at(self, pointer: SSAValue, mem_type: Attribute) -> SSAValue:
        """The memory at `pointer` as a memref of `mem_type`."""
        return self.pure.get(self.b, ptr.FromPtrOp, (pointer,), mem_type)

    def add(self, a: DimV, c: DimV) -> DimV:
        if isinstance(a, int) and isinstance(c, int):
            return a + c
        if a == 0:
            return c
        if c == 0:
            return a
        return self.index_op(arith.AddiOp, a, c)

    def sub(self, a: DimV, c: DimV) -> DimV:
        if isinstance(a, int) and isinstance(c, int):
            return a - c
        if c == 0:
            return a
        return self.index_op(arith.SubiOp, a, c)

    def mul(self, a: DimV, c: DimV) -> DimV:
        if isinstance(a, int) and isinstance(c, int):
            return a * c
        if a == 1:
            return c
        if c == 1:
            return a
        if a == 0 or c == 0:
            return 0
        return self.index_op(arith.MuliOp, a, c)

    def div(self, a: DimV, c: DimV) -> DimV:
        if isinstance(a, int) and isinstance(c, int):
            return a // c
        if c == 1:
            return a
        return self.index_op(arith.DivUIOp, a, c)

    def rem(self, a: DimV, c: DimV) -> DimV:
        if isinstance(a, int) and isinstance(c, int):
            return a % c
        if c == 1:
            return 0
        return self.index_op(arith.RemUIOp, a, c)

    def min(self, a: DimV, c: DimV) -> DimV:
        if isinstance(a, int) and isinstance(c, int):
            return min(a, c)
        return self.index_op(arith.MinSIOp, a, c)

    def max(self, a: DimV, c: DimV) -> DimV:
        if isinstance(a, int) and isinstance(c, int):
            return max(a, c)
        return self.index_op(arith.MaxSIOp, a, c)

    def select(self, cond: SSAValue | bool, a: DimV, c: DimV) -> DimV:
        """`a` where `cond` holds, else `c` (folded when `cond` is a Python bool)."""
        if isinstance(cond, bool):
            return a if cond else c
        if a is c or (isinstance(a, int) and a == c):
            return a
        a_v, c_v = self.index(a), self.index(c)  # index values, or any SSA values
        return self.b.insert(make(arith.SelectOp, [cond, a_v, c_v], [a_v.type])).results[0]

    def accumulate(self, total: DimV, size: DimV) -> DimV:
        """`total + size` for a running total of buffer sizes (see `SizeKernel`)."""
        return self.add(total, size)

    def round_up(self, size: DimV, multiple: int) -> DimV:
        """`size` rounded up to a multiple of `multiple`. Never size-checked (see
        `SizeKernel`): it adds less than `multiple` to a size that was."""
        bumped = Kernel.add(self, size, multiple - 1)
        return Kernel.mul(self, Kernel.div(self, bumped, multiple), multiple)

    def product(self, dims: Sequence[DimV]) -> DimV:
        total: DimV = 1
        for d in dims:
            total = self.mul(total, d)
        return total

    def strides(self, dims: Sequence[DimV]) -> list[DimV]:
        """Row-major strides of dense dims."""
        out: list[DimV] = [1] * len(dims)
        for i in range(len(dims) - 2, -1, -1):
            out[i] = self.mul(out[i + 1], dims[i + 1])
        return out

    def linear(self, idx: Sequence[DimV], strides: Sequence[DimV]) -> DimV:
        total: DimV = 0
        for i, st in zip(idx, strides, strict=True):
            total = self.add(total, self.mul(i, st))
        return total

    def load_flat(self, buf: Buf, offset: DimV) -> SSAValue:
        """Load one element as its compute type."""
        elem = cast(MemRefType, buf.mem.type).element_type
        load = make(memref.LoadOp, [buf.mem, self.index(offset)], [elem])
        raw = self.b.insert(load).res
        return self._widen(raw, buf.elem)

    def store_flat(self, buf: Buf, offset: DimV, value: SSAValue) -> None:
        value = self._narrow(value, buf.elem)
        self.b.insert(make(memref.StoreOp, [value, buf.mem, self.index(offset)], []))

    def view(self, buf: Buf, offset: DimV, dims: Sequence[DimV]) -> Buf:
        """The dense sub-buffer of `buf` starting `offset` elements in, with `dims`."""
        if offset == 0:
            return Buf(buf.mem, tuple(dims), buf.elem)
        moved = self.moved(self.pointer(buf.mem), self.mul(offset, dtypes.byte_size(buf.elem)))
        mem_type = buf.mem.type
        assert isinstance(mem_type, MemRefType)
        view = self.memref_at(moved, flat_memref_type(mem_type.element_type))
        return Buf(view, tuple(dims), buf.elem)

    def copy(self, src: Buf, dst: Buf, *, parallel: bool = False) -> None:
        """Copy every element of `src` into `dst` (same size); `parallel` as in `loop`."""
        with self.loop(self.product(src.dims), parallel=parallel) as i:
            self.store_flat(dst, i, self.load_flat(src, i))

    def load(self, buf: Buf, idx: Sequence[DimV]) -> SSAValue:
        return self.load_flat(buf, self.linear(idx, self.strides(buf.dims)))

    def store(self, buf: Buf, idx: Sequence[DimV], value: SSAValue) -> None:
        self.store_flat(buf, self.linear(idx, self.strides(buf.dims)), value)

    def _widen(self, raw: SSAValue, elem: Attribute) -> SSAValue:
        if dtypes.is_bool(elem):
            return self.b.insert(arith.TruncIOp(raw, cast(IntegerType, compute_type(elem)))).result
        if compute_type(elem) != storage_type(elem):
            return self.b.insert(arith.ExtFOp(raw, compute_type(elem))).result
        return raw

    def _narrow(self, value: SSAValue, elem: Attribute) -> SSAValue:
        if dtypes.is_bool(elem):
            return self.b.insert(arith.ExtUIOp(value, cast(IntegerType, storage_type(elem)))).result
        if compute_type(elem) != storage_type(elem):
            return self.b.insert(arith.TruncFOp(value, storage_type(elem))).result
        return value

    @contextmanager
    def loop(
        self,
        ub: DimV,
        lb: DimV = 0,
        step: DimV = 1,
        *,
        parallel: bool = False,
        trips: int | None = None,
        trip_cost: int | None = None,
    ) -> Iterator[SSAValue]:
        """`with k.loop(n) as i:` emits an scf.for and builds its body inside.

        `parallel`: the iterations write disjoint outputs and read nothing another one
        writes, so they may run on several threads (only marked when the work is worth
        it). `trips`: a typical trip count when the bounds are dynamic, for cost estimates.
        `trip_cost`: the element operations of one trip, when the body's ops do not show
        them (it calls a micro-kernel).
        """
        if parallel and self._share_when is not None:
            with self._loop_in_slots((lb, ub, step), trips, trip_cost) as i:
                yield i
            return
        if trips is None and isinstance(ub, SSAValue) and lb == 0 and step == 1:
            trips = self.typical.get(ub)
        body = Block(arg_types=[INDEX])
        lb_v, ub_v, step_v = self.index(lb), self.index(ub), self.index(step)
        loop = self.b.insert(for_op(lb_v, ub_v, step_v, [], body))
        if trips is not None:
            self.trips[loop] = trips
        outer = self.b
        self.b = Builder(InsertPoint.at_end(body))
        try:
            yield body.args[0]
            self.b.insert(yield_op())
        finally:
            self.b = outer
        if parallel:
            self._mark_parallel(loop, trip_cost)

    @contextmanager
    def share_only_when(self, flag: SSAValue) -> Iterator[None]:
        """Parallel loops emitted inside split over threads only where `flag` (i1) holds
        at run time: for a kernel whose work is known only then (a small matmul)."""
        outer, self._share_when = self._share_when, flag
        try:
            yield
        finally:
            self._share_when = outer

    @contextmanager
    def _loop_in_slots(
        self, bounds: tuple[DimV, DimV, DimV], trips: int | None, trip_cost: int | None
    ) -> Iterator[SSAValue]:
        """A parallel loop under `share_only_when`: a loop over slots, marked as the loop
        itself would be, each slot one of its trips where the flag holds, else one slot
        running them all."""
        lb, ub, step = bounds
        assert self._share_when is not None
        # clamped before the (unsigned) division: an empty range stays empty
        count = self.div(self.add(self.max(self.sub(ub, lb), 0), self.sub(step, 1)), step)
        per_slot = self.select(self._share_when, 1, self.max(count, 1))
        with self.loop(self.div(self.add(count, self.sub(per_slot, 1)), per_slot)) as slot:
            lo = self.add(lb, self.mul(self.mul(slot, per_slot), step))
            hi = self.min(self.add(lo, self.mul(per_slot, step)), ub)
            with self.loop(hi, lb=lo, step=step, trips=trips) as i:
                yield i
        assert isinstance(i, BlockArgument)
        inner = cast(scf.ForOp, i.block.parent_op())
        slots = cast(scf.ForOp, inner.parent_op())
        if trips is not None:
            self.trips[slots] = trips
        self._mark_parallel(slots, trip_cost or self.body_cost(inner.body.block))

    def loop_over(self, body: Block, ub: DimV, lb: DimV = 0, *, trips: int | None = None) -> None:
        """An scf.for over [lb, ub) whose body is `body`, a block of one index argument
        built beforehand (to be measured first); `trips` as in `loop`."""
        body.add_op(yield_op())
        loop = self.b.insert(for_op(self.index(lb), self.index(ub), self.index(1), [], body))
        if trips is not None:
            self.trips[loop] = trips

    def _mark_parallel(self, loop: scf.ForOp, trip_cost: int | None = None) -> None:
        """Mark `loop` parallel from the trip count on which its work repays the threads;
        not at all when its static trip count is below that."""
        per_trip = max(trip_cost or self.body_cost(loop.body.block), 1)
        threshold = max(-(-PARALLEL_GRAIN // per_trip), 2)
        known = static_trips(loop)
        if known is not None and known < threshold:
            return
        loop.attributes[PARALLEL_ATTR] = IntegerAttr(threshold, i64)

    def body_cost(self, block: Block) -> int:
        """Element operations one run of `block` executes (`loop_cost.block_cost`), with
        the trip counts hinted to `loop`."""
        return block_cost(block, self.trips)

    def fold_loop(
        self,
        ub: DimV,
        inits: Sequence[SSAValue],
        body_fn: Callable[[SSAValue, Sequence[SSAValue]], Sequence[SSAValue]],
        lb: DimV = 0,
        step: DimV = 1,
        trips: int | None = None,
    ) -> Sequence[SSAValue]:
        """An scf.for carrying `inits` through `body_fn(i, carried) -> new carried`;
        `trips` as in `loop`."""
        body = Block(arg_types=[INDEX, *(v.type for v in inits)])
        lb_v, ub_v, step_v = self.index(lb), self.index(ub), self.index(step)
        loop = self.b.insert(for_op(lb_v, ub_v, step_v, inits, body))
        if trips is not None:
            self.trips[loop] = trips
        outer = self.b
        self.b = Builder(InsertPoint.at_end(body))
        try:
            self.b.insert(yield_op(body_fn(body.args[0], body.args[1:])))
        finally:
            self.b = outer
        return loop.results

    def if_else(
        self, cond: SSAValue, then_fn: Callable[[], None], else_fn: Callable[[], None] | None
    ) -> None:
        """An scf.if whose branches `then_fn` and `else_fn` build at `self.b`; without
        `else_fn`, no else region."""
        blocks = (Block(),) if else_fn is None else (Block(), Block())
        self.b.insert(if_op(cond, blocks[0], blocks[1] if len(blocks) > 1 else None))
        outer = self.b
        for block, fn in zip(blocks, (then_fn, else_fn), strict=False):
            assert fn is not None
            self.b = Builder(InsertPoint.at_end(block))
            try:
                fn()
                self.b.insert(yield_op())
            finally:
                self.b = outer

    def if_positive(
        self, value: DimV, then_fn: Callable[[], None], else_fn: Callable[[], None] | None = None
    ) -> None:
        """`then_fn` where `value` > 0, else `else_fn`: decided here when `value` is a
        Python int, else by an scf.if."""
        if isinstance(value, int):
            chosen = then_fn if value > 0 else else_fn
            if chosen is not None:
                chosen()
            return
        positive = self.compare("sgt", value, 0)
        self.if_else(positive, then_fn, else_fn)

    @contextmanager
    def nest(self, dims: Sequence[DimV], *, parallel: bool = False) -> Iterator[list[SSAValue]]:
        """Perfect loop nest over `dims`, outermost first; `parallel` marks the outermost
        loop (see `loop`)."""
        ivs: list[SSAValue] = []
        with _nest(self, list(dims), ivs, parallel):
            yield ivs


@contextmanager
def _nest(k: Kernel, dims: list[DimV], ivs: list[SSAValue], parallel: bool) -> Iterator[None]:
    if not dims:
        yield
        return
    with k.loop(dims[0], parallel=parallel) as i:
        ivs.append(i)
        with _nest(k, dims[1:], ivs, False):
            yield
