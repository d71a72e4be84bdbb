"""The transforms of Winograd's F(2 x 2, 3 x 3) on vectors of channels.

In one dimension, y = A^T [(G g) * (B^T d)] gives y0 = d0 g0 + d1 g1 + d2 g2 and
y1 = d1 g0 + d2 g1 + d3 g2 with 4 products instead of 6; in two, each transform is
applied to the rows and to the columns, P X P^T. The entries are 0, +-1 and +-1/2, so a
transform is adds, subtracts and halvings.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, SSAValue

from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.kernel import Kernel
from aotk.kernels.scalar import const

TILE = 4  # input patch of a 2 x 2 output tile: 4 x 4 positions
POINTS = TILE * TILE  # products per tile and channel pair, one matrix product each

BT = ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1))
G = ((1, 0, 0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0, 0, 1))
AT = ((1, 1, 1, 0), (0, 1, -1, -1))
# the kernel gradient's: dg = G^T [sum over tiles (B^T d B) * (A e A^T)] G, e a tile of
# the output's gradient
A = tuple(zip(*AT, strict=True))
GT = tuple(zip(*G, strict=True))


def sandwich(
    k: Kernel, p: Sequence[Sequence[float]], grid: Sequence[Sequence[SSAValue]]
) -> list[SSAValue]:
    """P X P^T of a grid X of vectors, row-major."""
    half = [[combine(k, p_row, [line[j] for line in grid]) for j in range(len(grid[0]))]
            for p_row in p]  # fmt: skip
    return [combine(k, p_col, half_row) for half_row in half for p_col in p]


def combine(k: Kernel, coeffs: Sequence[float], values: Sequence[SSAValue]) -> SSAValue:
    """sum(c * v): the terms of each magnitude added or subtracted, then scaled once."""
    total: SSAValue | None = None
    for scale in sorted({abs(c) for c in coeffs if c != 0}):
        part = _signed_sum(
            k, [(c, v) for c, v in zip(coeffs, values, strict=True) if abs(c) == scale]
        )
        part = part if scale == 1 else scaled(k, part, scale)
        total = part if total is None else k.b.insert(arith.AddfOp(total, part)).result
    assert total is not None, "a row of zeros"
    return total


def _signed_sum(k: Kernel, terms: Sequence[tuple[float, SSAValue]]) -> SSAValue:
    (c0, total), rest = terms[0], terms[1:]
    if c0 < 0:
        total = k.b.insert(arith.NegfOp(total)).result
    for c, v in rest:
        total = k.b.insert((arith.AddfOp if c > 0 else arith.SubfOp)(total, v)).result
    return total


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
