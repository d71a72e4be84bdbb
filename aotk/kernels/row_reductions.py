"""Softmax and logsumexp along the last axis, one row at a time, rows split across threads.

Softmax is three passes over a row that stays in L1: its maximum; exp(x - max) stored and
summed; a scale by 1 / sum. Logsumexp is two: the maximum, then the sum of exp(x - shift),
whose log plus the shift is the result (the shift is the maximum when it is finite, else
0, so rows of -inf give -inf and a +inf or NaN propagates). The maximum is read in
vectors here (`row_extremum`); the other loops are plain loops LLVM vectorizes: the sum is a
reduction it may reassociate, the exponentials are `vecmath`'s polynomials; softmax's is
`exp_nonpositive`, a quarter cheaper, as x - max <= 0.

Against the compositions (max, sub+exp, sum, then div or log+add: each a kernel streaming
the whole tensor through memory, the exponentials written out and read back), the input
is read from memory once and the output written once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math, vector
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import heuristics, vecmath
from aotk.kernels import transcendental as tr
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.matmul_microkernel import splat, vload
from aotk.kernels.scalar import compute_type, const, insert, reassociating_add

ROW_MAX_ACCUMULATORS = 4  # vmaxps has a latency of 3-4 cycles and issues 1-2 a cycle
_COMBINE = {
    "max": vector.CombiningKindAttr(vector.CombiningKindFlag.MAXNUMF),
    "min": vector.CombiningKindAttr(vector.CombiningKindFlag.MINNUMF),
}


def emit_softmax(k: Kernel, out: Buf, x: Buf) -> None:
    """out = softmax(x) along x's last axis (rank >= 1)."""
    width = x.dims[-1]
    ct = compute_type(x.elem)
    with k.loop(k.product(x.dims[:-1]), parallel=True) as row:  # all rows, one loop
        start = k.mul(row, width)
        peak = row_extremum(k, x, (start, width), "max")  # NaNs reach every output anyway

        def exp_and_sum(acc: SSAValue, i: SSAValue) -> SSAValue:
            shifted = insert(k.b, arith.SubfOp(k.load_flat(x, k.add(start, i)), peak))
            e = vecmath.exp_nonpositive(k.b, shifted)
            k.store_flat(out, k.add(start, i), e)
            return insert(k.b, reassociating_add(acc, e))

        total = _fold(k, width, const(k.b, 0.0, ct), exp_and_sum)
        scale = insert(k.b, arith.DivfOp(const(k.b, 1.0, ct), total))
        with k.loop(width) as i:
            at = k.add(start, i)
            k.store_flat(out, at, insert(k.b, arith.MulfOp(k.load_flat(out, at), scale)))


def emit_logsumexp(k: Kernel, out: Buf, x: Buf) -> None:
    """out[...] = log(sum(exp(x[..., :]))) along x's last axis (rank >= 1)."""
    width = x.dims[-1]
    ct = compute_type(x.elem)
    with k.loop(k.product(x.dims[:-1]), parallel=True) as row:
        start = k.mul(row, width)
        peak = row_extremum(k, x, (start, width), "max")  # NaNs reach every output anyway
        magnitude = insert(k.b, math.AbsFOp(peak))
        finite = insert(k.b, arith.CmpfOp(magnitude, const(k.b, float("inf"), ct), "olt"))
        shift = insert(k.b, arith.SelectOp(finite, peak, const(k.b, 0.0, ct)))

        def exp_sum(acc: SSAValue, i: SSAValue) -> SSAValue:
            shifted = insert(k.b, arith.SubfOp(k.load_flat(x, k.add(start, i)), shift))
            return insert(k.b, reassociating_add(acc, tr.emit("exp", k.b, shifted)))

        total = _fold(k, width, const(k.b, 0.0, ct), exp_sum)
        result = insert(k.b, arith.AddfOp(tr.emit("log", k.b, total), shift))
        k.store_flat(out, row, result)


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
    vt = VectorType(x.elem, [heuristics.VECTOR_BYTES // dtypes.byte_size(x.elem)])
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
    # ReductionOp's constructor types its result as the vector: build it with the element
    reduce = vector.ReductionOp.create(
        operands=[accs[0]],
        result_types=[vt.element_type],
        properties={"kind": _COMBINE[kind], "fastmath": arith.FastMathFlagsAttr("none")},
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
