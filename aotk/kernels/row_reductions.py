"""Softmax and logsumexp along the last axis, one row at a time, rows split across threads.

Softmax is three passes over a row that stays in L1: its maximum; exp(x - max) stored and
summed; a scale by 1 / sum. Logsumexp is two: the maximum, then the sum of exp(x - shift),
whose log plus the shift is the result (the shift is the maximum when it is finite, else
0, so rows of -inf give -inf and a +inf or NaN propagates). The maximum is read in
vectors here (`row_extremum`). For f32 the exponentials are too, by `vecmath_lanes`,
whose table makes them a third cheaper than `vecmath.exp_nonpositive` (x - shift <= 0;
logsumexp caps it at 0 for a +inf maximum); the scale and the other types' sums are plain
loops LLVM vectorizes, with `vecmath`'s polynomials.

Against the compositions (max, sub+exp, sum, then div or log+add: each a kernel streaming
the whole tensor through memory, the exponentials written out and read back), the input
is read from memory once and the output written once.

While the exponentials of a row are computed, memory would idle: the maximum's pass,
which waits on memory, is done. So each step of them prefetches the lines
PREFETCH_AHEAD_BYTES further on, of the input and (to be written) of the output, and the
passes of the rows there find them in L2. W7's softmax (4096 x 1024 f32, 32 MB in and
out, about this host's L3) took 0.96 ms without, 0.88 with on one thread and 0.69 -> 0.50
on two; its logsumexp 1.04 -> 0.67. Rows in cache run as before. Of the distances tried,
a row (4 KB) ahead was slower than none and four rows (16 KB) gained less than two.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, math, vector
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import heuristics, vecmath, vecmath_lanes
from aotk.kernels import transcendental as tr
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.matmul_microkernel import lane_mask, splat, vload, vload_masked, vstore_lanes
from aotk.kernels.prefetch import LINE_BYTES, prefetch
from aotk.kernels.scalar import REASSOC, compute_type, const, insert, reassociating_add

ROW_MAX_ACCUMULATORS = 4  # vmaxps has a latency of 3-4 cycles and issues 1-2 a cycle
# softmax's exponentials: vectors loaded before the first is stored (so that a load of x
# seldom follows a store to the output whose address it matches in the low 12 bits)
EXP_GROUP = 4
PREFETCH_AHEAD_BYTES = 8192
_SUM = vector.CombiningKindAttr(vector.CombiningKindFlag.ADD)
_COMBINE = {
    "max": vector.CombiningKindAttr(vector.CombiningKindFlag.MAXNUMF),
    "min": vector.CombiningKindAttr(vector.CombiningKindFlag.MINNUMF),
}


def emit_softmax(k: Kernel, out: Buf, x: Buf) -> None:
    """out = softmax(x) along x's last axis (rank >= 1)."""
    width, rows = x.dims[-1], k.product(x.dims[:-1])
    ct = compute_type(x.elem)
    lanes = _lanes(x.elem)
    vectors = vecmath_lanes.supported(lanes)
    with k.loop(rows, parallel=True) as row:  # all rows, one loop
        start = k.mul(row, width)
        ahead = _ahead(k, x, start, rows) if vectors else 0
        peak = row_extremum(k, x, (start, width), "max")  # NaNs reach every output anyway
        if vectors:
            total = _exp_and_sum_lanes(k, (out, x), (start, width), peak, lanes, ahead=ahead)
        else:
            total = _exp_and_sum(k, (out, x), (start, width), peak, vecmath.exp_nonpositive)
        scale = insert(k.b, arith.DivfOp(const(k.b, 1.0, ct), total))
        with k.loop(width) as i:
            at = k.add(start, i)
            k.store_flat(out, at, insert(k.b, arith.MulfOp(k.load_flat(out, at), scale)))


def _exp_and_sum(
    k: Kernel,
    bufs: tuple[Buf | None, Buf],
    row: tuple[DimV, DimV],
    shift: SSAValue,
    exp: Callable[[Builder, SSAValue], SSAValue],
) -> SSAValue:
    """The sum of exp(x[i] - shift) over the `row` (start, width) of x, each also stored
    to out[i] unless out is None: a plain loop for LLVM to vectorize."""
    (out, x), (start, width) = bufs, row

    def exp_and_sum(acc: SSAValue, i: SSAValue) -> SSAValue:
        shifted = insert(k.b, arith.SubfOp(k.load_flat(x, k.add(start, i)), shift))
        e = exp(k.b, shifted)
        if out is not None:
            k.store_flat(out, k.add(start, i), e)
        return insert(k.b, reassociating_add(acc, e))

    return _fold(k, width, const(k.b, 0.0, shift.type), exp_and_sum)


def _exp_and_sum_lanes(
    k: Kernel,
    bufs: tuple[Buf | None, Buf],
    row: tuple[DimV, DimV],
    shift: SSAValue,
    vt: VectorType,
    *,
    ahead: DimV,
    capped: bool = False,
) -> SSAValue:
    """The sum of exp(x[i] - shift) over the `row` (start, width) of x, each also stored
    to out[i] unless out is None, in vectors with `vecmath_lanes`'s exponential:
    EXP_GROUP vectors a step, then single ones, then one masked vector whose other lanes
    read as -inf (whose exponential adds 0). x[i] - shift must be <= 0 or NaN, unless
    `capped` makes it min(x[i] - shift, 0) (one op a vector more; a NaN stays NaN).
    Each step of EXP_GROUP prefetches the lines of element `ahead` + i (`_ahead`)."""
    (out, x), (start, width) = bufs, row
    lanes = vt.get_shape()[0]
    top = splat(k, shift, vt)
    absent = splat(k, const(k.b, float("-inf"), x.elem), vt)  # lanes past the row
    zero = splat(k, const(k.b, 0.0, x.elem), vt)

    def exp(v: SSAValue) -> SSAValue:
        d = insert(k.b, arith.SubfOp(v, top))
        if capped:
            d = insert(k.b, arith.SelectOp(insert(k.b, arith.CmpfOp(d, zero, "ogt")), zero, d))
        return vecmath_lanes.exp_nonpositive(k.b, d)

    def step(
        count: int, masked: tuple[SSAValue, SSAValue] | None = None
    ) -> Callable[..., list[SSAValue]]:
        """`count` whole vectors a step, or one with `masked` = (mask, the other lanes)."""
        mask = None if masked is None else masked[0]

        def body(i: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
            ats = [k.add(start, k.add(i, j * lanes)) for j in range(count)]
            if count > 1:
                _prefetch_lines(k, bufs, k.add(ahead, i), count * lanes)
            if masked is None:
                vs = [vload(k, x, at, vt) for at in ats]
            else:
                vs = [vload_masked(k, x, ats[0], *masked)]
            es = [exp(v) for v in vs]
            for at, e in zip(ats, es, strict=True):
                if out is not None:
                    vstore_lanes(k, out, at, e, mask)
            total = acc[0]
            for e in es:
                total = insert(k.b, reassociating_add(total, e))
            return [total]

        return body

    acc = [zero]
    done: DimV = 0
    for count in (EXP_GROUP, 1):  # a row narrower than a vector has only the masked one
        upto = k.mul(k.div(width, count * lanes), count * lanes)
        if upto != done:
            acc = k.fold_loop(upto, acc, step(count), lb=done, step=count * lanes)
        done = upto
    if not (isinstance(width, int) and width % lanes == 0):
        rest = (lane_mask(k, k.sub(width, done), vt), absent)
        acc = k.fold_loop(width, acc, step(1, rest), lb=done, step=lanes, trips=1)
    return _reduce(k, acc[0], _SUM, REASSOC)


def _ahead(k: Kernel, x: Buf, start: DimV, rows: DimV) -> DimV:
    """Where the lines to prefetch while the row from element `start` is worked on begin:
    PREFETCH_AHEAD_BYTES on, or as far as keeps a row's width of them inside x."""
    width = x.dims[-1]
    last_row = k.mul(k.sub(rows, 1), width)
    return k.min(k.add(start, PREFETCH_AHEAD_BYTES // dtypes.byte_size(x.elem)), last_row)


def _prefetch_lines(k: Kernel, bufs: tuple[Buf | None, Buf], at: DimV, count: int) -> None:
    """Prefetch the lines of elements [at, at + count) of x, and of out (to be written)
    unless it is None."""
    out, x = bufs
    per_line = LINE_BYTES // dtypes.byte_size(x.elem)
    for line in range(max(1, count // per_line)):
        offset = k.add(at, line * per_line)
        prefetch(k, x, offset)
        if out is not None:
            prefetch(k, out, offset, write=True)


def emit_logsumexp(k: Kernel, out: Buf, x: Buf) -> None:
    """out[...] = log(sum(exp(x[..., :]))) along x's last axis (rank >= 1)."""
    width, rows = x.dims[-1], k.product(x.dims[:-1])
    ct = compute_type(x.elem)
    lanes = _lanes(x.elem)
    vectors = vecmath_lanes.supported(lanes)
    with k.loop(rows, parallel=True) as row:
        start = k.mul(row, width)
        ahead = _ahead(k, x, start, rows) if vectors else 0
        peak = row_extremum(k, x, (start, width), "max")  # NaNs reach every output anyway
        magnitude = insert(k.b, math.AbsFOp(peak))
        finite = insert(k.b, arith.CmpfOp(magnitude, const(k.b, float("inf"), ct), "olt"))
        shift = insert(k.b, arith.SelectOp(finite, peak, const(k.b, 0.0, ct)))
        if vectors:
            total = _exp_and_sum_lanes(
                k, (None, x), (start, width), shift, lanes, ahead=ahead, capped=True
            )
        else:
            total = _exp_and_sum(k, (None, x), (start, width), shift, _full_exp)
        result = insert(k.b, arith.AddfOp(tr.emit("log", k.b, total), shift))
        if vectors:
            # its exponentials are capped at 1, so a +inf maximum (shift 0) sets the
            # result here: +inf, or NaN if the sum is (0 * sum is 0 or NaN)
            infinite = insert(k.b, arith.CmpfOp(peak, const(k.b, float("inf"), ct), "oeq"))
            nan_or_zero = insert(k.b, arith.MulfOp(const(k.b, 0.0, ct), total))
            overflow = insert(k.b, arith.AddfOp(peak, nan_or_zero))
            result = insert(k.b, arith.SelectOp(infinite, overflow, result))
        k.store_flat(out, row, result)


def _full_exp(b: Builder, x: SSAValue) -> SSAValue:
    return tr.emit("exp", b, x)


def _lanes(elem: Attribute) -> VectorType:
    """A vector register of `elem` on the target kernels are tiled for."""
    return VectorType(elem, [heuristics.vector_shape()[0] // dtypes.byte_size(elem)])


def row_extremum(k: Kernel, x: Buf, row: tuple[DimV, DimV], kind: str) -> SSAValue:
    """The maximum (kind "max") or minimum ("min") of the `row` (start, width) of x,
    without its NaNs; -inf (+inf for "min") for an empty row or one of NaNs alone.

    Without the NaNs the maximum is `x > m ? x : m`, which x86 does in one vmaxps. LLVM
    vectorizes no such reduction, so f32 and f64 rows are read in vectors here:
    ROW_MAX_ACCUMULATORS registers in flight, then the rest.
    """
    start, width = row
    lowest = const(k.b, float("-inf" if kind == "max" else "inf"), compute_type(x.elem))
    if not isinstance(x.elem, Float32Type | Float64Type):
        return _fold(
            k, width, lowest, lambda m, i: _keep(k, m, k.load_flat(x, k.add(start, i)), kind)
        )
    vt = VectorType(x.elem, [heuristics.narrow_vector_bytes() // dtypes.byte_size(x.elem)])
    chunk = ROW_MAX_ACCUMULATORS * vt.get_shape()[0]
    chunks = k.div(width, chunk)
    peak = _vector_extremum(k, x, (start, chunks), splat(k, lowest, vt), kind)
    if isinstance(width, int) and width % chunk == 0:
        return peak

    def rest(i: SSAValue, ms: Sequence[SSAValue]) -> list[SSAValue]:
        return [_keep(k, ms[0], k.load_flat(x, k.add(start, i)), kind)]

    return k.fold_loop(width, [peak], rest, lb=k.mul(chunks, chunk))[0]


def _vector_extremum(
    k: Kernel, x: Buf, span: tuple[DimV, DimV], lowest: SSAValue, kind: str
) -> SSAValue:
    """The extremum of `span` = (start, chunks): chunks steps of ROW_MAX_ACCUMULATORS
    vectors from x[start]."""
    start, chunks = span
    vt = lowest.type
    assert isinstance(vt, VectorType)
    lanes = vt.get_shape()[0]

    def step(c: SSAValue, ms: Sequence[SSAValue]) -> list[SSAValue]:
        at = k.add(start, k.mul(c, lanes * len(ms)))
        loads = [vload(k, x, k.add(at, j * lanes), vt) for j in range(len(ms))]
        return [_keep(k, m, v, kind) for m, v in zip(ms, loads, strict=True)]

    accs = list(k.fold_loop(chunks, [lowest] * ROW_MAX_ACCUMULATORS, step))
    while len(accs) > 1:
        accs = [_keep(k, a, b, kind) for a, b in zip(accs[::2], accs[1::2], strict=True)]
    return _reduce(k, accs[0], _COMBINE[kind], arith.FastMathFlagsAttr("none"))


def _reduce(
    k: Kernel, v: SSAValue, kind: vector.CombiningKindAttr, fastmath: arith.FastMathFlagsAttr
) -> SSAValue:
    """The `kind` reduction of the lanes of v (a vector) into one element."""
    vt = v.type
    assert isinstance(vt, VectorType)
    # ReductionOp's constructor types its result as the vector: build it with the element
    reduce = vector.ReductionOp.create(
        operands=[v],
        result_types=[vt.element_type],
        properties={"kind": kind, "fastmath": fastmath},
    )
    return insert(k.b, reduce)


def _keep(k: Kernel, m: SSAValue, v: SSAValue, kind: str) -> SSAValue:
    """`v > m ? v : m` ("max"; `v < m` for "min"): m where v is NaN."""
    beats = insert(k.b, arith.CmpfOp(v, m, "ogt" if kind == "max" else "olt"))
    return insert(k.b, arith.SelectOp(beats, v, m))


def _fold(
    k: Kernel, n: DimV, init: SSAValue, step: Callable[[SSAValue, SSAValue], SSAValue]
) -> SSAValue:
    """One loop over [0, n) carrying `init` through `step(acc, i)`."""

    def body(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        return [step(carried[0], i)]

    return k.fold_loop(n, [init], body)[0]
