"""The cyclic collector is held off while aotk traces and compiles, and back after."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import numpy as np
import pytest

from aotk import backend as K
from aotk import gc_pause


@pytest.fixture
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts while the test runs."""
    seen: list[int] = []

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    was_enabled = gc.isenabled()
    gc.enable()
    gc.callbacks.append(record)
    yield seen
    gc.callbacks.remove(record)
    if not was_enabled:
        gc.disable()


def _graph() -> tuple[list[K.KTensor], list[K.KTensor], list[K.KTensor]]:
    """A small training step: enough ops that compiling it allocates a few hundred
    thousand objects."""
    x, y = K.placeholder((None, 24)), K.placeholder((None, 3))
    w1, w2 = K.variable(np.ones((24, 16)) / 24), K.variable(np.ones((16, 3)) / 16)
    p = K.softmax(K.dot(K.tanh(K.dot(x, w1)), w2))
    loss = K.mean(K.categorical_crossentropy(y, p))
    grads = K.gradients(loss, [w1, w2])
    return [x, y], [loss], [K.update_sub(w, 0.1 * g) for w, g in zip([w1, w2], grads, strict=True)]


def test_compile_runs_no_collection(
    collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compiling a step runs at most one collection, of the youngest generation: the one
    that finds the compile's objects right after it; unpaused, the same compile ran dozens."""
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")
    inputs, outputs, updates = _graph()
    gc.collect()
    collections.clear()
    f = K.function(inputs, outputs, updates)
    assert collections in ([], [0])
    assert gc.isenabled()
    x = np.ones((5, 24), np.float32)
    y = np.eye(3, dtype=np.float32)[[0, 1, 2, 0, 1]]
    np.testing.assert_allclose(f([x, y])[0], np.log(3.0), rtol=1e-5)


def test_nested_and_concurrent_holds() -> None:
    """The collector comes back when the last holder leaves, from any thread."""
    gc.enable()
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gc_pause.paused():
            entered.set()
            release.wait(10)

    other = threading.Thread(target=hold)
    with gc_pause.paused():
        other.start()
        assert entered.wait(10)
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread still compiles
    release.set()
    other.join(10)
    assert gc.isenabled()


def test_collector_the_program_disabled_stays_off() -> None:
    gc.disable()
    try:
        with gc_pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_environment_turns_the_pause_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AOTK_GC_PAUSE", "0")
    gc.enable()
    with gc_pause.paused():
        assert gc.isenabled()
    assert gc.isenabled()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.mark.parametrize("program_disabled", [False, True])
def test_collect_young_frees_the_pauses_garbage_unless_the_program_disabled_it(
    collections: list[int], program_disabled: bool
) -> None:
    """The garbage of a compile's lowering is freed while LLVM works (host_code), as the
    collection after the pause would; a program that turned the collector off gets none."""
    if program_disabled:
        gc.disable()
    try:
        gc.collect()
        collections.clear()
        with gc_pause.paused():
            gone = weakref.ref(_Cycle())
            gc_pause.collect_young()
            assert (gone() is None) != program_disabled
        gc_pause.collect_young()  # outside a pause: nothing
        assert collections == ([] if program_disabled else [0])
    finally:
        gc.enable()


def test_gradients_and_a_new_shapes_inference_run_no_collection(
    collections: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both walk a whole graph, allocating as they go: on a large model each set off full
    collections of the process (NASNetMobile's step: 0.9 s of them)."""
    from aotk.call_check import ShapeChecker

    monkeypatch.setenv("AOTK_DISK_CACHE", "0")
    x = K.placeholder((None, 8))
    w = K.variable(np.eye(8, dtype="float32"))
    h = x
    for _ in range(30):  # enough ops that either walk allocates past a collection's threshold
        h = K.tanh(K.dot(h, w) + 0.5)
    loss = K.mean(K.square(h))
    gc.collect()
    collections.clear()
    [g] = K.gradients(loss, [w])
    assert collections in ([], [0])
    checker = ShapeChecker(K.function([x], [loss, g]).module, "f")
    gc.collect()
    collections.clear()
    assert checker.output_shapes([(7, 8), (8, 8)]) == [(), (8, 8)]
    assert collections in ([], [0])
