"""Compiled `aotk.matmul` against NumPy over the shapes the tiling treats differently.

Panels of 4, 2 and 1 rows, k-unroll remainders, masked tail columns, several K and N
blocks, dynamic M/K/N, M = 1 (matrix-vector). float32/float64 errors are measured
against |A| @ |B| (the scale a dot product's rounding error grows with); integers wrap
exactly as NumPy's do.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import scratch_matmul
from conftest import (
    MATMUL_RTOL,
    assert_product_close,
    before_unreadable_page,
    compile_kernel,
    emit,
    placeholder,
)
from scratch_matmul import packed_kernel, scratch_count
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    MemRefType,
    f32,
    f64,
    i64,
)
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from aotk import micro_kernels, runtime
from aotk.codegen import native_runtime
from aotk.dialect.linalg import MatMulOp
from aotk.function import Function
from aotk.kernels import heuristics, library
from aotk.kernels import matmul_packed as packed
from aotk.kernels import matmul_prepacked as prepacked
from aotk.kernels.kernel import Buf, Kernel

SHAPES = [
    (1, 1, 1),
    (2, 3, 5),
    (7, 13, 29),
    (4, 8, 8),
    (5, 17, 8),
    (3, 9, 24),
    (6, 65, 33),
    (9, 130, 17),
    (1, 784, 1024),
    (13, 7, 1031),
    (11, 300, 40),
]


def _inputs(rng: np.random.Generator, m: Sequence[int], kn: tuple[int, int], dtype: str):
    k, n = kn
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal((*m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -1000), min(info.max, 1000)
    return (
        rng.integers(lo, hi, (*m, k), endpoint=True).astype(dtype),
        rng.integers(lo, hi, (k, n), endpoint=True).astype(dtype),
    )


def _compile(a_shape: Sequence[int | None], b_shape: Sequence[int | None], dtype: str) -> Function:
    x = placeholder(a_shape, dtype, "a")
    w = placeholder(b_shape, dtype, "b")
    return Function([x, w], [emit(MatMulOp, x, w)])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_static_shapes(rng: np.random.Generator, shape: tuple[int, int, int], dtype: str) -> None:
    m, k, n = shape
    a, b = _inputs(rng, (m,), (k, n), dtype)
    f = _compile((m, k), (k, n), dtype)
    assert_product_close(f([a, b])[0], a, b, f"{dtype} {shape}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_dynamic_m_one_kernel_serves_every_batch(rng: np.random.Generator, dtype: str) -> None:
    k, n = 37, 45
    f = _compile((None, k), (k, n), dtype)
    for m in (1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 64):
        a, b = _inputs(rng, (m,), (k, n), dtype)
        assert_product_close(f([a, b])[0], a, b, f"{dtype} M={m}")


def test_all_dims_dynamic(rng: np.random.Generator) -> None:
    f = _compile((None, None), (None, None), "float32")
    for m, k, n in [
        (1, 1, 1),
        (3, 7, 9),
        (5, 70, 8),
        (6, 200, 1030),
        (2, 0, 3),
        (0, 4, 5),
        (1, 4, 0),
    ]:
        a, b = _inputs(rng, (m,), (k, n), "float32")
        assert_product_close(f([a, b])[0], a, b, f"dynamic {m}x{k}x{n}")


def test_batched_lhs_and_vector_lhs(rng: np.random.Generator) -> None:
    a, b = _inputs(rng, (2, 3), (19, 11), "float32")
    assert_product_close(_compile((2, 3, 19), (19, 11), "float32")([a, b])[0], a, b, "rank 3")
    v, b = _inputs(rng, (), (40, 17), "float32")
    assert_product_close(_compile((40,), (40, 17), "float32")([v, b])[0], v, b, "vector")


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "int64", "uint8"])
def test_integers_exact(rng: np.random.Generator, dtype: str) -> None:
    a, b = _inputs(rng, (7,), (13, 29), dtype)
    assert_product_close(_compile((7, 13), (13, 29), dtype)([a, b])[0], a, b, dtype)


def test_float16(rng: np.random.Generator) -> None:
    a = rng.uniform(-1, 1, (5, 6)).astype("float16")
    b = rng.uniform(-1, 1, (6, 9)).astype("float16")
    assert_product_close(_compile((5, 6), (6, 9), "float16")([a, b])[0], a, b, "float16")


@pytest.mark.parametrize("dtype, scalar", [("float32", "float"), ("float64", "double")])
def test_vectorized_fma(dtype: str, scalar: str) -> None:
    lanes = heuristics.vector_shape()[0] // np.dtype(dtype).itemsize
    ir = micro_kernels.cached(f"matmul_{dtype}_packed").llvm_ir  # the micro-kernel calls compute
    vec = f"<{lanes} x {scalar}>"
    # multiply-adds that the back end fuses where the CPU has FMA
    fmas = re.findall(rf"call {re.escape(vec)} @llvm\.fmuladd\.v\d+f\d+", ir)
    assert len(fmas) >= 8, f"expected vector multiply-adds on {vec} in the matmul kernel"


def test_unaligned_vector_access_is_declared() -> None:
    """Rows of B and C start anywhere (N = 37, say), so vector loads must say align 4."""
    ir = micro_kernels.cached("matmul_float32").llvm_ir
    loads = re.findall(r"load <\d+ x float>, ptr [^,]+, align (\d+)", ir)
    assert loads and all(int(x) <= 4 for x in loads), loads


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(256, 784, 1024), (256, 1024, 1024), (255, 1024, 10)])
def test_mlp_sizes(rng: np.random.Generator, shape: tuple[int, int, int]) -> None:
    m, k, n = shape
    a, b = _inputs(rng, (m,), (k, n), "float32")
    f = _compile((None, k), (k, n), "float32")
    assert_product_close(f([a, b])[0], a, b, f"{shape}")


def _run_packed(a: np.ndarray, b: np.ndarray, static: tuple[int | None, ...]) -> np.ndarray:
    """C = A @ B by the kernel with scratch; checks that B was packed exactly when it should."""
    (m, kd), n = a.shape, b.shape[1]
    compiled = packed_kernel(a.dtype.name, static)
    count = scratch_count(a.dtype.name, m, n, kd)
    c = runtime.aligned_empty((m, n), a.dtype)
    scratch = runtime.aligned_empty((count,), a.dtype)
    scratch[:] = np.nan
    a, b = runtime.aligned_copy(a), runtime.aligned_copy(b)
    compiled["mm"](a.ctypes.data, b.ctypes.data, c.ctypes.data, scratch.ctypes.data, m, n, kd)
    tiles = heuristics.matmul_tiles(a.dtype.itemsize, m, n, kd)
    width = tiles.nr * tiles.lanes
    threads = native_runtime.threads()
    packs = heuristics.packs_b(tiles, m, (n, kd, a.dtype.itemsize), False, threads)
    packs = packs and n >= width and kd > 0
    panel = scratch[: tiles.packed_kc * min(n // width * width, packed.panel_cols(tiles))]
    assert np.isnan(panel).all() != packs, f"B packed: {not packs}, expected {packs}"
    return c


PACKED_SHAPES = [
    (1, 1, 1),
    (7, 13, 29),
    # below packing's row threshold: register tiles read B in place, the edge columns too
    (32, 128, 500),
    # as many rows, B's rows 4 KiB long and K = 1100 of them overflow their L2 sets, and
    # each of two threads' half of B the L2: packed
    (32, 1100, 1024),
    (63, 40, 70),
    (64, 1, 48),
    (64, 300, 96),
    (70, 257, 530),
    (101, 5, 49),
    # narrower than a sliver: threads split row tiles over all of K, B in place; a
    # classifier's 10 columns (one masked vector), two vectors and a masked one, and
    # rows past the last tile
    (64, 300, 10),
    (72, 37, 40),
    (131, 17, 20),
]


@pytest.mark.parametrize("shape", PACKED_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_packed_path(rng: np.random.Generator, shape: tuple[int, int, int], dtype: str) -> None:
    m, k, n = shape
    a, b = _inputs(rng, (m,), (k, n), dtype)
    assert_product_close(_run_packed(a, b, (m, n, k)), a, b, f"packed static {shape}")
    assert_product_close(_run_packed(a, b, (None, None, None)), a, b, f"packed dynamic {shape}")


# (M, K, N): M up to 2N takes the whole-K path on two threads; 300 x 40 x 100 does not
WHOLE_K_SHAPES = [(64, 300, 96), (70, 257, 530), (128, 200, 1000), (200, 33, 100), (300, 40, 100)]


@pytest.mark.parametrize("b_t", [False, True], ids=["b", "b_t"])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", WHOLE_K_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_whole_k_path(
    rng: np.random.Generator, shape: tuple[int, int, int], threads: int, b_t: bool
) -> None:
    """On two threads, for M <= 2N, all of B (stored [K, N] or [N, K]) is packed into
    scratch (whole slivers of all K rows, the last zero-padded) and each tile runs over
    all of K; on one thread, or for a taller A, B is packed K block by K block."""
    m, kd, n = shape
    a, b = _inputs(rng, (m,), (kd, n), "float32")
    c, scratch = scratch_matmul.run((a, b), threads, b_t=b_t)
    assert_product_close(c, a, b, f"{shape} on {threads} threads")
    tiles = heuristics.matmul_tiles(4, m, n, kd)
    width = tiles.nr * tiles.lanes
    sliver_1 = scratch[kd * width : (kd + 1) * width]  # row 0 of the second sliver, packed whole
    if threads == 2 and m <= 2 * n:
        slivers = scratch[: -(-n // width) * width * kd].reshape(-1, kd, width)
        np.testing.assert_array_equal(slivers[0], b[:, :width])
        last = n % width or width
        np.testing.assert_array_equal(slivers[-1, :, :last], b[:, n - last :])
        assert not slivers[-1, :, last:].any(), "the last sliver's padding must be zeros"
    else:  # a K block of a panel (slivers packed_kc rows apart), or B read in place
        assert not np.array_equal(sliver_1, b[0, width : 2 * width])


@pytest.mark.slow
def test_packed_path_mlp_size(rng: np.random.Generator) -> None:
    a, b = _inputs(rng, (256,), (784, 1024), "float32")
    assert_product_close(_run_packed(a, b, (None, 1024, 784)), a, b, "packed 256x784x1024")


def test_matrix_vector_products_give_the_same_values_on_any_pool_width(
    rng: np.random.Generator,
) -> None:
    """One row or two: B's columns are split into one stripe per thread of the pool."""
    f = _compile((None, 300), (300, 1031), "float32")
    a, b = _inputs(rng, (2,), (300, 1031), "float32")
    saved = native_runtime.threads()
    try:
        results = []
        for width in (1, 2, 3):
            native_runtime.set_threads(width)
            results.append([f([a[:1], b])[0], f([a, b])[0]])
    finally:
        native_runtime.set_threads(saved)
    for one, two in results:
        assert_product_close(one, a[:1], b, "one row")
        assert_product_close(two, a, b, "two rows")
        np.testing.assert_array_equal(one, results[0][0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_narrow_column_edges_touch_only_their_columns(rng: np.random.Generator, dtype: str) -> None:
    """The last N mod lanes columns are one masked vector: exact values, no write outside
    C (NaN sentinels around it stay NaN) and no read past B's end (an unreadable page
    follows it), for every edge width, on the panel, packed, in-place (16 rows) and
    matrix-vector paths."""
    lanes = heuristics.matmul_tiles(np.dtype(dtype).itemsize, 1, 1, 1).lanes
    compiled = packed_kernel(dtype, (None, None, None))
    for n in [*range(1, lanes + 2), 2 * lanes - 1, 3 * lanes + 5]:
        for m in (1, 2, 5, 16, 70):
            a, b = _inputs(rng, (m,), (23, n), dtype)
            b = before_unreadable_page(b)
            pad = 2 * lanes
            around = np.full(m * n + 2 * pad, np.nan, dtype)
            scratch = runtime.aligned_empty((scratch_count(dtype, m, n, 23),), a.dtype)
            c_at = around.ctypes.data + pad * around.itemsize
            compiled["mm"](a.ctypes.data, b.ctypes.data, c_at, scratch.ctypes.data, m, n, 23)
            assert np.isnan(around[:pad]).all() and np.isnan(around[-pad:]).all(), (m, n)
            assert_product_close(around[pad:-pad].reshape(m, n), a, b, f"{dtype} {m}x23x{n}")


@functools.cache
def _prepacked_kernel(dtype: str, b_t: bool, addend: bool) -> Any:
    """mm(a, b, c, packed, x, m, n, k): B packed by `pack_rhs`, then C = A @ B from it
    (C = X + A @ B with `addend`)."""
    elem = {"float32": f32, "float64": f64}[dtype]
    mem = MemRefType(elem, [DYNAMIC_INDEX])
    body = Block(arg_types=[mem] * 5 + [i64] * 3)
    a, b, c, p, x = body.args[:5]
    k = Kernel(Builder(InsertPoint.at_end(body)))
    m, n, kd = (k.b.insert(arith.IndexCastOp(v, IndexType())).result for v in body.args[5:])
    count = prepacked.packed_elems(k, elem, n, kd)
    packed_b = Buf(p, (count,), elem)
    library.call(k, prepacked.pack_name(elem, b_t), [packed_b, Buf(b, (kd, n), elem), n, kd])
    bufs = [Buf(c, (m, n), elem), Buf(a, (m, kd), elem), packed_b]
    bufs += [Buf(x, (m, n), elem)] if addend else []
    library.call(k, prepacked.matmul_name(elem, addend), [*bufs, m, n, kd])
    k.b.insert(func.ReturnOp())
    return compile_kernel("mm", body)


@pytest.mark.parametrize("addend", [False, True], ids=["", "add"])
@pytest.mark.parametrize("b_t", [False, True], ids=["b", "b_t"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_prepacked_matmul(rng: np.random.Generator, dtype: str, b_t: bool, addend: bool) -> None:
    """B packed once into zero-padded slivers, then C = A @ B (+ X) from them: whole
    register tiles, the last sliver and the last rows (column tiles), one row, empty dims.
    B's last byte is followed by an unreadable page; C is surrounded by NaN sentinels."""
    tiles = heuristics.matmul_tiles(np.dtype(dtype).itemsize, 1, 1, 1)
    width = tiles.nr * tiles.lanes
    shapes = [(1, 1, 1), (2, 5, 3), (tiles.mr, 16, width), (32, 128, 512)]
    shapes += [(2 * tiles.mr + 3, 7, 2 * width + 5), (9, 300, width - 1), (0, 3, 4), (3, 0, 4)]
    for m, kd, n in shapes:
        a, b = _inputs(rng, (m,), (kd, n), dtype)
        x = rng.standard_normal((m, n)).astype(dtype)  # read only by the addend variant
        stored = before_unreadable_page(np.ascontiguousarray(b.T) if b_t else b)
        count = -(-n // width) * width * kd
        scratch = runtime.aligned_empty((max(count, 1),), a.dtype)
        scratch[:] = np.nan
        pad = 2 * tiles.lanes
        around = np.full(m * n + 2 * pad, np.nan, dtype)
        c_at = around.ctypes.data + pad * around.itemsize
        call = _prepacked_kernel(dtype, b_t, addend)["mm"]
        args = [a.ctypes.data, stored.ctypes.data, c_at, scratch.ctypes.data, x.ctypes.data]
        call(*args, m, n, kd)
        assert np.isnan(around[:pad]).all() and np.isnan(around[-pad:]).all(), (m, kd, n)
        assert not np.isnan(scratch[:count]).any(), "every element of the packed B is written"
        got, label = around[pad:-pad].reshape(m, n), f"{dtype} {m}x{kd}x{n} b_t={b_t}"
        if addend:
            _check_sum(got, a, b, x, label)
        else:
            assert_product_close(got, a, b, label)


def _check_sum(got: np.ndarray, a: np.ndarray, b: np.ndarray, x: np.ndarray, label: str) -> None:
    """`got` against X + A @ B, within the rounding of the sum of |X| and |A| @ |B|
    (inputs finite)."""
    a64, b64, x64 = a.astype(np.float64), b.astype(np.float64), x.astype(np.float64)
    scale = np.abs(a64) @ np.abs(b64) + np.abs(x64)
    err = np.abs(got.astype(np.float64) - (x64 + a64 @ b64))
    # not `err > bound`: a NaN (an element left unwritten) compares false
    bad = np.argwhere(~(err <= MATMUL_RTOL[a.dtype.name] * (scale + 1e-30)))
    assert bad.size == 0, f"{label}: {len(bad)} elements off, first at {bad[0]}"


def test_prepacked_matmul_gives_the_same_values_on_any_pool_width(
    rng: np.random.Generator,
) -> None:
    """Threads share out its (sliver, row tile) pairs: the split moves with the pool's
    width, the values do not."""
    m, kd, n = 37, 50, 70
    a, b = _inputs(rng, (m,), (kd, n), "float32")
    x = rng.standard_normal((m, n)).astype(np.float32)
    packed_b = runtime.aligned_empty((kd * (n + 64),), np.float32)
    call = _prepacked_kernel("float32", False, True)["mm"]
    saved, results = native_runtime.threads(), []
    try:
        for width in (1, 2, 3):
            native_runtime.set_threads(width)
            c = runtime.aligned_empty((m, n), np.float32)
            call(
                a.ctypes.data,
                b.ctypes.data,
                c.ctypes.data,
                packed_b.ctypes.data,
                x.ctypes.data,
                m,
                n,
                kd,
            )
            results.append(c)
    finally:
        native_runtime.set_threads(saved)
    _check_sum(results[0], a, b, x, "one thread")
    for c in results[1:]:
        np.testing.assert_array_equal(c, results[0])
