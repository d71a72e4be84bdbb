"""Small calls from several Python threads at once, as a server's worker threads make them.

A dense layer, relu(x @ w + b) on a batch of 8 rows of 64 (a compiled `K.function` and
NumPy's three calls), is called CALLS times by each of 1, 2 and 4 threads started
together; the figure is the wall time over all threads' calls, per call (so the
threads' sum of work: with the GIL, small calls take turns). aotk and NumPy alternate
within each round, ROUNDS rounds, with aotk's pool at one thread (the threads are the
parallelism here). Also one thread feeding its inputs as a tuple instead of a list.
Medians with their range; run with `python -m bench.thread_calls`.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

ROUNDS = 7
CALLS = 4000
THREADS = (1, 2, 4)
BATCH, WIDTH = 8, 64


def _layer() -> tuple[Any, Callable[[np.ndarray], np.ndarray]]:
    """The compiled layer (called with a list of one array) and its NumPy twin."""
    from aotk import backend as K

    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((WIDTH, WIDTH)).astype(np.float32) / 8
    b0 = rng.standard_normal(WIDTH).astype(np.float32)
    x = K.placeholder((None, WIDTH))
    f = K.function([x], [K.relu(K.dot(x, K.variable(w0)) + K.variable(b0))])
    return f, lambda a: np.maximum(a @ w0 + b0, 0)


def _wall_per_call(call: Callable[[], Any], threads: int) -> float:
    """Microseconds of wall time per call while `threads` threads make CALLS each."""
    start = threading.Barrier(threads)
    spans: list[tuple[float, float]] = []

    def work() -> None:
        for _ in range(3):  # each thread's first calls plan (aotk) or warm up
            call()
        start.wait()
        began = time.perf_counter()  # here: a thread may keep the GIL through its calls
        for _ in range(CALLS):
            call()
        spans.append((began, time.perf_counter()))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    wall = max(end for _, end in spans) - min(began for began, _ in spans)
    return wall / (CALLS * threads) * 1e6


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.2f} [{min(values):.2f}-{max(values):.2f}]"


def run() -> None:
    f, numpy_f = _layer()
    a = np.random.default_rng(1).standard_normal((BATCH, WIDTH)).astype(np.float32)
    np.testing.assert_allclose(f([a])[0], numpy_f(a), rtol=1e-5, atol=1e-5)
    rows: dict[str, dict[str, list[float]]] = {}
    cases: list[tuple[str, int, Callable[[], Any], Callable[[], Any]]] = [
        (f"{n} thread{'s' * (n > 1)}", n, lambda: f([a]), lambda: numpy_f(a)) for n in THREADS
    ]
    cases.append(("1 thread, inputs in a tuple", 1, lambda: f((a,)), lambda: numpy_f(a)))
    for _ in range(ROUNDS):
        for name, n, ours, numpy in cases:
            row = rows.setdefault(name, {"aotk": [], "numpy": []})
            row["aotk"].append(_wall_per_call(ours, n))
            row["numpy"].append(_wall_per_call(numpy, n))
    print(f"relu(x @ w + b), x {BATCH} x {WIDTH}: us of wall time per call, all threads'")
    print(f"calls together (median [range] of {ROUNDS} rounds of {CALLS} calls a thread)")
    print(f"{'':30s} {'aotk':>20s} {'numpy':>20s}  ratio")
    for name, row in rows.items():
        ratio = statistics.median(row["aotk"]) / statistics.median(row["numpy"])
        print(f"{name:30s} {_spread(row['aotk']):>20s} {_spread(row['numpy']):>20s}  {ratio:.2f}")


if __name__ == "__main__":
    os.environ.setdefault("AOTK_NUM_THREADS", "1")
    run()
