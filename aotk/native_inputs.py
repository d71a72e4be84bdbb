"""How a native call plan's inputs are fed (`native_call`): arrays read in place, Python
scalars (a call must pass the very object, converted once when planned), and arrays of
another dtype than the placeholder's, which the C side converts into a buffer of the
plan before the kernel runs, as NumPy's `astype` would (`runtime/aotk_pycall.c`).

Only conversions that the checked path makes without looking at the values are done
there: to float32 or float64 from floats, integers and bools (narrowing integers must be
range-checked, so those calls take the Python path). A plan keeps its buffers between
calls, so only inputs of up to BUFFER_LIMIT bytes converted are converted there: for
larger ones the conversion costs far more than the Python path, whose copy is freed
after each call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from aotk import runtime

Shape = tuple[int, ...]
Scalar = tuple[int, object, np.ndarray]  # an input fed a scalar: (index, value, as an array)

# (fed, converted to): code i + 1 is the C side's conversion i + 1 (0: none)
CONVERSIONS = (
    ("float64", "float32"),
    ("int64", "float32"),
    ("int32", "float32"),
    ("uint8", "float32"),
    ("bool", "float32"),
    ("float32", "float64"),
    ("int64", "float64"),
    ("int32", "float64"),
    ("uint8", "float64"),
    ("bool", "float64"),
)
_CODES = {(np.dtype(a), np.dtype(b)): i + 1 for i, (a, b) in enumerate(CONVERSIONS)}
BUFFER_LIMIT = 16 << 20


def converts(fed: np.ndarray, converted: np.ndarray) -> bool:
    """Whether the C side converts arrays like `fed` (dense) into ones like `converted`."""
    return (
        (fed.dtype, converted.dtype) in _CODES
        and fed.flags.c_contiguous
        and converted.nbytes <= BUFFER_LIMIT
    )


@dataclass(frozen=True)
class Inputs:
    """A plan's inputs: their shapes, the inputs fed a scalar, and the inputs fed arrays
    of another dtype (index, that dtype) that the C side converts."""

    shapes: tuple[Shape, ...]
    scalars: tuple[Scalar, ...] = ()
    converted: tuple[tuple[int, np.dtype], ...] = ()

    def key(self) -> tuple[object, ...]:
        """What two calls must share to run on one plan."""
        scalars = tuple((i, id(value)) for i, value, _ in self.scalars)
        return self.shapes, scalars, self.converted


@dataclass
class Template:
    """The C side's tables of a plan's inputs, and what they point into."""

    descrs: list[int]  # each input's dtype object, as fed
    itemsizes: list[int]  # its element size, as fed
    objects: list[int]  # the scalar each input must be, or 0
    converts: list[int]  # per input: its conversion's code (0: none) and element count
    slots: list[int]  # each input's argument where it is fixed (a scalar, a buffer), or 0
    held: list[object] = field(default_factory=list)


def template(inputs: Inputs, dtypes: Sequence[np.dtype], addresses: Sequence[int]) -> Template:
    """The tables for `inputs` of a kernel whose placeholders have `dtypes`; `addresses`
    are the inputs' arguments in the call that publishes the plan."""
    n = len(dtypes)
    fed = list(dtypes)
    tables = Template([], [], [0] * n, [0] * (2 * n), [0] * n)
    for i, value, array in inputs.scalars:
        tables.objects[i], tables.slots[i] = id(value), addresses[i]
        tables.held += [value, array]
    for i, source in inputs.converted:
        buffer = runtime.aligned_empty(inputs.shapes[i], dtypes[i])
        tables.converts[2 * i : 2 * i + 2] = [_CODES[(source, dtypes[i])], buffer.size]
        tables.slots[i], fed[i] = runtime.address(buffer), source
        tables.held += [buffer, source]
    tables.descrs = [id(d) for d in fed]
    tables.itemsizes = [d.itemsize for d in fed]
    return tables
