"""The native call path (`aotk.native_call`): calls it takes give what the Python path
gives, and every call it must not take (another dtype, shape, layout, thread, a written
variable, a held output) goes to the Python path and is right there."""

from __future__ import annotations

import collections
import sys
import threading
from typing import Any

import numpy as np
import pytest
from native_paths import needs_native, python_calls

from aotk import backend as K
from aotk import native_call, native_inputs, runtime

pytestmark = needs_native


def _affine() -> tuple[Any, Any, Any]:
    """`x @ w + 1` and `x * 2` for a (None, 4) placeholder and a (4, 3) variable."""
    x = K.placeholder((None, 4))
    w = K.variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    f = K.function([x], [K.dot(x, w) + 1.0, x * 2.0])
    return x, w, f


def _expected(a: np.ndarray, w: np.ndarray) -> list[np.ndarray]:
    return [a @ w + 1, a * 2]


def _check(f: Any, a: np.ndarray, w: np.ndarray) -> None:
    for got, want in zip(f([a]), _expected(np.asarray(a, np.float32), w), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)


def test_planned_calls_run_natively_and_give_the_python_paths_values() -> None:
    _, w, f = _affine()
    rng = np.random.default_rng(0)
    f([np.zeros((2, 4), np.float32)])  # checked
    f([np.zeros((2, 4), np.float32)])  # planned: publishes
    python = python_calls(f)
    for _ in range(50):
        a = rng.standard_normal((2, 4)).astype(np.float32)
        _check(f, a, w.storage)
    assert python[0] == 0


def test_calls_it_cannot_take_are_right_on_the_python_path() -> None:
    _, w, f = _affine()
    base = np.arange(16, dtype=np.float32).reshape(4, 4)
    raw = bytearray(np.arange(17, dtype=np.float32).tobytes())
    unaligned = np.frombuffer(memoryview(raw)[2:-2], np.float32).reshape(4, 4)
    odd = [base.T, base.astype(np.float64), base[:3], base.tolist(), unaligned]
    for value in odd:
        f([base])
        f([base])  # the plan of (4, 4) is published again
        python = python_calls(f)
        _check(f, value, w.storage)
        assert python[0] == 1, value
        f._caller._run_planned = f._caller.__class__._run_planned.__get__(f._caller)
    read_only = base.copy()
    read_only.flags.writeable = False
    python = python_calls(f)
    _check(f, read_only, w.storage)  # a kernel never writes its inputs
    assert python[0] == 0
    Pair = collections.namedtuple("Pair", "x")
    for got, want in zip(f(Pair(base)), _expected(base, w.storage), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6)  # a tuple's subclass: declined
    assert python[0] == 1


def test_inputs_in_a_tuple_run_natively() -> None:
    x, y = K.placeholder((None, 3)), K.placeholder((3,))
    f = K.function((x, y), [x * y - 1.0])
    rng = np.random.default_rng(1)
    f((np.zeros((2, 3), np.float32), np.zeros(3, np.float32)))  # checked
    f((np.zeros((2, 3), np.float32), np.zeros(3, np.float32)))  # planned: publishes
    python = python_calls(f)
    for _ in range(20):
        a = rng.standard_normal((2, 3)).astype(np.float32)
        b = rng.standard_normal(3).astype(np.float32)
        np.testing.assert_allclose(f((a, b))[0], a * b - 1, rtol=1e-6)
        np.testing.assert_allclose(f([a, b])[0], a * b - 1, rtol=1e-6)
    assert python[0] == 0
    with pytest.raises(ValueError, match="expected 2 inputs"):
        f((a,))


def test_bad_inputs_after_native_calls_get_the_same_errors() -> None:
    x, y = K.placeholder((None, 3)), K.placeholder((None, 3))
    f = K.function([x, y], [x + y])
    for _ in range(3):
        f([np.ones((2, 3), np.float32)] * 2)
    with pytest.raises(ValueError, match="do not fit"):
        f([np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)])
    with pytest.raises(ValueError, match="expects shape"):
        f([np.ones((2, 4), np.float32)] * 2)
    with pytest.raises(ValueError, match="expected 2 inputs"):
        f([np.ones((2, 3), np.float32)])


def test_a_written_variable_is_read_again() -> None:
    _, w, f = _affine()
    a = np.ones((2, 4), np.float32)
    for value in (1.0, 2.0, 3.0):
        K.set_value(w, np.full((4, 3), value, np.float32))
        for _ in range(3):
            _check(f, a, w.storage)


def test_a_variable_given_a_new_array_is_read_from_it() -> None:
    _, w, f = _affine()
    a = np.ones((2, 4), np.float32)
    for _ in range(3):
        _check(f, a, w.storage)
    old = w.storage
    w.storage = runtime.aligned_copy(np.full((4, 3), 5.0, np.float32))
    old[...] = 7.0  # what the call must no longer read
    for _ in range(3):
        _check(f, a, w.storage)


def test_a_running_call_holds_what_its_plan_points_into() -> None:
    """Another thread may publish another plan, or give a variable a new array, while a
    kernel runs with the GIL released: the call holds the plan's workspace and arrays."""
    x = K.placeholder((None, 1024))
    w = K.variable(np.ones((1024, 1024), np.float32))
    f = K.function([x], [K.dot(x, w)])
    a = np.ones((512, 1024), np.float32)
    native, done, seen, ident = f._caller._native, threading.Event(), [], []

    def work() -> None:
        ident.append(threading.get_ident())
        for _ in range(40):  # the first two publish, the rest run natively
            f([a])
            if seen:
                break
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set() and not seen:
        plan = native.plan_of(ident[0]) if ident else None
        holds = plan.holds if plan is not None else None
        if holds and sys.getrefcount(holds) > 3:  # the entry, `holds`, the argument
            seen.append(holds)
    t.join()
    assert seen, "no call was seen holding its plan"
    assert any(array is w.storage for array in seen[0][2])  # the variable's array


def test_a_held_output_is_never_overwritten_and_two_arrays_serve_a_loop() -> None:
    x = K.placeholder((None,))
    f = K.function([x], [x * 2.0])
    first = f([np.zeros(4, np.float32)])[0]
    assert list(f._caller._native._slots) == [id(first), None]  # no second array yet (NULL)
    del first
    seen, y = set(), None
    for i in range(10):
        previous = y
        y = f([np.full(4, float(i), np.float32)])[0]
        seen.add(id(y))
        if previous is not None:  # held while `f` ran
            np.testing.assert_array_equal(previous, np.full(4, 2.0 * (i - 1)))
    assert len(seen) == 2  # `y = f(x)` alternates between the pool's two arrays
    kept = [f([np.full(4, float(i), np.float32)])[0] for i in range(5)]
    view = f([np.full(4, 9.0, np.float32)])[0][1:]
    f([np.zeros(4, np.float32)])
    for i, out in enumerate(kept):
        np.testing.assert_array_equal(out, np.full(4, 2.0 * i))
    np.testing.assert_array_equal(view, [18.0] * 3)


def test_a_loop_collecting_every_output_runs_natively() -> None:
    """Both arrays of the output held: the native path asks the pool for a fresh one."""
    x = K.placeholder((None,))
    f = K.function([x], [x * 2.0])
    f([np.zeros(4, np.float32)])
    f([np.zeros(4, np.float32)])  # planned: publishes
    python = python_calls(f)
    outs = [f([np.full(4, float(i), np.float32)])[0] for i in range(20)]
    assert python[0] == 0
    assert len({id(out) for out in outs}) == 20
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(out, np.full(4, 2.0 * i))
    _, w, g = _affine()  # two outputs, the first collected, the second dropped
    g([np.zeros((2, 4), np.float32)])
    g([np.zeros((2, 4), np.float32)])
    python = python_calls(g)
    inputs = [np.full((2, 4), float(i), np.float32) for i in range(10)]
    firsts, seconds = [], set()
    for a in inputs:
        first, second = g([a])
        firsts.append(first)
        seconds.add(id(second))
        np.testing.assert_allclose(second, a * 2, rtol=1e-6)
        del second
    assert python[0] == 0 and len(seconds) <= 2
    for a, first in zip(inputs, firsts, strict=True):
        np.testing.assert_allclose(first, a @ w.storage + 1, rtol=1e-6)


def test_an_error_of_the_refill_reaches_the_caller() -> None:
    x = K.placeholder((None,))
    f = K.function([x], [x * 2.0])
    a = np.ones(4, np.float32)
    held = [f([a])[0] for _ in range(3)]  # both pooled arrays held

    def out_of_memory() -> None:
        raise MemoryError("no room for an output")

    native = f._caller._native
    native.set_refill(out_of_memory)
    with pytest.raises(MemoryError, match="no room"):
        f([a])
    native.set_refill(f._caller._pool.refill)
    np.testing.assert_array_equal(f([a])[0], [2.0] * 4)
    for out in held:
        np.testing.assert_array_equal(out, [2.0] * 4)


def test_packed_weights_follow_their_variable() -> None:
    """A dense layer at batch 1 reads a packed copy of its weight (`weight_packs`)."""
    x = K.placeholder((1, 256))
    w = K.variable(np.ones((256, 512), np.float32))
    f = K.function([x], [K.dot(x, w)])
    assert f._packs, "the weight is packed"
    a = np.random.default_rng(1).standard_normal((1, 256)).astype(np.float32)
    for value in (1.0, -2.0):
        K.set_value(w, np.full((256, 512), value, np.float32))
        for _ in range(3):
            np.testing.assert_allclose(f([a])[0], a @ w.storage, rtol=1e-5, atol=1e-4)


def test_a_scalar_input_and_the_learning_phase() -> None:
    x, s = K.placeholder((None, 2)), K.placeholder(())
    y = K.in_train_phase(x * s, x + s)
    f = K.function([x, s], [y])
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    for _ in range(3):
        np.testing.assert_array_equal(f([a, np.float32(3.0)])[0], a + 3.0)
        np.testing.assert_array_equal(f([a, np.array(3.0, np.float32), 1])[0], a * 3.0)


def test_scalars_fed_to_rank_0_inputs_run_natively() -> None:
    """Keras feeds the learning phase as 1 or 0., the same object each call: each value
    is converted once, and a call fed the object its plan was published with runs
    natively; another value or object declines, and is right."""
    x, phase = K.placeholder((None, 2)), K.learning_phase()
    f = K.function([x, phase], [K.in_train_phase(x * 2.0, x + 1.0)])
    a = np.arange(4, dtype=np.float32).reshape(2, 2)
    f([a, 1])
    f([a, 1])  # checked, then planned: publishes
    python = python_calls(f)
    for _ in range(5):
        np.testing.assert_array_equal(f([a, 1])[0], a * 2.0)
    assert python[0] == 0
    for flag, want in ((0.0, a + 1.0), (True, a * 2.0), (np.float32(0), a + 1.0), (1, a * 2.0)):
        np.testing.assert_array_equal(f([a, flag])[0], want)
    assert python[0] == 4
    with pytest.raises(TypeError, match="input 'keras_learning_phase' expects dtype bool"):
        f([a, 2])


def test_arrays_of_another_dtype_are_converted_natively_as_astype_converts() -> None:
    """float64, integer and bool data for float32 and float64 placeholders: the C side
    converts it into a buffer of the plan, bit for bit as NumPy's astype."""
    big = 2**53 + 1  # not a float32 nor a float64
    sources = {
        np.float64: [1 + 2.0**-30, -0.0, 1e39, -1e-46, np.nan, 1 + 3 * 2.0**-25],
        np.int64: [big, -big, 16777217, 0, -1, 16777219],  # the last rounds up in float32
        np.int32: [2**31 - 1, -(2**31), 16777217, 0, -1, 16777219],
        np.uint8: [0, 1, 127, 128, 255, 9],
        np.bool_: [True, False, True, True, False, False],
    }
    for target in (np.float32, np.float64):
        x = K.placeholder((2, 3), dtype=np.dtype(target).name)
        f = K.function([x], [x * 1.0])
        for source, values in sources.items():
            if source is np.float64 and target is np.float64:
                continue
            a = np.array(values, dtype=source).reshape(2, 3)
            with np.errstate(over="ignore"):  # 1e39 overflows float32, to inf
                want = a.astype(target)
                f([a])
                f([a])  # checked or planned, then planned: publishes
                python = python_calls(f)
                for _ in range(3):
                    got = f([a.copy()])[0]
                    assert got.dtype == target
                    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
            assert python[0] == 0, (source, target)


def test_large_inputs_of_another_dtype_are_converted_on_the_python_path() -> None:
    """A plan keeps its conversion buffers: past BUFFER_LIMIT the Python path converts,
    into a copy freed after the call."""
    rows = native_inputs.BUFFER_LIMIT // (4 * 1024) + 1
    x = K.placeholder((None, 1024))
    f = K.function([x], [K.sum(x, axis=1)])
    small, large = np.ones((4, 1024)), np.ones((rows, 1024))
    for a in (small, large):
        f([a])
        f([a])
        python = python_calls(f)
        for _ in range(2):
            np.testing.assert_array_equal(f([a])[0], np.full(len(a), 1024.0, np.float32))
        assert python[0] == (2 if a is large else 0)


def test_it_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTK_NATIVE_CALL", "0")
    monkeypatch.setattr(native_call, "_loaded", [])
    x = K.placeholder((None,))
    f = K.function([x], [x + 1.0])
    assert f._caller._native is None
    np.testing.assert_array_equal(f([np.zeros(3, np.float32)])[0], [1.0] * 3)


def test_a_workspace_that_grows_withdraws_the_plan_that_pointed_into_it() -> None:
    x = K.placeholder((None, 64))
    w = K.variable(np.eye(64, dtype=np.float32))
    f = K.function([x], [K.sum(K.dot(K.exp(x), w), axis=0)])  # of shape (64,) for any rows
    small, large = np.zeros((4, 64), np.float32), np.ones((512, 64), np.float32)
    f([small])
    f([small])
    plan = f._caller._native.plan_of()
    assert plan is not None and plan.state.ready == 1
    np.testing.assert_allclose(f([large])[0], np.full(64, 512 * np.e), rtol=1e-5)
    assert plan.state.ready == 0  # its workspace buffer was replaced
    for _ in range(3):
        np.testing.assert_allclose(f([small])[0], np.full(64, 4.0), rtol=1e-6)
