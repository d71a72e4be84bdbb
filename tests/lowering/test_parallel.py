"""Multi-threaded kernels: results are bitwise the same on 1, 2 and 3 threads, and match the
interpreter, on shapes whose chunks split unevenly, with the pool really used."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import compile_kernel
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    f64,
    i64,
)
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

import aotk
from aotk import backend as K
from aotk import interp, micro_kernels
from aotk.function import Function
from aotk.kernels import library
from aotk.kernels.kernel import PARALLEL_GRAIN, Buf, Kernel

THREADS = (1, 2, 3)


@pytest.fixture(autouse=True)
def restore_threads() -> Iterator[None]:
    before = aotk.get_num_threads()
    yield
    aotk.set_num_threads(before)


def _arrays(*shapes: Sequence[int], dtype: str = "float32") -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-2.0, 2.0, shape).astype(dtype) for shape in shapes]


def _os_threads() -> int:
    return len(os.listdir("/proc/self/task"))


def _reaches_pool(ir: str) -> bool:
    """True if the code, or a micro-kernel it calls, hands loops to the thread pool."""
    called = [micro_kernels.cached(library.lookup(s).name).llvm_ir for s in library.called(ir)]
    return any("@aotk_parallel_for(" in text for text in [ir, *called])


def _same_on_all_threads(
    f: Function, arrays: list[np.ndarray], inline: bool = False, captured: Sequence[np.ndarray] = ()
) -> np.ndarray:
    """f's output, checked bitwise equal for every thread count and close to `interp`
    (given the values of the variables f captures, `captured`).

    Unless `inline`, some loop must reach the pool: the default pool is made at the first
    `aotk_parallel_for`, so a fresh one shows as new OS threads.
    """
    assert _reaches_pool(f.llvm_ir), "no parallel loop to test"
    results = []
    for n in THREADS:
        aotk.set_num_threads(1)  # retires the pool; the next one starts at first use
        aotk.set_num_threads(n)
        before = _os_threads()
        results.append(f(arrays)[0])
        assert _os_threads() == before + (0 if inline else n - 1), f"{n} threads"
    for n, got in zip(THREADS[1:], results[1:], strict=True):
        np.testing.assert_array_equal(got, results[0], err_msg=f"{n} threads vs 1", strict=True)
    want = interp.run_module(f.module, [*arrays, *captured])[0]
    assert results[0].dtype == want.dtype and results[0].shape == want.shape
    np.testing.assert_allclose(results[0], want, rtol=1e-4, atol=1e-4, err_msg="vs interp")
    return results[0]


def test_elementwise_chain() -> None:
    """The benchmark's chain on 3 * 4096 * 7 + 123 elements: chunks sized by its cost, the
    last short."""
    x = K.placeholder(shape=(None,))
    y = K.tanh(x * 0.5 + -0.25) * K.sigmoid(x) + x * x  # pyright: ignore[reportOperatorIssue]
    f = K.function([x], [y])
    _same_on_all_threads(f, _arrays((3 * 4096 * 7 + 123,)))


def test_costly_chain_on_few_elements_splits() -> None:
    """An LSTM step's cell update on 32 x 128: 4096 elements of transcendentals take
    smaller chunks than a cheap body, enough for the pool; a cheap body of as many is one
    chunk, with no parallel loop at all."""
    i, f, g, o, c = (K.placeholder(shape=(32, 128)) for _ in range(5))
    cell = K.sigmoid(f) * c + K.sigmoid(i) * K.tanh(g)
    step = K.function([i, f, g, o, c], [K.sigmoid(o) * K.tanh(cell)])
    _same_on_all_threads(step, _arrays(*[(32, 128)] * 5))
    cheap = K.function([c], [c * 2.0 + 1.0])  # pyright: ignore[reportOperatorIssue]
    assert not _reaches_pool(cheap.llvm_ir)


def test_broadcast_nest() -> None:
    x, b = K.placeholder(shape=(None, 1000)), K.placeholder(shape=(1000,))
    f = K.function([x, b], [K.relu(K.bias_add(x, b))])
    _same_on_all_threads(f, _arrays((301, 1000), (1000,)))


@pytest.mark.parametrize("rows", [197, 37], ids=["packed", "panels"])
def test_matmul(rows: int) -> None:
    x, w = K.placeholder(shape=(None, 301)), K.placeholder(shape=(301, 203))
    f = K.function([x, w], [K.dot(x, w)])
    _same_on_all_threads(f, _arrays((rows, 301), (301, 203)))


def test_integer_matmul() -> None:
    x, w = K.placeholder(shape=(None, 67), dtype="int32"), K.placeholder((67, 45), dtype="int32")
    f = K.function([x, w], [K.dot(x, w)])
    rng = np.random.default_rng(0)
    arrays = [rng.integers(-9, 9, s).astype(np.int32) for s in ((301, 67), (67, 45))]
    got = _same_on_all_threads(f, arrays)
    np.testing.assert_array_equal(got, arrays[0] @ arrays[1])


def test_batch_dot() -> None:
    a, b = K.placeholder(shape=(None, 70, 90)), K.placeholder(shape=(None, 90, 50))
    f = K.function([a, b], [K.batch_dot(a, b)])
    _same_on_all_threads(f, _arrays((9, 70, 90), (9, 90, 50)))


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv2d(padding: str) -> None:
    x, w = K.placeholder(shape=(None, 33, 29, 17)), K.placeholder(shape=(3, 3, 17, 40))
    f = K.function([x, w], [K.conv2d(x, w, strides=(1, 2), padding=padding)])
    _same_on_all_threads(f, _arrays((3, 33, 29, 17), (3, 3, 17, 40)))


def test_max_pool() -> None:
    x = K.placeholder(shape=(None, 33, 29, 17))
    f = K.function([x], [K.pool2d(x, (3, 3), strides=(2, 2), padding="same", pool_mode="max")])
    _same_on_all_threads(f, _arrays((5, 33, 29, 17)))


@pytest.mark.parametrize("axis", [2, 1], ids=["last-axis", "middle-axis"])
def test_reduction(axis: int) -> None:
    x = K.placeholder(shape=(None, 517, 33))
    f = K.function([x], [K.sum(x, axis=axis)])
    _same_on_all_threads(f, _arrays((7, 517, 33)))


@pytest.mark.parametrize(("dtype", "width"), [("float32", 64), ("float64", 32), ("float16", 128)])
def test_gather_gradient_adds_by_row_ranges(dtype: str, width: int) -> None:
    """A gather's gradient splits the table's 203 rows among the threads, each scanning
    every index (repeated, negative and out-of-range ones): each element gets its adds in
    the indices' order, so the sums are bitwise those of one thread."""
    table = K.placeholder(shape=(203, width), dtype=dtype)
    ids = K.placeholder(shape=(None, 64), dtype="int32")
    gy = K.placeholder(shape=(None, 64, width), dtype=dtype)
    f = K.function([table, ids, gy], K.gradients(K.sum(K.gather(table, ids) * gy), [table]))
    picks = (1 << 19) // (64 * width) + 3  # just over the work that splits
    rng = np.random.default_rng(1)
    idx = rng.integers(-210, 210, (picks, 64)).astype(np.int32)
    table_value, gy_value = _arrays((203, width), (picks, 64, width), dtype=dtype)
    got = _same_on_all_threads(f, [table_value, idx, gy_value])
    kept = (idx >= -203) & (idx < 203)
    want = np.zeros((203, width), np.float64)
    np.add.at(want, idx[kept] % 203, gy_value[kept].astype(np.float64))
    # about 41 adds per row, each rounded to float16's 11 bits at magnitudes up to ~30
    atol = 0.5 if dtype == "float16" else 1e-3
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)


def test_small_batch_runs_inline() -> None:
    """Batch 1 stays under every loop's threshold: no pool is even created."""
    x, w = K.placeholder(shape=(None, 301)), K.placeholder(shape=(301, 203))
    f = K.function([x, w], [K.relu(K.dot(x, w))])
    _same_on_all_threads(f, _arrays((1, 301), (301, 203)), inline=True)


@pytest.mark.parametrize(
    ("rows", "kdim", "cols", "weight"),
    [
        (1, 64, 64, "variable"),
        (3, 200, 160, "variable"),
        (64, 8, 64, "input"),
        (70, 40, 48, "input"),
    ],
    ids=["prepacked-gemv", "prepacked-rows", "packed", "packed-edges"],
)
def test_small_product_runs_inline(rows: int, kdim: int, cols: int, weight: str) -> None:
    """A product of fewer multiply-adds than a grain for each of two threads runs on the
    caller's thread, whatever path it takes: the tiles' loops had been split by their
    hinted K trips, on the packed weight's path even for 1 x 64 x 64."""
    x_value, w_value = _arrays((rows, kdim), (kdim, cols))
    x = K.placeholder(shape=(None, kdim))
    if weight == "variable":  # a weight the function does not write: packed once
        f = K.function([x], [K.dot(x, K.variable(w_value))])
        got = _same_on_all_threads(f, [x_value], inline=True, captured=[w_value])
    else:
        w = K.placeholder(shape=(kdim, cols))
        f = K.function([x, w], [K.dot(x, w)])
        got = _same_on_all_threads(f, [x_value, w_value], inline=True)
    np.testing.assert_allclose(got, x_value @ w_value, rtol=1e-5, atol=1e-5)


@functools.cache
def _gated_fill() -> Any:
    """fill(out, lb, ub, share): out[i] = i + 1 for i in range(lb, ub, 3), a loop marked
    parallel under `Kernel.share_only_when(share != 0)`, worth threads from two trips."""
    body = Block(arg_types=[MemRefType(f64, [DYNAMIC_INDEX]), i64, i64, i64])
    out, lb_arg, ub_arg, share = body.args
    k = Kernel(Builder(InsertPoint.at_end(body)))
    lb, ub = (k.b.insert(arith.IndexCastOp(v, IndexType())).result for v in (lb_arg, ub_arg))
    zero = k.b.insert(arith.ConstantOp(IntegerAttr(0, i64))).result
    flag = k.b.insert(arith.CmpiOp(share, zero, "ne")).result
    one = k.b.insert(arith.ConstantOp(FloatAttr(1.0, f64))).result
    gated = k.share_only_when(flag)
    with gated, k.loop(ub, lb=lb, step=3, parallel=True, trip_cost=PARALLEL_GRAIN) as i:
        as_int = k.b.insert(arith.IndexCastOp(i, i64)).result
        value = k.b.insert(arith.SIToFPOp(as_int, f64)).result
        k.store_flat(
            Buf(out, (DYNAMIC_INDEX,), f64), i, k.b.insert(arith.AddfOp(value, one)).result
        )
    k.b.insert(func.ReturnOp())
    return compile_kernel("fill", body)


@pytest.mark.parametrize("bounds", [(2, 29), (0, 1), (5, 5), (20, 3)], ids=str)
@pytest.mark.parametrize("share", [0, 1])
def test_gated_loop_runs_every_trip_once(bounds: tuple[int, int], share: int) -> None:
    """Shared or not, a loop under `share_only_when` runs its trips, and an empty or
    reversed range (the slot count is an unsigned division) runs none."""
    aotk.set_num_threads(2)
    lb, ub = bounds
    out = np.full(40, np.nan)
    _gated_fill()["fill"](out.ctypes.data, lb, ub, share)
    want = np.full(40, np.nan)
    want[lb:ub:3] = np.arange(lb, ub, 3) + 1.0  # empty for the reversed range
    np.testing.assert_array_equal(out, want)
