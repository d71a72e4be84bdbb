"""C[M, N] = A[M, K] @ B[K, N] for integers and float16 (`matmul_kernel` takes the float32
and float64 ones): K-blocked i-k-j loops whose inner loop LLVM vectorizes along N;
threads split the rows of C. float16 is widened to float32 for each multiply-add."""

from __future__ import annotations

from xdsl.dialects import arith

from aotk import dtypes
from aotk.kernels import heuristics
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.kernel import DimV, Kernel
from aotk.kernels.scalar import compute_type, const


def emit(k: Kernel, ops: mk.Operands, m: DimV) -> None:
    """K-blocked i-k-j loops; the inner loop runs along N, contiguous in C (and in B
    unless it is transposed)."""
    c, a, b, n, kdim = ops.c, ops.a, ops.b, ops.n, ops.kdim
    is_float = dtypes.is_float(a.elem)
    zero = const(k.b, 0, compute_type(c.elem))
    with k.loop(k.mul(m, n)) as i:
        k.store_flat(c, i, zero)
    block = heuristics.matmul_k_block(kdim, n)
    with k.loop(kdim, step=block) as k0:
        k_end = k.min(k.add(k0, block), kdim)
        with k.loop(m, parallel=True) as i:
            c_row = k.mul(i, n)
            with k.loop(k_end, lb=k0, trips=block) as kk:
                av = k.load_flat(a, ops.a_at(k, i, kk))
                with k.loop(n) as j:
                    bv = k.load_flat(b, ops.b_at(k, kk, j))
                    c_off = k.add(c_row, j)
                    cv = k.load_flat(c, c_off)
                    if is_float:
                        prod = k.b.insert(arith.MulfOp(av, bv)).result
                        acc = k.b.insert(arith.AddfOp(cv, prod)).result
                    else:
                        prod = k.b.insert(arith.MuliOp(av, bv)).result
                        acc = k.b.insert(arith.AddiOp(cv, prod)).result
                    k.store_flat(c, c_off, acc)
