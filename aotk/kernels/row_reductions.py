"""Softmax and logsumexp along the last axis, one row at a time, rows split across threads.

Softmax is three passes over a row that stays in L1: its maximum; exp(x - max) stored and
summed; a scale by 1 / sum. Logsumexp is two: the maximum, then the sum of exp(x - shift),
whose log plus the shift is the result (the shift is the maximum when it is finite, else
0, so rows of -inf give -inf and a +inf or NaN propagates). Each inner loop is a plain
loop LLVM vectorizes: the maximum and the sum are reductions it may reassociate, the
exponentials are `vecmath`'s polynomials; softmax's is `exp_nonpositive`, a quarter
cheaper, as x - max <= 0.

Against the compositions (max, sub+exp, sum, then div or log+add: each a kernel streaming
the whole tensor through memory, the exponentials written out and read back), the input
is read from memory once and the output written once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, math
from xdsl.ir import SSAValue

from aotk.kernels import transcendental as tr
from aotk.kernels import vecmath
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const, insert, reassociating_add


def emit_softmax(k: Kernel, out: Buf, x: Buf) -> None:
    """out = softmax(x) along x's last axis (rank >= 1)."""
    width = x.dims[-1]
    ct = compute_type(x.elem)
    with k.loop(k.product(x.dims[:-1]), parallel=True) as row:  # all rows, one loop
        start = k.mul(row, width)
        peak = _row_max(k, x, start, width)

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
        peak = _row_max(k, x, start, width)
        magnitude = insert(k.b, math.AbsFOp(peak))
        finite = insert(k.b, arith.CmpfOp(magnitude, const(k.b, float("inf"), ct), "olt"))
        shift = insert(k.b, arith.SelectOp(finite, peak, const(k.b, 0.0, ct)))

        def exp_sum(acc: SSAValue, i: SSAValue) -> SSAValue:
            shifted = insert(k.b, arith.SubfOp(k.load_flat(x, k.add(start, i)), shift))
            return insert(k.b, reassociating_add(acc, tr.emit("exp", k.b, shifted)))

        total = _fold(k, width, const(k.b, 0.0, ct), exp_sum)
        result = insert(k.b, arith.AddfOp(tr.emit("log", k.b, total), shift))
        k.store_flat(out, row, result)


def _row_max(k: Kernel, x: Buf, start: DimV, width: DimV) -> SSAValue:
    """The maximum of x[start:start + width] (-inf for an empty row)."""

    def step(acc: SSAValue, i: SSAValue) -> SSAValue:
        # maximumf propagates NaN, as NumPy's max does
        return insert(k.b, arith.MaximumfOp(acc, k.load_flat(x, k.add(start, i))))

    return _fold(k, width, const(k.b, float("-inf"), compute_type(x.elem)), step)


def _fold(
    k: Kernel, n: DimV, init: SSAValue, step: Callable[[SSAValue, SSAValue], SSAValue]
) -> SSAValue:
    """One loop over [0, n) carrying `init` through `step(acc, i)`."""

    def body(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        return [step(carried[0], i)]

    return k.fold_loop(n, [init], body)[0]
