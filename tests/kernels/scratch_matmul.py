"""Float matmul loops compiled from the loop emitter (the micro-kernels' body) directly,
on a hand-built kernel taking a scratch buffer, with static dims too, for tests that
look at what the kernel packed into scratch.

B is packed from packed_min_rows (64) rows, or from four row tiles when its rows alias
(`heuristics.packs_b`); fewer rows read it in place. Compiled modules live for the
session (an MCJIT engine owns the cached target machine, so freeing one would free it).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
from conftest import compile_kernel
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, VectorType, f32, f64, i64
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

import aotk
from aotk import runtime
from aotk.kernels import heuristics, matmul_kernel
from aotk.kernels.kernel import Buf, Kernel
from aotk.kernels.matmul_microkernel import Operands

Static = tuple[int | None, int | None, int | None]
ELEMS = {"float32": f32, "float64": f64}


@functools.cache
def packed_kernel(dtype: str, static: Static, b_t: bool = False, a_t: bool = False) -> Any:
    """`mm(a, b, c, scratch, m, n, k)`: C = A @ B, A stored [K, M] with `a_t`, B stored
    [N, K] with `b_t`; `static` dims are fixed, None ones taken from the call."""
    elem = ELEMS[dtype]
    mem = MemRefType(elem, [DYNAMIC_INDEX])
    body = Block(arg_types=[mem] * 4 + [i64] * 3)
    a, b, c, s = body.args[:4]
    k = Kernel(Builder(InsertPoint.at_end(body)))
    dims = [k.b.insert(arith.IndexCastOp(v, IndexType())).result for v in body.args[4:]]
    m, n, kd = (d if d is not None else v for d, v in zip(static, dims, strict=True))
    count = matmul_kernel.scratch_elems(k, elem, (m, n, kd), a_t)
    vt = VectorType(elem, [heuristics.matmul_tiles(elem.bitwidth // 8, m, n, kd).lanes])
    a_buf = Buf(a, (kd, m) if a_t else (m, kd), elem)
    b_buf = Buf(b, (n, kd) if b_t else (kd, n), elem)
    ops = Operands(Buf(c, (m, n), elem), a_buf, b_buf, m, n, kd, vt, a_t, b_t)
    matmul_kernel.emit_loops(k, ops, scratch=Buf(s, (count,), elem))
    k.b.insert(func.ReturnOp())
    return compile_kernel("mm", body)


def scratch_count(dtype: str, m: int, n: int, kd: int, a_t: bool = False) -> int:
    """Scratch elements the kernel needs for this call (a K block of a panel of B)."""
    k = Kernel(Builder(InsertPoint.at_end(Block())))
    count = matmul_kernel.scratch_elems(k, ELEMS[dtype], (m, n, kd), a_t)
    assert isinstance(count, int)
    return count


def run(
    operands: tuple[np.ndarray, np.ndarray], threads: int, a_t: bool = False, b_t: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """(C, scratch after the call) for float32 C = A @ B by the dynamic-dims kernel on a
    pool of `threads`, A passed as [K, M] with `a_t`, B as [N, K] with `b_t`. C and the
    scratch start as NaN, so what the kernel never wrote stays NaN (a freed C of an
    earlier call can hold the right product)."""
    a, b = operands
    (m, kd), n = a.shape, b.shape[1]
    compiled = packed_kernel("float32", (None, None, None), b_t, a_t)
    scratch = runtime.aligned_empty((scratch_count("float32", m, n, kd, a_t),), np.float32)
    scratch[:] = np.nan
    c = runtime.aligned_empty((m, n), np.float32)
    c[:] = np.nan
    stored_a = runtime.aligned_copy(np.ascontiguousarray(a.T) if a_t else a)
    stored_b = runtime.aligned_copy(np.ascontiguousarray(b.T) if b_t else b)
    before = aotk.get_num_threads()
    aotk.set_num_threads(threads)
    try:
        args = [stored_a.ctypes.data, stored_b.ctypes.data, c.ctypes.data, scratch.ctypes.data]
        compiled["mm"](*args, m, n, kd)
    finally:
        aotk.set_num_threads(before)
    return c, scratch
