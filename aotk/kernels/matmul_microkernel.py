"""Register-level piece of the float matmul: one `panel` update of a few rows of C.

A panel adds A[rows, kk:kk+ku] @ B[kk:kk+ku, j-range] to C[rows, j-range]. The rows * ku
values of A are broadcast into vector registers once; then one pass along j loads a
vector of C per row, streams ku rows of B (contiguous, so the hardware prefetchers
follow them), does rows * ku FMAs and stores C. C stays in L1 across the passes. The
last columns, fewer than a vector, are one masked vector per row (`column_tile`).
Unlike an outer-product tile this needs no packed copy of B: power-of-two row lengths
(N = 1024) put every row of an unpacked B column panel in the same cache set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, math, vector
from xdsl.dialects.arith import FastMathFlagsAttr
from xdsl.dialects.builtin import DenseArrayBase, VectorType, i1, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import SSAValue

from aotk.kernels.kernel import PARALLEL_GRAIN, Buf, DimV, Kernel
from aotk.kernels.scalar import const

# a dot product's multiply-adds may fuse, and its sum be split into per-lane partial sums
CONTRACT = FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
REASSOC_CONTRACT = FastMathFlagsAttr([FastMathFlag.REASSOC, FastMathFlag.ALLOW_CONTRACT])


@dataclass(frozen=True)
class Operands:
    """C[M, N] += A[M, K] @ B[K, N] on flat row-major buffers, and one register's type.

    `a_t`: A is stored transposed, as [K, M]; `b_t`: B is stored as [N, K]. Reading a
    transposed operand in place is what spares the gradient of a matmul its transposes.
    `alpha` (a scalar): C = C + alpha * (A @ B), an update of what C holds (a training
    step's `w - lr * x^T @ dz`): the products are summed as for C = A @ B and added,
    scaled, where they are stored (`store_c`), or the panels' A values are scaled.
    """

    c: Buf
    a: Buf
    b: Buf
    m: DimV
    n: DimV
    kdim: DimV
    vt: VectorType
    a_t: bool = False
    b_t: bool = False
    alpha: SSAValue | None = None

    @property
    def lanes(self) -> int:
        return self.vt.get_shape()[0]

    def a_at(self, k: Kernel, i: DimV, kk: DimV) -> DimV:
        """The flat offset of A[i, kk]."""
        return k.add(k.mul(kk, self.m), i) if self.a_t else k.add(k.mul(i, self.kdim), kk)

    def b_at(self, k: Kernel, kk: DimV, j: DimV) -> DimV:
        """The flat offset of B[kk, j]."""
        return k.add(k.mul(j, self.kdim), kk) if self.b_t else k.add(k.mul(kk, self.n), j)

    def worth_sharing(self, k: Kernel) -> SSAValue:
        """Whether the product has a PARALLEL_GRAIN of multiply-adds for each of two
        threads: a smaller one runs on the caller's thread alone (`Kernel.share_only_when`),
        as its tiles' hinted K trips would have its loops split even for 64 x 64 x 1."""
        work = k.mul(self.m, k.mul(self.n, self.kdim))
        return k.b.insert(arith.CmpiOp(k.index(work), k.index(2 * PARALLEL_GRAIN), "sge")).result


def vload(k: Kernel, buf: Buf, offset: DimV, vt: VectorType) -> SSAValue:
    return k.b.insert(vector.LoadOp(buf.mem, [k.index(offset)], vt)).result


def vstore(k: Kernel, buf: Buf, offset: DimV, value: SSAValue) -> None:
    k.b.insert(vector.StoreOp(value, buf.mem, [k.index(offset)]))


def lane_mask(k: Kernel, count: DimV, vt: VectorType) -> SSAValue:
    """The first `count` lanes of `vt` (an i1 vector): a masked edge of `count` elements
    (count must not be negative)."""
    mask_type = VectorType(i1, vt.get_shape())
    return k.b.insert(vector.CreateMaskOp([k.index(count)], mask_type)).mask_vector


def vload_masked(k: Kernel, buf: Buf, offset: DimV, mask: SSAValue, zero: SSAValue) -> SSAValue:
    """The lanes of `mask` from `buf` at `offset`; `zero` (a vector) in the others, which
    are not read."""
    return k.b.insert(vector.MaskedLoadOp(buf.mem, [k.index(offset)], mask, zero)).result


def vstore_masked(k: Kernel, buf: Buf, offset: DimV, mask: SSAValue, value: SSAValue) -> None:
    k.b.insert(vector.MaskedStoreOp(buf.mem, [k.index(offset)], mask, value))


def vload_lanes(
    k: Kernel, buf: Buf, offset: DimV, vt: VectorType, mask: SSAValue | None
) -> SSAValue:
    """A vector from `buf`: whole when `mask` is None, else its lanes (0 in the others)."""
    if mask is None:
        return vload(k, buf, offset, vt)
    return vload_masked(k, buf, offset, mask, splat(k, const(k.b, 0, vt.element_type), vt))


def vstore_lanes(k: Kernel, buf: Buf, offset: DimV, value: SSAValue, mask: SSAValue | None) -> None:
    """Store `value` whole when `mask` is None, else its lanes."""
    if mask is None:
        vstore(k, buf, offset, value)
    else:
        vstore_masked(k, buf, offset, mask, value)


def vector_loop(
    k: Kernel, count: DimV, vt: VectorType, body: Callable[[DimV, SSAValue | None], None]
) -> None:
    """body(start, mask) over [0, count) in vectors of `vt`: the whole ones (mask None),
    then one masked vector for the rest."""
    lanes = vt.get_shape()[0]
    whole = k.mul(k.div(count, lanes), lanes)
    with k.loop(whole, step=lanes) as start:
        body(start, None)
    with k.loop(count, lb=whole, step=lanes, trips=1) as start:
        body(start, lane_mask(k, k.sub(count, start), vt))


def fill(
    k: Kernel, buf: Buf, span: tuple[DimV, DimV], vector: SSAValue, *, parallel: bool = False
) -> None:
    """buf[start:start + count] = copies of `vector`, for span = (start, count) and count
    a multiple of its lanes."""
    start, count = span
    assert isinstance(vector.type, VectorType)
    lanes = vector.type.get_shape()[0]
    with k.loop(count, step=lanes, parallel=parallel) as i:
        vstore(k, buf, k.add(start, i), vector)


def splat(k: Kernel, scalar: SSAValue, vt: VectorType) -> SSAValue:
    return k.b.insert(vector.BroadcastOp(scalar, vt)).vector


def vfma(k: Kernel, x: SSAValue, y: SSAValue, acc: SSAValue) -> SSAValue:
    return k.b.insert(vector.FMAOp(x, y, acc)).res


def transpose(k: Kernel, rows: Sequence[SSAValue]) -> list[SSAValue]:
    """The columns of the square matrix whose rows are `rows` (n vectors of n lanes, n a
    power of two): log2(n) rounds of shuffles, round s swapping the off-diagonal s x s
    blocks of every 2s x 2s block (s = n/2, ..., 1)."""
    n = len(rows)
    out = list(rows)
    s = n // 2
    while s:
        low = DenseArrayBase.from_list(i64, [j if j & s == 0 else n + j - s for j in range(n)])
        high = DenseArrayBase.from_list(i64, [j + s if j & s == 0 else n + j for j in range(n)])
        for i in (i for i in range(n) if i & s == 0):
            top, bottom, vt = out[i], out[i + s], out[i].type
            assert isinstance(vt, VectorType)
            out[i] = k.b.insert(vector.ShuffleOp(top, bottom, low, result_type=vt)).result
            out[i + s] = k.b.insert(vector.ShuffleOp(top, bottom, high, result_type=vt)).result
        s //= 2
    return out


def transpose_into(
    k: Kernel,
    bufs: tuple[Buf, Buf],
    rows: tuple[Sequence[DimV], DimV],
    k_range: tuple[DimV, DimV],
    width: int,
    trips: int,
) -> None:
    """out[dst + kk * width + r] = b[srcs[r] + kk] for kk in k_range, for `lanes` rows of
    b (rows = (srcs, dst)): squares of lanes x lanes loaded as rows and transposed in
    registers (`transpose`), the K left over element by element. A packed sliver's
    columns from a B stored [N, K]: element by element, every store went to another row
    of the sliver."""
    out, b = bufs
    (srcs, dst), (k0, k1) = rows, k_range
    lanes = len(srcs)
    vt = VectorType(out.elem, [lanes])
    squares = k.add(k0, k.mul(k.div(k.sub(k1, k0), lanes), lanes))
    with k.loop(squares, lb=k0, step=lanes, trips=trips) as kk:
        square = [vload(k, b, k.add(src, kk), vt) for src in srcs]
        for r, row in enumerate(transpose(k, square)):
            vstore(k, out, k.add(dst, k.mul(k.add(kk, r), width)), row)
    with k.loop(k1, lb=squares, trips=lanes // 2) as kk:
        at = k.add(dst, k.mul(kk, width))
        for r, src in enumerate(srcs):
            k.store_flat(out, k.add(at, r), k.load_flat(b, k.add(src, kk)))


def store_c(
    k: Kernel, ops: Operands, at: DimV, acc: SSAValue, mask: SSAValue | None = None
) -> None:
    """C[at:] = acc (a vector; `mask`: its first lanes only), or with `ops.alpha`,
    C[at:] + alpha * acc."""
    if ops.alpha is not None:
        if mask is None:
            old = vload(k, ops.c, at, ops.vt)
        else:
            zero = splat(k, const(k.b, 0.0, ops.vt.element_type), ops.vt)
            old = vload_masked(k, ops.c, at, mask, zero)
        acc = vfma(k, splat(k, ops.alpha, ops.vt), acc, old)
    if mask is None:
        vstore(k, ops.c, at, acc)
    else:
        vstore_masked(k, ops.c, at, mask, acc)


def zero_fill(k: Kernel, ops: Operands, rows: tuple[DimV, DimV], cols: tuple[DimV, DimV]) -> None:
    """C[rows, cols] = 0, threads splitting the rows: whole vectors, then scalars."""
    lanes = ops.lanes
    lo, hi = cols
    j_vec = k.add(lo, k.mul(k.div(k.sub(hi, lo), lanes), lanes))
    zero = splat(k, const(k.b, 0.0, ops.vt.element_type), ops.vt)
    scalar_zero = const(k.b, 0.0, ops.vt.element_type)
    with k.loop(rows[1], lb=rows[0], parallel=True) as i:
        row = k.mul(i, ops.n)
        with k.loop(j_vec, lb=lo, step=lanes) as j:
            vstore(k, ops.c, k.add(row, j), zero)
        with k.loop(hi, lb=j_vec) as j:
            k.store_flat(ops.c, k.add(row, j), scalar_zero)


def panel(
    k: Kernel,
    ops: Operands,
    i0: DimV,
    rows: int,
    kk: DimV,
    ku: int,
    j_range: tuple[DimV, DimV],
    vectors: int | None = None,
) -> None:
    """C[i0:i0+rows, j-range] += A[i0:i0+rows, kk:kk+ku] @ B[kk:kk+ku, j-range] (A's
    values times `ops.alpha`, if any); the j-range is whole vectors (see `column_tile`
    for the rest); `vectors`: their typical number, for cost estimates. B is read by
    rows, so it must not be transposed."""
    lanes, vt = ops.lanes, ops.vt
    avals = [
        [
            _scaled(k, ops, k.load_flat(ops.a, ops.a_at(k, k.add(i0, r), k.add(kk, u))))
            for u in range(ku)
        ]
        for r in range(rows)
    ]
    asplat = [[splat(k, v, vt) for v in row] for row in avals]
    b_rows = [k.mul(k.add(kk, u), ops.n) for u in range(ku)]
    c_rows = [k.mul(k.add(i0, r), ops.n) for r in range(rows)]
    j_lo, j_hi = j_range
    with k.loop(j_hi, lb=j_lo, step=lanes, trips=vectors) as j:
        accs = [vload(k, ops.c, k.add(c_rows[r], j), vt) for r in range(rows)]
        for u in range(ku):
            bv = vload(k, ops.b, k.add(b_rows[u], j), vt)
            accs = [vfma(k, asplat[r][u], bv, accs[r]) for r in range(rows)]
        for r in range(rows):
            vstore(k, ops.c, k.add(c_rows[r], j), accs[r])


def _scaled(k: Kernel, ops: Operands, value: SSAValue) -> SSAValue:
    """alpha * value for an update (`Operands.alpha`), else value."""
    if ops.alpha is None:
        return value
    return k.b.insert(arith.MulfOp(ops.alpha, value)).result


def column_tile(
    k: Kernel,
    ops: Operands,
    tile: tuple[DimV, int],
    k_range: tuple[DimV, DimV],
    cols: tuple[DimV, DimV | None],
    b_rows: tuple[DimV, DimV] | None = None,
    accumulate: bool = True,
    k_trips: int | None = None,
) -> None:
    """C[i0:i0+rows, j:j+count] (+)= A[rows, k-range] @ B[k-range, j:j+count] for tile =
    (i0, rows) and cols = (j, count): one vector per row (masked to its first count
    lanes; count None: all of them), kept in registers over the K range (`k_trips`: its
    typical length); C is read first when `accumulate` (an update always adds to C:
    `store_c`). B's row kk starts
    at b_rows = (offset of row 0, row stride), by default B's own (j, N). Used for the
    last columns, fewer than a panel's or tile's width: a classifier's 10 outputs are
    all edge, and a panel's round trip through C at every step would stall there, as a
    masked store does not forward to the masked load after it."""
    vt = ops.vt
    (i0, rows), (j, count) = tile, cols
    zero = splat(k, const(k.b, 0.0, vt.element_type), vt)
    mask = None if count is None else lane_mask(k, count, vt)
    c_at = [k.add(k.mul(k.add(i0, r), ops.n), j) for r in range(rows)]
    b_at, b_stride = b_rows or (j, ops.n)

    def load(buf: Buf, at: DimV) -> SSAValue:
        return vload(k, buf, at, vt) if mask is None else vload_masked(k, buf, at, mask, zero)

    def step(kk: SSAValue, accs: Sequence[SSAValue]) -> list[SSAValue]:
        bv = load(ops.b, k.add(k.mul(kk, b_stride), b_at))
        avals = [k.load_flat(ops.a, ops.a_at(k, k.add(i0, r), kk)) for r in range(rows)]
        return [vfma(k, splat(k, av, vt), bv, acc) for av, acc in zip(avals, accs, strict=True)]

    from_c = accumulate and ops.alpha is None  # an update adds C where it stores
    accs = [load(ops.c, at) for at in c_at] if from_c else [zero] * rows
    accs = k.fold_loop(k_range[1], accs, step, lb=k_range[0], trips=k_trips)
    for at, acc in zip(c_at, accs, strict=True):
        store_c(k, ops, at, acc, mask)


def dot_panel(k: Kernel, ops: Operands, i: DimV, j0: DimV, cols: int) -> None:
    """C[i, j0:j0+cols] = A[i, :] @ B[:, j0:j0+cols] (or C + alpha * that, for an
    update) for a B stored [N, K]: one dot
    product of two contiguous rows per element, A's row read once for all `cols`; LLVM
    vectorizes the loop over K into per-lane partial sums."""
    ct = ops.vt.element_type
    b_rows = [k.mul(k.add(j0, c), ops.kdim) for c in range(cols)]

    def step(kk: SSAValue, accs: Sequence[SSAValue]) -> list[SSAValue]:
        av = k.load_flat(ops.a, ops.a_at(k, i, kk))
        products = [
            k.b.insert(arith.MulfOp(av, k.load_flat(ops.b, k.add(row, kk)), flags=CONTRACT)).result
            for row in b_rows
        ]
        return [
            k.b.insert(arith.AddfOp(acc, p, flags=REASSOC_CONTRACT)).result
            for acc, p in zip(accs, products, strict=True)
        ]

    zero = const(k.b, 0.0, ct)
    sums = k.fold_loop(ops.kdim, [zero] * cols, step, trips=256)
    c_row = k.mul(i, ops.n)
    for c, total in enumerate(sums):
        at = k.add(c_row, k.add(j0, c))
        if ops.alpha is not None:
            total = k.b.insert(math.FmaOp(ops.alpha, total, k.load_flat(ops.c, at))).result
        k.store_flat(ops.c, at, total)
