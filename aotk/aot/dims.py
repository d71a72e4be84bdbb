"""Which values of the dynamic dims an exported model accepts, found from its shape rules.

The C runtime checks every call against these facts instead of running Python's shape
inference: each dynamic dim either varies freely or must equal an earlier one (a batch
dim shared by several inputs), and has a smallest value (a convolution needs at least
its window). They are found by asking the same shape rules K.function checks calls with,
on probe values; a constraint of any other form is refused at export time.

A dim the caller pins (a Keras target's class dim, which Keras itself checks against the
model's output) is no longer probed: the library accepts exactly its value.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

from aotk.call_check import ShapeChecker

_BASES = (24, 60, 64, 8, 2, 1)
_MIN_PROBES = 65  # a smallest value above 64 is taken as 64's failure, not a minimum
# Tied dims found after the one being placed, tried with it at most this many together:
# Keras's sample weights carry the batch dim after the targets that share it.
_MAX_LATER_TIES = 3


@dataclass(frozen=True)
class DynDim:
    """One dynamic input dim, in kernel-argument order."""

    input: int
    axis: int
    tie: int  # index of the earlier dynamic dim it must equal, or -1
    min: int
    max: int


class _Prober:
    def __init__(
        self, checker: ShapeChecker, shapes: Sequence[Sequence[int | None]], names: Sequence[str]
    ):
        self.checker, self.shapes, self.names = checker, [tuple(s) for s in shapes], names
        self.dyn = [(i, a) for i, s in enumerate(self.shapes) for a, d in enumerate(s) if d is None]

    def fits(self, values: Sequence[int]) -> bool:
        concrete = [list(s) for s in self.shapes]
        for (i, a), v in zip(self.dyn, values, strict=True):
            concrete[i][a] = v
        try:
            self.checker.output_shapes([tuple(s) for s in concrete])  # type: ignore[misc]
        except ValueError:
            return False
        return True


def analyze(
    checker: ShapeChecker,
    shapes: Sequence[Sequence[int | None]],
    max_dim: int,
    where: str,
    pinned: Sequence[Sequence[int | None]] | None = None,
    names: Sequence[str] = (),
) -> list[DynDim]:
    """The tie and range of each dynamic dim of inputs (then captures) of `shapes`;
    `pinned`: the same shapes with some dynamic dims given the one value they accept;
    `names`: the inputs', for messages."""
    pinned = shapes if pinned is None else pinned
    probe = _Prober(checker, pinned, names)
    free = _analyze_free(probe, max_dim, where)
    by_dim = dict(zip(probe.dyn, free, strict=True))
    kernel_dims = [(i, a) for i, s in enumerate(shapes) for a, d in enumerate(s) if d is None]
    order = {dim: k for k, dim in enumerate(kernel_dims)}
    out = []
    for i, a in kernel_dims:
        d = by_dim.get((i, a))
        if d is None:
            value = pinned[i][a]
            assert value is not None
            out.append(DynDim(i, a, -1, value, value))
        else:
            tie = -1 if d.tie < 0 else order[probe.dyn[d.tie]]
            out.append(DynDim(i, a, tie, d.min, d.max))
    return out


def _analyze_free(probe: _Prober, max_dim: int, where: str) -> list[DynDim]:
    n = len(probe.dyn)
    if n == 0:
        return []
    base = next((b for b in _BASES if probe.fits([b] * n)), None)
    if base is None:
        raise ValueError(f"{where}: no common value of the dynamic dims fits the model")
    other = base + 11
    ties = _ties(probe, n, base, other, where)
    mins = {
        g: _smallest(probe, [d for d in range(n) if _root(ties, d) == g], base, n)
        for g in {_root(ties, d) for d in range(n)}
    }
    return [
        DynDim(i, a, ties[d], mins[_root(ties, d)], max_dim) for d, (i, a) in enumerate(probe.dyn)
    ]


def _ties(probe: _Prober, n: int, base: int, other: int, where: str) -> list[int]:
    """Each dim's root: the first dim of the group it must equal (-1: it is a root).

    A group changes value together or not at all, so a dim joins the first earlier
    group that fits with it, perhaps with some later dims, smallest sets first; the
    first dim too must move (with later dims) to another value, or it is refused."""
    ties = [-1] * n
    placed = [False] * n
    for d in range(n):
        if placed[d]:
            continue
        later = [j for j in range(d + 1, n) if not placed[j]]
        join = _joined_group(probe, ties, d, later, base, other)
        if join is None:
            i, a = probe.dyn[d]
            name = repr(probe.names[i]) if i < len(probe.names) else str(i)
            raise ValueError(
                f"{where}: dynamic dim {a} of input {name} is tied to the others by a rule "
                "an exported model cannot check; give it a static size (input_shapes)"
            )
        root, members = join
        for j in members:
            ties[j], placed[j] = root, True
    return ties


def _joined_group(
    probe: _Prober, ties: list[int], d: int, later: list[int], base: int, other: int
) -> tuple[int, list[int]] | None:
    """The root `d` is tied to and the later dims tied along with it; (-1, [d]) when
    it varies alone; None when no such set fits."""
    roots = [r for r in range(d) if ties[r] == -1]
    n = len(ties)
    for extra in _later_sets(probe, later, base, other, n):
        moved = {d, *extra}
        if probe.fits([other if j in moved else base for j in range(n)]):
            return (d, list(extra)) if extra else (-1, [d])
        for r in roots:
            group = {j for j in range(n) if _root(ties, j) == r} | moved
            if probe.fits([other if j in group else base for j in range(n)]):
                return r, [d, *extra]
    return None


def _later_sets(
    probe: _Prober, later: list[int], base: int, other: int, n: int
) -> Iterator[tuple[int, ...]]:
    """Sets of later dims to try along with a dim: the smallest first, up to
    _MAX_LATER_TIES, then every later dim that cannot vary alone (a Keras model of
    several outputs ties the batch dims of all its targets and sample weights at once)."""
    for size in range(min(_MAX_LATER_TIES, len(later)) + 1):
        yield from combinations(later, size)
    if len(later) > _MAX_LATER_TIES:
        yield tuple(
            j for j in later if not probe.fits([other if k == j else base for k in range(n)])
        )


def _root(ties: list[int], d: int) -> int:
    return d if ties[d] == -1 else ties[d]


def _smallest(probe: _Prober, group: list[int], base: int, n: int) -> int:
    for v in range(min(base, _MIN_PROBES)):
        if probe.fits([v if j in group else base for j in range(n)]):
            return v
    return base
