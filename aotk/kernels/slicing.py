"""Python-slice bounds of an axis whose size is only known at run time."""

from __future__ import annotations

from xdsl.dialects import arith

from aotk.kernels.kernel import DimV, Kernel

FULL = 2**63 - 1  # a stop meaning "to the end of the axis" (positive steps)
BEFORE = -(2**62)  # a stop meaning "past the start of the axis" (negative steps)


def _max(k: Kernel, a: DimV, b: DimV) -> DimV:
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return k.b.insert(arith.MaxSIOp(k.index(a), k.index(b))).result


def _norm(k: Kernel, i: int, d: DimV, step: int) -> DimV:
    """Python's normalization of a start or stop index for a slice of `step`."""
    low, high = (0, d) if step > 0 else (-1, k.sub(d, 1))
    if i <= BEFORE:  # clamped as Python does, without overflowing d + i
        return low
    if i >= 0:
        return k.min(i, high)
    return _max(k, k.add(d, i), low)


def bounds(k: Kernel, d: DimV, start: int, stop: int, step: int) -> tuple[DimV, DimV]:
    """(first index, number of elements) of x[start:stop:step] along an axis of size d."""
    first = _norm(k, start, d, step)
    # a FULL stop is Python's None (as in `shape.slice_len`): past the end in the step's direction
    last = (d if step > 0 else -1) if stop == FULL else _norm(k, stop, d, step)
    span = k.sub(last, first) if step > 0 else k.sub(first, last)
    span = _max(k, span, 0)
    return first, k.div(k.add(span, abs(step) - 1), abs(step))
