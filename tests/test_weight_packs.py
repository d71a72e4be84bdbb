"""Weights a K.function does not write are read from copies packed once (`weight_packs`),
and packed again whenever the weight changes."""

from __future__ import annotations

import pickle
import threading
from typing import Any

import numpy as np
import pytest

import aotk
from aotk import backend as K

TOL = {"float32": 2e-5, "float64": 1e-12}


def _dense(rng: np.random.Generator, k: int, n: int, dtype: str = "float32") -> tuple[Any, ...]:
    x = K.placeholder((None, k), dtype=dtype)
    w = K.variable(rng.standard_normal((k, n)).astype(dtype), dtype=dtype)
    b = K.variable(rng.standard_normal(n).astype(dtype), dtype=dtype)
    return x, w, b, K.relu(K.dot(x, w) + b)


def _expected(xs: np.ndarray, w: Any, b: Any) -> np.ndarray:
    exact = xs.astype(np.float64) @ K.get_value(w).astype(np.float64) + K.get_value(b)
    return np.maximum(exact, 0.0)


def _check(got: np.ndarray, want: np.ndarray, dtype: str, label: str = "") -> None:
    assert got.shape == want.shape and got.dtype == dtype, (label, got.shape, got.dtype)
    scale = np.abs(want).max(initial=0.0) + 1.0
    err = np.abs(got.astype(np.float64) - want).max(initial=0.0)
    assert err <= TOL[dtype] * scale * 30, f"{label}: off by {err}"


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("k, n", [(300, 100), (37, 64), (128, 512)])
def test_packed_weight_values(
    rng: np.random.Generator, dtype: str, k: int, n: int, threads: int
) -> None:
    """Batches of 0 to 130 rows against float64 NumPy: on one thread, fewer rows than a
    register tile (8 or 6) read the weight itself; anything else the packed copy (whole
    tiles, then tiles of 4, 2 and 1 rows for the rest)."""
    x, w, b, y = _dense(rng, k, n, dtype)
    f = K.function([x], [y])
    assert [(p.kdim, p.n, p.dtype) for p in f._packs] == [(k, n, dtype)]
    before = aotk.get_num_threads()
    aotk.set_num_threads(threads)
    try:
        for rows in (0, 1, 2, 3, 7, 8, 15, 64, 130):
            xs = rng.standard_normal((rows, k)).astype(dtype)
            _check(f([xs])[0], _expected(xs, w, b), dtype, f"{rows} rows")
    finally:
        aotk.set_num_threads(before)


def test_the_compiled_function_reads_the_packed_copy(rng: np.random.Generator) -> None:
    x, _, _, y = _dense(rng, 300, 100)
    f = K.function([x], [y])
    assert "@aotk_uk_matmul_float32_prepacked(" in f.llvm_ir
    assert "aotk.matmul_packed_weight" not in str(f.module)  # the traced module, as pickled


def test_set_value_repacks(rng: np.random.Generator) -> None:
    x, w, b, y = _dense(rng, 64, 96)
    f = K.function([x], [y])
    xs = rng.standard_normal((32, 64)).astype(np.float32)
    f([xs])
    K.set_value(w, rng.standard_normal((64, 96)).astype(np.float32))
    _check(f([xs])[0], _expected(xs, w, b), "float32", "after set_value")
    K.batch_set_value([(w, np.ones((64, 96), np.float32))])
    _check(f([xs])[0], _expected(xs, w, b), "float32", "after batch_set_value")


def test_another_functions_update_repacks(rng: np.random.Generator) -> None:
    """A training step writes the weight; the inference function sees each new value."""
    x, w, b, y = _dense(rng, 64, 96)
    predict = K.function([x], [y])
    step = K.function([x], [K.sum(y)], [K.update(w, w * 0.5 + 0.25)])
    xs = rng.standard_normal((32, 64)).astype(np.float32)
    predict([xs])
    for i in range(3):
        step([xs])
        _check(predict([xs])[0], _expected(xs, w, b), "float32", f"after step {i}")


def test_which_weights_are_packed(rng: np.random.Generator) -> None:
    x = K.placeholder((None, 64))
    wide = K.variable(rng.standard_normal((64, 96)).astype(np.float32))
    narrow = K.variable(rng.standard_normal((64, 10)).astype(np.float32))  # under a sliver
    fixed = rng.standard_normal((64, 64)).astype(np.float32)
    constant = K.constant(fixed)
    written = K.variable(rng.standard_normal((64, 96)).astype(np.float32))
    outs = [K.dot(x, wide), K.dot(x, narrow), K.dot(x, constant), K.dot(x, written)]
    outs.append(K.dot(x, K.transpose(K.transpose(wide))))  # not the weight as it is
    f = K.function([x], outs, [K.update(written, written * 2.0)])
    assert sorted((p.kdim, p.n) for p in f._packs) == [(64, 64), (64, 96)]
    xs = rng.standard_normal((20, 64)).astype(np.float32)
    w_wide, w_written = K.get_value(wide), K.get_value(written)
    got = f([xs])
    weights = [w_wide, K.get_value(narrow), fixed, w_written, w_wide]
    for out, weight in zip(got, weights, strict=True):
        _check(out, xs.astype(np.float64) @ weight, "float32")


def test_a_weight_read_twice_is_packed_once(rng: np.random.Generator) -> None:
    x = K.placeholder((None, 64))
    w = K.variable(rng.standard_normal((64, 64)).astype(np.float32))
    f = K.function([x], [K.dot(K.dot(x, w), w)])
    assert len(f._packs) == 1
    xs = rng.standard_normal((16, 64)).astype(np.float32)
    weight = K.get_value(w).astype(np.float64)
    _check(f([xs])[0], xs @ weight @ weight, "float32")


def test_pickled_function_packs_its_own_weights(rng: np.random.Generator) -> None:
    x, w, _, y = _dense(rng, 64, 96)
    f = K.function([x], [y])
    xs = rng.standard_normal((32, 64)).astype(np.float32)
    want = f([xs])[0].copy()
    g = pickle.loads(pickle.dumps(f))
    assert g._packs == f._packs
    np.testing.assert_array_equal(g([xs])[0], want)
    K.set_value(w, np.zeros((64, 96), np.float32))  # the original's variable, not g's
    np.testing.assert_array_equal(g([xs])[0], want)


def test_concurrent_calls(rng: np.random.Generator) -> None:
    x, w, b, y = _dense(rng, 128, 192)
    f = K.function([x], [y])
    inputs = [rng.standard_normal((40, 128)).astype(np.float32) for _ in range(4)]
    results: dict[int, np.ndarray] = {}

    def run(i: int) -> None:
        for _ in range(5):
            results[i] = f([inputs[i]])[0].copy()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, xs in enumerate(inputs):
        _check(results[i], _expected(xs, w, b), "float32", f"thread {i}")


def test_packs_can_be_turned_off(rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch) -> None:
    x, w, b, y = _dense(rng, 64, 96)
    monkeypatch.setenv("AOTK_WEIGHT_PACKS", "0")
    f = K.function([x], [y])
    assert f._packs == [] and "@aotk_uk_matmul_float32_prepacked(" not in f.llvm_ir
    xs = rng.standard_normal((32, 64)).astype(np.float32)
    _check(f([xs])[0], _expected(xs, w, b), "float32")
