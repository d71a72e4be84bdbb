"""The native call path from several threads: each thread runs natively on a plan of its
own (its own workspace), which goes when the thread ends; a training step's native calls
from one thread keep the others' plans current; more threads than plans still get their
own values; a short kernel keeps the GIL. Waits time out (WAIT): a thread that fails
must not leave the others waiting for it."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from native_paths import needs_native, python_calls

from aotk import backend as K
from aotk import native_call

pytestmark = needs_native
WAIT = 60.0  # seconds


def _with_workspace() -> tuple[Any, Callable[[np.ndarray], np.ndarray]]:
    """A function whose kernel needs a workspace, and its NumPy twin."""
    x = K.placeholder((None, 64))
    w = K.variable(np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32) / 8)
    f = K.function([x], [K.sum(K.dot(K.exp(x), w) * 2.0, axis=1) + K.max(x, axis=1)])
    return f, lambda a: (np.exp(a) @ w.storage * 2.0).sum(1) + a.max(1)


def _run_threads(n: int, work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(seed: int) -> None:
        try:
            work(seed)
        except BaseException as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(seed,)) for seed in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_each_thread_runs_natively_on_a_plan_of_its_own() -> None:
    f, numpy_f = _with_workspace()
    n = 3
    assert f._caller._plans == {} and n < native_call.THREAD_PLANS
    counts: list[list[int]] = []
    published = threading.Barrier(n, lambda: counts.append(python_calls(f)), WAIT)
    plans: list[tuple[int, int]] = []  # (thread, workspace) of each ready plan at the end

    def snapshot() -> None:
        ready = [p for p in f._caller._native._plans if p.state.ready]
        plans.extend((p.state.thread, id(p.workspace)) for p in ready)

    done = threading.Barrier(n, snapshot, WAIT)

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for i in range(150):
            if i == 2:  # each thread's first calls check and publish its plan
                published.wait()
            a = rng.standard_normal((256 + seed, 64)).astype(np.float32)
            np.testing.assert_allclose(f([a])[0], numpy_f(a), rtol=1e-4, atol=1e-4)
        done.wait()  # every thread is alive, with its plan

    _run_threads(n, work)
    assert counts == [[0]], "a thread with its own plan took the Python path"
    assert len({thread for thread, _ in plans}) == len(plans) == n
    assert len({workspace for _, workspace in plans}) == n  # each thread's own buffer
    assert not any(p.state.ready for p in f._caller._native._plans)  # the threads ended


@pytest.mark.parametrize(
    ("threads", "calls"), [(4, 200), (native_call.THREAD_PLANS + 3, 40)], ids=["4", "more"]
)
def test_calls_from_several_threads_each_get_their_own_values(threads: int, calls: int) -> None:
    """Each thread has its own workspace, which the plan published by one holds; with
    more threads than plans, the threads beyond take turns on the Python path."""
    f, numpy_f = _with_workspace()

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(calls):
            a = rng.standard_normal((256, 64)).astype(np.float32)
            np.testing.assert_allclose(f([a])[0], numpy_f(a), rtol=1e-4, atol=1e-4)

    f([np.zeros((256, 64), np.float32)])
    assert f._caller._plans[((256, 64),)].workspace > 0
    _run_threads(threads, work)
    assert sum(p.state.ready for p in f._caller._native._plans) <= native_call.THREAD_PLANS


def test_a_thread_that_ends_lets_go_of_its_plan_and_workspace() -> None:
    """A thread's plan points into its workspace: when the thread ends, both go (a later
    thread, which may get its id, publishes its own). The test suite checks workspaces,
    so the guard after each native call is the plan's buffer's."""
    f, numpy_f = _with_workspace()
    idents: list[int] = []
    buffers: list[weakref.ref[np.ndarray]] = []

    def work(seed: int) -> None:
        idents.append(threading.get_ident())
        a = np.random.default_rng(seed).standard_normal((8, 64)).astype(np.float32)
        for _ in range(3):
            np.testing.assert_allclose(f([a])[0], numpy_f(a), rtol=1e-4, atol=1e-4)
        buffer = f._caller._workspace.buffer()
        plan = f._caller._native.plan_of()
        assert buffer is not None and plan is not None and plan.state.ready
        at = list(plan.kept[-1])[-2]  # the workspace, before the one dynamic dim
        assert buffer.ctypes.data <= at < buffer.ctypes.data + buffer.nbytes
        buffers.append(weakref.ref(buffer))

    # a new thread usually gets the id of the one that just ended, but under load the
    # C library may hand out another first: run threads until one reuses an id
    for seed in range(20):
        _run_threads(1, lambda _, seed=seed: work(seed))
        assert f._caller._native.plan_of(idents[-1]) is None
        assert buffers[-1]() is None, "the ended thread's workspace is still held"
        if seed >= 2 and len(set(idents)) < len(idents):
            break
    assert len(set(idents)) < len(idents), "no thread was given an ended one's id: nothing tested"


def test_steps_from_two_threads_in_turn_run_natively() -> None:
    """A native step moves the count of writes: it counts its writes as seen by every
    plan of its function, so the other thread's plan stays current."""
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((8, 3)).astype(np.float32)
    x, y = K.placeholder((None, 8)), K.placeholder((None, 3))
    w = K.variable(w0)
    loss = K.mean(K.square(K.dot(x, w) - y))
    (gw,) = K.gradients(loss, [w])
    step = K.function([x, y], [loss], [K.update_sub(w, 0.05 * gw)])
    data = [[(rng.standard_normal((16, 8)), rng.standard_normal((16, 3))) for _ in range(30)]]
    data.append([(a + 1, b - 1) for a, b in data[0]])
    turn, order = threading.Condition(), []
    counts: list[list[int]] = []
    warmed = threading.Barrier(2, lambda: counts.append(python_calls(step)), WAIT)

    def work(me: int) -> None:
        for i, (a, b) in enumerate(data[me]):
            if i == 2:
                warmed.wait()
            with turn:
                assert turn.wait_for(lambda: len(order) % 2 == me, WAIT)
                step([a.astype(np.float32), b.astype(np.float32)])
                order.append((a, b))
                turn.notify_all()

    _run_threads(2, work)
    assert counts == [[0]], "a step took the Python path after both threads published"
    want = w0.astype(np.float64)
    for a, b in order:
        want -= 0.05 * 2.0 * a.T @ (a @ want - b) / b.size
    np.testing.assert_allclose(K.get_value(w), want, rtol=1e-4, atol=1e-5)


def test_short_kernels_keep_the_gil_and_long_ones_let_it_go() -> None:
    """A call of a plan whose kernel took under 2 us keeps the GIL (handing it to a
    waiting thread and back costs more); a longer kernel's calls, and those of a function
    with a mutex, let it go (`test_native_call` watches a long one from another thread)."""
    x = K.placeholder((None, 1024))
    tiny = K.function([x], [x[:, :4] + 1.0])
    w = K.variable(np.ones((1024, 1024), np.float32))
    long = K.function([x], [K.dot(x, w)])
    v = K.variable(np.zeros(4, np.float32))
    locked = K.function([x], [x[:, :4] * 2.0], [K.update_add(v, K.sum(x[:, :4], axis=0))])
    small, large = np.ones((1, 1024), np.float32), np.ones((512, 1024), np.float32)
    for f, a in ((tiny, small), (long, large), (locked, small)):
        for _ in range(4):
            f([a])
    assert [f._caller._native.plan_of().state.short_kernel for f in (tiny, long, locked)] == [
        1,
        0,
        0,
    ]
    np.testing.assert_array_equal(tiny([small])[0], np.full((1, 4), 2.0))
    np.testing.assert_array_equal(K.get_value(v), np.full(4, 4.0))  # its 4 calls
