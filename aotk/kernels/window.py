"""The static window of a convolution or pooling op, and its geometry on any `DimArith`.

`Window.of_conv` and `Window.of_pool` build it once from an op's attributes and validate
them, naming the argument. `pads` and `out_dim` are the one padding rule and the one
output-size formula: type inference and the NumPy oracles run them on `STATIC` ints, the
loop nests on a `Kernel`'s run-time index values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from xdsl.utils.str_enum import StrEnum

from aotk.kernels.dim_arith import STATIC, Dim, DimArith


class ConvPadding(StrEnum):
    """aotk.conv's padding: explicit per-side pads, or TF's "same"."""

    EXPLICIT = "explicit"
    SAME = "same"


class PoolPadding(StrEnum):
    """aotk.pool's padding: none ("valid"), or TF's "same"."""

    VALID = "valid"
    SAME = "same"


E = TypeVar("E", bound=StrEnum)


def member(enum: type[E], name: str, value: object) -> E:
    """`value` (a member or its string) as a member of `enum`; raise naming argument `name`."""
    try:
        return enum(value)
    except ValueError:
        allowed = " or ".join(repr(m.value) for m in enum)
        shown = value.value if isinstance(value, StrEnum) else value
        raise ValueError(f"{name} must be {allowed}, got {shown!r}") from None


def same_pads(a: DimArith, size: Dim, stride: int, extent: int) -> tuple[Dim, Dim]:
    """TF's "same" padding of one axis (output ceil(size / stride)): the odd one goes after."""
    out = a.div(a.add(size, stride - 1), stride)
    total = a.max(a.sub(a.add(a.mul(a.sub(out, 1), stride), extent), size), 0)
    before = a.div(total, 2)
    return before, a.sub(total, before)


def _ints(name: str, values: Sequence[int], n: int, low: int) -> tuple[int, ...]:
    if len(values) != n or any(not isinstance(v, int) or v < low for v in values):
        raise ValueError(f"{name} must be {n} ints >= {low}, got {tuple(values)}")
    return tuple(values)


@dataclass(frozen=True)
class Window:
    """Static window parameters of one op; per-axis sizes come from its methods."""

    window: tuple[int, ...]  # taps per spatial axis (the kernel's or the pool's window)
    strides: tuple[int, ...]
    dilation: tuple[int, ...]  # between taps
    lhs_dilation: tuple[int, ...]  # between input elements (a transposed convolution)
    pad_before: tuple[int, ...]  # explicit pads; unused when `same`
    pad_after: tuple[int, ...]
    same: bool
    groups: int = 1

    @classmethod
    def of_conv(
        cls,
        window: Sequence[Any],
        *,
        strides: Sequence[int],
        dilation: Sequence[int],
        lhs_dilation: Sequence[int],
        pad_before: Sequence[int],
        pad_after: Sequence[int],
        padding: str,
        groups: int,
        **_: Any,
    ) -> Window:
        """aotk.conv's window; `window` is the kernel's spatial dims (static)."""
        n = len(window)
        same = member(ConvPadding, "padding", padding) is ConvPadding.SAME
        lhs = _ints("lhs_dilation", lhs_dilation, n, 1)
        if same and any(v != 1 for v in lhs):
            raise ValueError(f"'same' padding needs lhs_dilation 1, got {lhs}")
        if not isinstance(groups, int) or groups < 1:
            raise ValueError(f"groups must be an int >= 1, got {groups!r}")
        return cls(
            _ints("window", [int(d) for d in window], n, 1),
            _ints("strides", strides, n, 1),
            _ints("dilation", dilation, n, 1),
            lhs,
            _ints("pad_before", pad_before, n, 0),
            _ints("pad_after", pad_after, n, 0),
            same,
            groups,
        )

    @classmethod
    def of_pool(
        cls, *, window: Sequence[int], strides: Sequence[int], padding: str, **_: Any
    ) -> Window:
        """aotk.pool's window: no dilation, no explicit pads."""
        n = len(window)
        ones, zeros = (1,) * n, (0,) * n
        same = member(PoolPadding, "padding", padding) is PoolPadding.SAME
        taps = _ints("window", window, n, 1)
        return cls(taps, _ints("strides", strides, n, 1), ones, ones, zeros, zeros, same)

    @property
    def rank(self) -> int:
        return len(self.window)

    def extent(self, d: int) -> int:
        """The window's span along axis d, dilation included."""
        return (self.window[d] - 1) * self.dilation[d] + 1

    def dilated(self, a: DimArith, size: Dim, d: int) -> Dim:
        """The input's size along axis d after input dilation (0 stays 0)."""
        lhs = self.lhs_dilation[d]
        if lhs == 1:
            return size
        return a.max(a.add(a.mul(a.sub(size, 1), lhs), 1), 0)

    def pads(self, a: DimArith, size: Dim, d: int) -> tuple[Dim, Dim]:
        """The pads before and after axis d of an input of `size`."""
        if self.same:
            return same_pads(a, size, self.strides[d], self.extent(d))
        return self.pad_before[d], self.pad_after[d]

    def out_dim(self, a: DimArith, size: Dim, d: int) -> Dim:
        """The output size of axis d: (dilated + pads - extent) // stride + 1."""
        before, after = self.pads(a, size, d)
        padded = a.add(a.add(self.dilated(a, size, d), before), after)
        s = self.strides[d]
        # adding s before dividing keeps a Kernel's unsigned division on a non-negative value
        return a.div(a.add(a.sub(padded, self.extent(d)), s), s)

    def out_dims(self, a: DimArith, sizes: Sequence[Dim]) -> list[Dim]:
        return [self.out_dim(a, size, d) for d, size in enumerate(sizes)]

    def check_fits(self, sizes: Sequence[int | None]) -> None:
        """Raise if an input of known size is smaller than the window, as TF does: the
        padded input, or for an empty axis the output size, would be negative."""
        for d, size in enumerate(sizes):
            if size is None:
                continue
            pads = self.pads(STATIC, size, d)
            if size > 0:
                padded = self.dilated(STATIC, size, d) + pads[0] + pads[1]
                fits = padded >= self.extent(d)
            else:
                fits = self.out_dim(STATIC, size, d) >= 0 and self.lhs_dilation[d] == 1
            if not fits:
                dilated = f" dilated by {self.dilation[d]}" if self.dilation[d] != 1 else ""
                raise ValueError(
                    f"spatial axis {d} of size {size} (padded {pads}) is smaller than the "
                    f"window {self.window[d]}{dilated}"
                )
