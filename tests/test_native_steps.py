"""The native call path of functions that write their variables (training steps) and
random-number state: their calls run one at a time on either path, and a native call
moves the versions of what it wrote as the Python path does."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest
from native_paths import needs_native, python_calls

from aotk import backend as K
from aotk import runtime

pytestmark = needs_native


def _sgd_step(w0: np.ndarray, lr: float) -> tuple[Any, Any, Any]:
    """(w, b, step): one SGD step on the mean squared error of x @ w + b against y."""
    x, y = K.placeholder((None, w0.shape[0])), K.placeholder((None, w0.shape[1]))
    w, b = K.variable(w0), K.variable(np.zeros(w0.shape[1], np.float32))
    loss = K.mean(K.square(K.dot(x, w) + b - y))
    gw, gb = K.gradients(loss, [w, b])
    assert gw is not None and gb is not None
    step = K.function([x, y], [loss], [K.update_sub(w, lr * gw), K.update_sub(b, lr * gb)])
    return w, b, step


def _numpy_step(
    params: tuple[np.ndarray, np.ndarray], xy: tuple[np.ndarray, np.ndarray], lr: float
) -> float:
    """The same step in float64 on `params`, in place; its loss."""
    (w, b), (x, y) = params, xy
    error = x @ w + b - y
    w -= lr * 2.0 * x.T @ error / error.size
    b -= lr * 2.0 * error.sum(axis=0) / error.size
    return float(np.mean(np.square(error)))


def test_training_steps_run_natively_and_follow_numpy() -> None:
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((8, 3)).astype(np.float32)
    w, b, step = _sgd_step(w0, lr=0.05)
    ours = (w0.astype(np.float64), np.zeros(3))
    python = None
    for i in range(40):
        x = rng.standard_normal((16, 8)).astype(np.float32)
        y = rng.standard_normal((16, 3)).astype(np.float32)
        (loss,) = step([x, y])
        want = _numpy_step(ours, (x, y), lr=0.05)
        assert loss == pytest.approx(want, rel=1e-5)
        if i == 1:  # the first call is checked, the second publishes the plan
            python = python_calls(step)
    assert python == [0]
    np.testing.assert_allclose(K.get_value(w), ours[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(K.get_value(b), ours[1], rtol=1e-5, atol=1e-6)


def test_a_native_step_moves_the_versions_that_packed_copies_follow() -> None:
    """A batch-1 dense layer reads a packed copy of w (`weight_packs`): after each
    native step that writes w, it must read the new w."""
    rng = np.random.default_rng(1)
    w, b, step = _sgd_step(rng.standard_normal((256, 64)).astype(np.float32), lr=0.01)
    x1 = K.placeholder((1, 256))
    predict = K.function([x1], [K.dot(x1, w)])
    assert predict._packs, "the weight is packed"
    a = rng.standard_normal((1, 256)).astype(np.float32)
    xy = [rng.standard_normal((4, n)).astype(np.float32) for n in (256, 64)]
    step(xy)
    step(xy)  # publishes its plan
    python = python_calls(step)
    for _ in range(5):
        version, writes = w.version, runtime.writes()
        step(xy)
        assert (w.version, b.version, runtime.writes()) == (version + 1, version + 1, writes + 2)
        np.testing.assert_allclose(predict([a])[0], a @ w.storage, rtol=1e-5, atol=1e-5)
    assert python == [0]


def test_calls_from_two_threads_run_one_at_a_time() -> None:
    """Each call adds 1 to every element: two overlapping calls would lose additions."""
    w = K.variable(np.zeros((2048, 1024), np.float32))
    x = K.placeholder(())
    add = K.function([x], [x + 0.0], [K.update_add(w, K.ones_like(w))])
    calls, failures = 150, []

    def work() -> None:
        try:
            for _ in range(calls):
                add([np.ones((), np.float32)])
        except Exception as error:  # reported by the main thread
            failures.append(repr(error))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    got = K.get_value(w)
    assert got.min() == got.max() == 2 * calls


def test_random_draws_are_the_same_natively_and_on_the_python_path() -> None:
    """Two functions with the same seed: one called natively, the other always on the
    checked path (a tuple of inputs); both advance their state alike."""
    x = K.placeholder((None, 5))
    functions = [K.function([x], [x + K.random_uniform((3, 5), seed=7)]) for _ in range(2)]
    native, checked = functions
    zeros = np.zeros((3, 5), np.float32)
    python = python_calls(native)
    draws = [(native([zeros])[0], checked((zeros,))[0]) for _ in range(12)]
    assert python == [2]  # checked, then planned; the other ten native
    for got, want in draws:
        np.testing.assert_array_equal(got, want)
    assert len({d.tobytes() for d, _ in draws}) == 12, "every call draws anew"


def test_a_python_path_step_counts_its_own_writes_as_seen() -> None:
    """float16 data, which only the Python path converts, declines the native path (its
    plan takes float32) every call: that call's own writes must not make it publish its
    plan anew each time (publishing costs more than the call)."""
    rng = np.random.default_rng(2)
    w, _, step = _sgd_step(rng.standard_normal((8, 3)).astype(np.float32), lr=0.01)
    xy = [rng.standard_normal((16, n)).astype(np.float16) for n in (8, 3)]
    step(xy)
    step(xy)
    native = step._caller._native
    published, publish = [0], native.publish

    def counted(*args: Any) -> None:
        published[0] += 1
        publish(*args)

    native.publish = counted
    before = K.get_value(w)
    for _ in range(5):
        step(xy)
    assert published == [0]
    assert not np.array_equal(K.get_value(w), before), "the steps ran"
    step([a.astype(np.float32) for a in xy])  # the plan published takes this one
    assert published == [0]
