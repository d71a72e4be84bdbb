"""Where intermediates live in a kernel's workspace: slices reused once their values die.

Every intermediate of a function used to take a slice of its own, so the workspace was
the sum of them all: 3.0 GB for a ResNet50 training step at batch 2, whose first call
spent 3.5 s of its 3.9 s having the OS zero those pages. Now a slice whose values are
all dead (`workspace_liveness`) is free, and a later buffer takes the smallest free one
that holds it.

Sizes depend on run-time dims (a batch of None), so a free slice holds a new buffer only
when that is certain for every value of them: both sizes are a static factor times the
same product of run-time dims, and the new factor is not larger. Dims are the same when
computed alike from the same dynamic input dims (`DimKeys`): the kernel and its
workspace-size and output-dims functions are planned apart, with different SSA values
(the size function checks and shares its arithmetic), and must come to the same plan.

Buffers of static sizes, or whose run-time dims can be computed at the kernel's start
(from the input dims by `arith` alone: a batch, the max of two batches; constant factors
go in the static factor) live in arenas, one per product of such dims: offsets and sizes
in units of that product, placed best-fit with free runs merged, as in a static
allocator. An arena's base and unit are known once every arena's size is (`finish`, at
the kernel's start). Other sizes, and factors below
`ARENA_FACTOR` that are not whole units (rounding them up to 64 bytes a row would waste
more than it saves), take slices after the arenas, shared only with their own kind.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.kernels.kernel import DimV, Kernel
from aotk.lowering.dim_keys import DimKeys

SizeClass = tuple[int, ...]  # the run-time dims' keys, sorted; () for a static size
UNIT = 64  # a buffer's alignment, in bytes; arena offsets are multiples of it
ARENA_FACTOR = 16 * UNIT  # bytes per product from which any factor goes in an arena


@dataclass
class _Arena:
    """Buffers of one size class: offsets and sizes in units of the product of its dims
    (bytes, for static sizes), free runs kept sorted and merged."""

    units: int = 0  # its size
    free: list[tuple[int, int]] = field(default_factory=list)  # (offset, size)

    def take(self, size: int) -> int:
        """The offset of the smallest free run that holds `size`, else of the free run
        at the end grown, else of new units at the end."""
        if size == 0:
            return 0
        fits = [j for j, (_, run) in enumerate(self.free) if run >= size]
        if fits:
            j = min(fits, key=lambda j: self.free[j][1])
            offset, run = self.free[j]
            if run == size:
                del self.free[j]
            else:
                self.free[j] = (offset + size, run - size)
            return offset
        if self.free and sum(self.free[-1]) == self.units:
            offset = self.free.pop()[0]
        else:
            offset = self.units
        self.units = offset + size
        return offset

    def absorb(self, other: _Arena) -> int:
        """Append `other`'s units, its free runs kept free; returns where they start."""
        start = self.units
        self.units += other.units
        for offset, size in other.free:
            self.give(start + offset, size)
        return start

    def give(self, offset: int, size: int) -> None:
        if size == 0:
            return
        j = bisect.bisect(self.free, (offset, size))
        if j < len(self.free) and self.free[j][0] == offset + size:
            size += self.free.pop(j)[1]
        if j > 0 and sum(self.free[j - 1]) == offset:
            offset, size = self.free[j - 1][0], self.free[j - 1][1] + size
            j -= 1
            del self.free[j]
        self.free.insert(j, (offset, size))


@dataclass
class _Slice:
    """Bytes [offset, end) after the arenas, at least `factor` times the product of
    `size_class`'s dims for every value of them."""

    offset: DimV
    end: DimV
    factor: int
    size_class: SizeClass | None  # None: never shared


def _same(a: DimV, b: DimV) -> bool:
    return a == b if isinstance(a, int) and isinstance(b, int) else a is b


@dataclass
class WorkspacePlan:
    """A kernel's workspace as its lowering takes and gives back buffers: an id each
    (`take`); where they went (`taken`) must be the same in every plan of a function."""

    keys: DimKeys = field(default_factory=DimKeys)
    # where each buffer went, in order: (arena, offset, size) or a slice's index
    taken: list[tuple[SizeClass, int, int] | int] = field(default_factory=list)
    _arenas: dict[SizeClass, _Arena] = field(default_factory=dict)
    # a class whose buffers live in a larger class's arena: (that class, offset there)
    _moved: dict[SizeClass, tuple[SizeClass, int]] = field(default_factory=dict)
    _placed: list[tuple[SizeClass, int, int] | int] = field(default_factory=list)
    _slices: list[_Slice] = field(default_factory=list)
    _free: dict[SizeClass, list[int]] = field(default_factory=dict)
    _end: DimV = 0  # of the slices after the arenas, from their start
    # placeholders at the start, bound at the end: where each arena (None: the slices)
    # starts, and each arena's unit (the product of its dims)
    _bases: dict[SizeClass | None, SSAValue] = field(default_factory=dict)
    _units: dict[SizeClass, SSAValue] = field(default_factory=dict)
    _entry: Operation | None = None

    def start_at(self, marker: Operation) -> None:
        """Arena bases are computed before `marker` (after the input dims are known)."""
        self._entry = marker

    def take(self, k: Kernel, dims: Sequence[DimV], item: int, padded: Callable[[], DimV]) -> int:
        """The id of a place for a buffer of `dims` of `item`-byte elements, `padded()`
        bytes (computed only for a slice)."""
        factor, size_class = self._size_class(dims, item)
        if size_class is not None and all(self.keys.at_start(key) for key in size_class):
            if factor % UNIT == 0 or factor >= ARENA_FACTOR:
                home = self._home(size_class)
                size = -(-factor // UNIT) * UNIT
                self._placed.append((home, self._arenas[home].take(size), size))
                return self._took(len(self._placed) - 1)
        self._placed.append(self._slice(k, (factor, size_class), padded()))
        return self._took(len(self._placed) - 1)

    def _took(self, place: int) -> int:
        self.taken.append(self._placed[place])
        return place

    def offset(self, k: Kernel, place: int) -> DimV:
        """The byte offset of a place in the workspace (emitted at `k`)."""
        where = self._placed[place]
        if isinstance(where, int):
            return k.add(self._placeholder(self._bases, None), self._slices[where].offset)
        size_class, units, _ = where
        # a static arena's unit is a byte; the first arena starts the workspace
        unit = self._placeholder(self._units, size_class) if size_class else 1
        first = next(iter(self._arenas)) == size_class
        base = 0 if first else self._placeholder(self._bases, size_class)
        return k.add(base, k.mul(units, unit))

    def give_back(self, places: Iterable[int]) -> None:
        for place in places:
            where = self._placed[place]
            if isinstance(where, int):
                self._give_slices([where])
            else:
                size_class, offset, size = where
                home, start = self._resolve(size_class)
                self._arenas[home].give(start + offset, size)

    def size(self, k: Kernel) -> DimV:
        """The workspace's size in bytes: the arenas', then the slices'."""
        return k.accumulate(self._arenas_size(k), self._end)

    def finish(self, k: Kernel) -> None:
        """Replace the placeholders of the arenas' bases and units with their values,
        computed by `k` at the start, and drop the start's marker."""
        assert self._entry is not None
        if self._bases or self._units:
            outer, k.b = k.b, Builder(InsertPoint.before(self._entry))
            try:
                self._bind(k)
            finally:
                k.b = outer
        self._entry.detach()
        self._entry.erase()

    def _bind(self, k: Kernel) -> None:
        bases: dict[SizeClass | None, DimV] = {}
        units: dict[SizeClass, DimV] = {}
        made: dict[int, DimV] = {}
        base: DimV = 0
        for size_class, arena in self._arenas.items():
            bases[size_class] = base
            units[size_class] = k.product([self.keys.rebuild(k, key, made) for key in size_class])
            base = k.add(base, k.mul(arena.units, units[size_class]))
        bases[None] = base
        for size_class in self._moved:
            if size_class not in self._bases and size_class not in self._units:
                continue  # no offset emitted reads it
            home, start = self._resolve(size_class)
            units[size_class] = units[home]
            bases[size_class] = k.add(bases[home], k.mul(start, units[home]))
        for placeholders, values in ((self._bases, bases), (self._units, units)):
            for size_class, placeholder in placeholders.items():
                placeholder.replace_all_uses_with(k.index(values[size_class]))  # type: ignore[index]
                assert isinstance(placeholder.owner, Operation)
                placeholder.owner.detach()
                placeholder.owner.erase()

    def _arenas_size(self, k: Kernel) -> DimV:
        """The arenas' bytes, from their dims computed at `k`."""
        total: DimV = 0
        made: dict[int, DimV] = {}
        for size_class, arena in self._arenas.items():
            unit = k.product([self.keys.rebuild(k, key, made) for key in size_class])
            total = k.accumulate(total, k.mul(arena.units, unit))
        return total

    def _home(self, size_class: SizeClass) -> SizeClass:
        """The class of the arena buffers of `size_class` go in: its own, or one whose
        unit is at least its unit for every value of the dims (a training step's
        backward, of max(batch of x, batch of y) rows, reuses the forward's rows)."""
        home = self._resolve(size_class)[0]
        if home in self._arenas:
            return home
        for other in self._arenas:
            if self._dominates(other, size_class):
                self._moved[size_class] = (other, 0)
                return other
        self._open(size_class)
        return size_class

    def _open(self, size_class: SizeClass) -> None:
        """A new arena for `size_class`, holding the arenas of the classes it dominates,
        where the first of them was in the order (so offsets already emitted stay)."""
        arena, order = _Arena(), {}
        for other, old in self._arenas.items():
            if self._dominates(size_class, other):
                self._moved[other] = (size_class, arena.absorb(old))
                order.setdefault(size_class, arena)
            else:
                order[other] = old
        order.setdefault(size_class, arena)
        self._arenas = order

    def _resolve(self, size_class: SizeClass) -> tuple[SizeClass, int]:
        """(the class whose arena holds `size_class`'s, where its units start there)."""
        start = 0
        while size_class in self._moved:
            size_class, at = self._moved[size_class]
            start += at
        return size_class, start

    def _dominates(self, big: SizeClass, small: SizeClass) -> bool:
        """Whether a unit of `big` (a product of dims) holds one of `small`, for every
        value of the dims; static sizes and different classes of as many dims only."""
        if not small or big == small or len(big) != len(small) or len(big) > 4:
            return False
        at_least = self.keys.at_least
        return any(
            all(at_least(b, a) for b, a in zip(order, small, strict=True))
            for order in itertools.permutations(big)
        )

    def _placeholder(self, at: dict[Any, SSAValue], size_class: SizeClass | None) -> SSAValue:
        """The placeholder in `at` (bases or units) of a class, made at the start."""
        if size_class not in at:
            assert self._entry is not None
            constant = arith.ConstantOp(IntegerAttr(0, IndexType()))
            Builder(InsertPoint.before(self._entry)).insert(constant)
            at[size_class] = constant.result
        return at[size_class]

    def _size_class(self, dims: Sequence[DimV], item: int) -> tuple[int, SizeClass | None]:
        """(static factor in bytes, the class of the run-time dims) of a buffer."""
        factor, keys = item, []
        for d in dims:
            key = None if isinstance(d, int) else self.keys.key(d)
            if isinstance(d, int):
                factor *= d
            elif key is None:
                return factor, None
            else:
                m, base = self.keys.scaled(key)
                factor, keys = factor * m, [*keys, base]
        return factor, tuple(sorted(keys))

    def _slice(self, k: Kernel, shape: tuple[int, SizeClass | None], padded: DimV) -> int:
        """A slice after the arenas: the smallest free one of its class that holds it,
        else the free one at the end grown (never shrunk: the workspace's size is the
        furthest end), else a new one there."""
        factor, size_class = shape
        free = self._free.get(size_class, []) if size_class is not None else []
        fits = [i for i in free if self._slices[i].factor >= factor]
        if fits:
            best = min(fits, key=lambda i: self._slices[i].factor)
            free.remove(best)
        elif last := [i for i in free if _same(self._slices[i].end, self._end)]:
            best = last[0]
            free.remove(best)
            piece = self._slices[best]
            # never below its end: a run merged from slices padded to 64 bytes can be
            # longer than the new buffer, and buffers of earlier ops lay there
            piece.factor, piece.end = factor, k.max(piece.end, k.accumulate(piece.offset, padded))
            self._end = piece.end
        else:
            best = len(self._slices)
            offset, self._end = self._end, k.accumulate(self._end, padded)
            self._slices.append(_Slice(offset, self._end, factor, size_class))
        return best

    def _give_slices(self, slices: Iterable[int]) -> None:
        """Free slices, each merged with a free slice of its class right before or after
        it, if any."""
        for i in slices:
            piece = self._slices[i]
            if piece.size_class is None:
                continue
            free = self._free.setdefault(piece.size_class, [])
            for j in list(free):
                other = self._slices[j]
                if _same(other.offset, piece.end):
                    piece.end = other.end
                elif _same(other.end, piece.offset):
                    piece.offset = other.offset
                else:
                    continue
                free.remove(j)
                piece.factor += other.factor
            free.append(i)
