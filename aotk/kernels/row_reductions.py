"""Softmax along the last axis, one row at a time: three passes over a row that stays in
L1 (its maximum; exp(x - max) stored and summed; a scale by 1 / sum), rows split across
threads. Each inner loop is a plain loop LLVM vectorizes: the maximum and the sum are
reductions it may reassociate, the exponential is `vecmath`'s polynomial.

Against the composition max, sub+exp, sum, div (four kernels, each streaming the whole
tensor through memory, the exponentials written out and read back twice), the input is
read from memory once and the output written once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from aotk.kernels import transcendental as tr
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const, insert, reassociating_add


def emit(k: Kernel, out: Buf, x: Buf) -> None:
    """out = softmax(x) along x's last axis (rank >= 1)."""
    width = x.dims[-1]
    ct = compute_type(x.elem)
    with k.loop(k.product(x.dims[:-1]), parallel=True) as row:  # all rows, one loop
        start = k.mul(row, width)

        def row_max(acc: SSAValue, i: SSAValue) -> SSAValue:
            # maximumf propagates NaN, as NumPy's max does
            return insert(k.b, arith.MaximumfOp(acc, k.load_flat(x, k.add(start, i))))

        peak = _fold(k, width, const(k.b, float("-inf"), ct), row_max)

        def exp_and_sum(acc: SSAValue, i: SSAValue) -> SSAValue:
            shifted = insert(k.b, arith.SubfOp(k.load_flat(x, k.add(start, i)), peak))
            e = tr.emit("exp", k.b, shifted)
            k.store_flat(out, k.add(start, i), e)
            return insert(k.b, reassociating_add(acc, e))

        total = _fold(k, width, const(k.b, 0.0, ct), exp_and_sum)
        scale = insert(k.b, arith.DivfOp(const(k.b, 1.0, ct), total))
        with k.loop(width) as i:
            at = k.add(start, i)
            k.store_flat(out, at, insert(k.b, arith.MulfOp(k.load_flat(out, at), scale)))


def _fold(
    k: Kernel, n: DimV, init: SSAValue, step: Callable[[SSAValue, SSAValue], SSAValue]
) -> SSAValue:
    """One loop over [0, n) carrying `init` through `step(acc, i)`."""

    def body(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        return [step(carried[0], i)]

    return k.fold_loop(n, [init], body)[0]
