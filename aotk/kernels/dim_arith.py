"""Dim arithmetic for shape rules: each op's shape rule is written once, on this interface,
and runs in two domains.

- `STATIC` computes on dims known at trace time: ints, or None for a dim known only at run
  time (anything computed from None is None, except a product with 0). Type inference,
  the verifier and the call-time shape check run the rule here.
- A `Kernel` emits `index` arithmetic on run-time dims, folding whatever is known. The
  lowering (result dims, workspace plan, exported dims) runs the rule there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

Dim = Any  # int | None in STATIC, int | SSAValue in a Kernel


class DimArith(Protocol):
    """What a shape rule may compute with; sizes and results are never negative."""

    def add(self, a: Dim, c: Dim) -> Dim: ...
    def sub(self, a: Dim, c: Dim) -> Dim: ...
    def mul(self, a: Dim, c: Dim) -> Dim: ...
    def div(self, a: Dim, c: Dim) -> Dim: ...  # floor division
    def rem(self, a: Dim, c: Dim) -> Dim: ...
    def min(self, a: Dim, c: Dim) -> Dim: ...
    def max(self, a: Dim, c: Dim) -> Dim: ...
    def product(self, dims: Sequence[Dim]) -> Dim: ...


class StaticArith:
    """`DimArith` on trace-time dims: ints, None where a dim is unknown."""

    def add(self, a: int | None, c: int | None) -> int | None:
        return None if a is None or c is None else a + c

    def sub(self, a: int | None, c: int | None) -> int | None:
        return None if a is None or c is None else a - c

    def mul(self, a: int | None, c: int | None) -> int | None:
        if a == 0 or c == 0:
            return 0
        return None if a is None or c is None else a * c

    def div(self, a: int | None, c: int | None) -> int | None:
        return None if a is None or c is None else a // c

    def rem(self, a: int | None, c: int | None) -> int | None:
        return None if a is None or c is None else a % c

    def min(self, a: int | None, c: int | None) -> int | None:
        return None if a is None or c is None else min(a, c)

    def max(self, a: int | None, c: int | None) -> int | None:
        return None if a is None or c is None else max(a, c)

    def product(self, dims: Sequence[int | None]) -> int | None:
        total: int | None = 1
        for d in dims:
            total = self.mul(total, d)
        return total


STATIC = StaticArith()
