"""`SizeKernel`: a `Kernel` whose run-time size arithmetic detects overflow.

The workspace plan (and through it an exported library's `workspace_size`) computes every
buffer's dims and byte size from the call's dynamic dims. Plain `index` arithmetic would
wrap around for absurd dims (two dims of 2**32) and hand the caller a small workspace for
a kernel that then writes far past it. Here each product and sum computed at run time is
compared with `MAX_SIZE`; the comparisons are or-ed into one flag, which the workspace
function turns into a size of -1: "these dims overflow".
"""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.ir import SSAValue

from aotk.kernels.kernel import DimV, Kernel

# No dim, element count or byte count of a real call comes near this (64 PiB). A sum of two
# values below it is exact in an int64 and a product is checked by division, so the first
# value past it is always seen before anything wraps around.
MAX_SIZE = 1 << 56
ACCUMULATED = 64  # 64 * (2**56 + 63) < 2**63


class SizeKernel(Kernel):
    """A `Kernel` for planning: `overflowed` is an i1 that is true when some run-time size
    computed through it exceeded MAX_SIZE (None while nothing dynamic was computed).

    A plan computes the same few products (batch x width) for buffer after buffer; each
    sum and product is made, and checked, once per block."""

    def __init__(self, builder: Builder):
        super().__init__(builder)
        self.overflowed: SSAValue | None = None
        self._checked: set[SSAValue] = set()
        self._unchecked_terms = 0

    def accumulate(self, total: DimV, size: DimV) -> DimV:
        """A running total of checked sizes, checked itself only every ACCUMULATED terms:
        that many terms of at most MAX_SIZE (plus alignment) cannot wrap an int64."""
        total = Kernel.add(self, total, size)
        self._unchecked_terms += 1
        if self._unchecked_terms == ACCUMULATED:
            self.check(total)
        return total

    def check(self, size: DimV) -> None:
        """Flag `size` if it exceeds MAX_SIZE (the end of a running total, say)."""
        if isinstance(size, SSAValue):
            self._flag(self._above(size, MAX_SIZE))
            self._unchecked_terms = 0

    def add(self, a: DimV, c: DimV) -> DimV:
        total = super().add(a, c)
        if isinstance(total, SSAValue) and total not in (a, c) and self._unchecked(total):
            self._flag(self._above(total, MAX_SIZE))
        return total

    def mul(self, a: DimV, c: DimV) -> DimV:
        product = super().mul(a, c)
        if not isinstance(product, SSAValue) or product in (a, c):
            return product
        if not self._unchecked(product):
            return product
        if isinstance(a, int):  # the known factor, if any, goes second
            a, c = c, a
        assert isinstance(a, SSAValue)
        if isinstance(c, int):
            if c > 0:
                self._flag(self._above(a, MAX_SIZE // c))
        else:
            # for c >= 1, a * c > MAX_SIZE exactly when a > MAX_SIZE // c
            divisor = self.index_op(arith.MaxSIOp, c, 1)
            limit = self.index_op(arith.DivSIOp, MAX_SIZE, divisor)
            self._flag(self._above(a, limit))
        return product

    def _unchecked(self, value: SSAValue) -> bool:
        """Whether `value` is checked for the first time (`Kernel.pure` gives the same sum
        or product of a block as one value); marks it checked."""
        if value in self._checked:
            return False
        self._checked.add(value)
        return True

    def _above(self, value: SSAValue, limit: DimV) -> SSAValue:
        # signed: shape rules go below zero on the way to a clamp (a slice's n - 2 at n = 1);
        # no product or sum of values up to MAX_SIZE wraps, so overflow is always positive
        return self.compare("sgt", value, limit)

    def _flag(self, bad: SSAValue) -> None:
        if self.overflowed is None:
            self.overflowed = bad
        else:
            self.overflowed = self.either(self.overflowed, bad)
