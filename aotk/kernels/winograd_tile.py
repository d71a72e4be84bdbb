"""The transforms of Winograd's F(m x m, 3 x 3) on vectors of channels.

In one dimension, y = A^T [(G g) * (B^T d)] gives the m outputs of a 3-tap correlation
over m + 2 inputs with m + 2 products instead of 3 m; in two, each transform is applied
to the rows and to the columns, P X P^T. F(4 x 4, 3 x 3) (`F4`) is made by Toom-Cook
from its points (`toom_cook`): 36 products for 16 outputs, where the direct sum takes
144, for transforms of several terms and a larger rounding error (see `F4`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import prod

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, SSAValue

from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const

Matrix = tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class Transform:
    """F(m x m, 3 x 3): B^T (tile x tile), G (tile x 3), A^T (m x tile), tile = m + 2."""

    bt: Matrix
    g: Matrix
    at: Matrix

    @property
    def m(self) -> int:
        """Outputs along each side of a tile."""
        return len(self.at)

    @property
    def tile(self) -> int:
        """Inputs along each side of a tile's patch."""
        return len(self.bt)

    @property
    def points(self) -> int:
        """Products per tile and channel pair: one matrix product each."""
        return self.tile * self.tile

    @property
    def a(self) -> Matrix:
        """A (tile x m): the kernel gradient's transform of a tile of the output's."""
        return tuple(zip(*self.at, strict=True))

    @property
    def gt(self) -> Matrix:
        """G^T (3 x tile): the kernel gradient's last transform."""
        return tuple(zip(*self.g, strict=True))


def toom_cook(points: Sequence[Fraction]) -> Transform:
    """F(m, 3) from m + 1 distinct finite points and infinity, exactly: A^T evaluates the
    outputs' polynomial at the points, G the kernel's (divided by the point's Lagrange
    denominator), and B^T's rows are the coefficients of the products of (x - a) over the
    other points (over all of them for infinity): the transpose of Toom-Cook's
    polynomial product."""
    m = len(points) - 1

    def coefficients(roots: Sequence[Fraction]) -> list[Fraction]:
        c = [Fraction(1)]
        for a in roots:
            c = [
                (c[i - 1] if i else 0) - a * (c[i] if i < len(c) else 0) for i in range(len(c) + 1)
            ]
        return c

    bt, g = [], []
    for a in points:
        others = [b for b in points if b != a]
        denominator = prod((a - b for b in others), start=Fraction(1))
        g.append([a**j / denominator for j in range(3)])
        bt.append([*coefficients(others), Fraction(0)])
    g.append([Fraction(0), Fraction(0), Fraction(1)])
    bt.append(coefficients(points))
    at = [[a**i for a in points] + [Fraction(i == m - 1)] for i in range(m)]
    return Transform(*(tuple(tuple(float(x) for x in row) for row in mat) for mat in (bt, g, at)))


# The points 0, +-1, 2, -1/2: on random data, a 64-channel conv's largest error was 0.6
# times that of the usual 0, +-1, +-2 (and 6.6 times F(2 x 2, 3 x 3)'s; measured in
# float32 against float64, 20 draws), for transforms of a few more terms.
F4 = toom_cook([Fraction(p) for p in (0, 1, -1, 2, Fraction(-1, 2))])


def sandwich(
    k: Kernel, p: Sequence[Sequence[float]], grid: Sequence[Sequence[SSAValue]]
) -> list[SSAValue]:
    """P X P^T of a grid X of vectors, row-major."""
    half = [[combine(k, p_row, [line[j] for line in grid]) for j in range(len(grid[0]))]
            for p_row in p]  # fmt: skip
    return [combine(k, p_col, half_row) for half_row in half for p_col in p]


@dataclass(frozen=True)
class Slots:
    """Vectors of a tile's points in `buf`: point i at base + i * stride."""

    buf: Buf
    base: DimV
    stride: DimV

    def at(self, k: Kernel, point: DimV) -> DimV:
        return k.add(self.base, k.mul(point, self.stride))


def sandwich_into(
    k: Kernel,
    p: Sequence[Sequence[float]],
    row: Callable[[DimV], list[SSAValue]],
    out: tuple[Slots, VectorType],
) -> None:
    """P X P^T into out = (slots, vector type), row-major, for X of len(p[0]) rows, row r
    given by `row(r)`: in two loops, each row of X P^T into the first rows of the
    slots, then each column of P (X P^T) in place of its own. About a sixth of
    `sandwich`'s code for F4, for a store and a load of each value of X P^T: with the
    input and kernel transforms so, W5's second conv took 1033 ops at the loops stage
    instead of 1570 (a Keras-sized CNN step's xDSL time 0.80 s instead of 1.05), and
    0-4% more time (convs of 32 to 128 channels). The output transform, which ends in
    the epilogue, the pools and the stores of a whole tile, stays `sandwich`."""
    slots, vt = out
    n, rows = len(p), len(p[0])
    with k.loop(rows) as r:
        values = row(r)
        for q, p_row in enumerate(p):
            mk.vstore(k, slots.buf, slots.at(k, k.add(k.mul(r, n), q)), combine(k, p_row, values))
    with k.loop(n) as q:
        column = [mk.vload(k, slots.buf, slots.at(k, k.add(r * n, q)), vt) for r in range(rows)]
        for i, p_row in enumerate(p):
            mk.vstore(k, slots.buf, slots.at(k, k.add(i * n, q)), combine(k, p_row, column))


def combine(k: Kernel, coeffs: Sequence[float], values: Sequence[SSAValue]) -> SSAValue:
    """sum(c * v): the terms of each magnitude added or subtracted, then scaled once,
    into the total by a multiply-add; signs go into the adds and the scales, so that no
    negation is needed unless every coefficient is negative."""
    parts = []  # (factor, the sum it scales)
    for scale in sorted({abs(c) for c in coeffs if c != 0}):
        terms = [(c, v) for c, v in zip(coeffs, values, strict=True) if abs(c) == scale]
        part, negated = _signed_sum(k, terms)
        parts.append((-scale if negated else scale, part))
    assert parts, "a row of zeros"
    first = next((i for i, (factor, _) in enumerate(parts) if factor > 0), 0)
    factor, total = parts.pop(first)
    if factor == -1:
        total = k.b.insert(arith.NegfOp(total)).result
    elif factor != 1:
        total = scaled(k, total, factor)
    for factor, part in parts:
        if abs(factor) == 1:
            total = k.b.insert((arith.AddfOp if factor > 0 else arith.SubfOp)(total, part)).result
        else:
            total = mk.vfma(k, part, splat_like(k, factor, part), total)
    return total


def _signed_sum(k: Kernel, terms: Sequence[tuple[float, SSAValue]]) -> tuple[SSAValue, bool]:
    """sum(sign(c) v), or its negation and True when every c is negative."""
    if all(c < 0 for c, _ in terms):
        terms = [(-c, v) for c, v in terms]
        negated = True
    else:
        terms = sorted(terms, key=lambda term: term[0] < 0)  # a positive term first
        negated = False
    (_, total), rest = terms[0], terms[1:]
    for c, v in rest:
        total = k.b.insert((arith.AddfOp if c > 0 else arith.SubfOp)(total, v)).result
    return total, negated


def pool(k: Kernel, ys: Sequence[SSAValue], mode: str) -> SSAValue:
    """The max ("max") or the mean ("avg") of a window's vectors."""
    op = arith.MaximumfOp if mode == "max" else arith.AddfOp
    total = ys[0]
    for y in ys[1:]:
        total = k.b.insert(op(total, y)).result
    if mode == "max":
        return total
    count = splat_like(k, float(len(ys)), total)
    return k.b.insert(arith.DivfOp(total, count)).result


def scaled(k: Kernel, v: SSAValue, factor: float) -> SSAValue:
    return k.b.insert(arith.MulfOp(v, splat_like(k, factor, v))).result


def splat_like(k: Kernel, value: float, like: SSAValue) -> SSAValue:
    """A vector of `value` of `like`'s type."""
    vt = like.type
    assert isinstance(vt, VectorType)
    return mk.splat(k, const(k.b, value, _element(vt)), vt)


def _element(vt: VectorType) -> Attribute:
    return vt.element_type
