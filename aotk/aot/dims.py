"""Which values of the dynamic dims an exported model accepts, found from its shape rules.

The C runtime checks every call against these facts instead of running Python's shape
inference: each dynamic dim either varies freely or must equal an earlier one (a batch
dim shared by several inputs), and has a smallest value (a convolution needs at least
its window). They are found by asking the same shape rules K.function checks calls with,
on probe values; a constraint of any other form is refused at export time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aotk.call_check import ShapeChecker

_BASES = (24, 60, 64, 8, 2, 1)
_MIN_PROBES = 65  # a smallest value above 64 is taken as 64's failure, not a minimum


@dataclass(frozen=True)
class DynDim:
    """One dynamic input dim, in kernel-argument order."""

    input: int
    axis: int
    tie: int  # index of the earlier dynamic dim it must equal, or -1
    min: int
    max: int


class _Prober:
    def __init__(self, checker: ShapeChecker, shapes: Sequence[Sequence[int | None]]):
        self.checker, self.shapes = checker, [tuple(s) for s in shapes]
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
    checker: ShapeChecker, shapes: Sequence[Sequence[int | None]], max_dim: int, where: str
) -> list[DynDim]:
    """The tie and range of each dynamic dim of inputs (then captures) of `shapes`."""
    probe = _Prober(checker, shapes)
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
    ties = [-1] * n
    for d in range(1, n):
        if probe.fits([other if j == d else base for j in range(n)]):
            continue
        for r in range(d):
            group = {j for j in range(d) if _root(ties, j) == r} | {d}
            if ties[r] == -1 and probe.fits([other if j in group else base for j in range(n)]):
                ties[d] = r
                break
        else:
            i, a = probe.dyn[d]
            raise ValueError(
                f"{where}: dynamic dim {a} of input {i} is tied to the others by a rule an "
                "exported model cannot check; give it a static size"
            )
    return ties


def _root(ties: list[int], d: int) -> int:
    return d if ties[d] == -1 else ties[d]


def _smallest(probe: _Prober, group: list[int], base: int, n: int) -> int:
    for v in range(min(base, _MIN_PROBES)):
        if probe.fits([v if j in group else base for j in range(n)]):
            return v
    return base
