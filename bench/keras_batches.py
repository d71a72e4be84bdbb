"""What a Keras batch costs once its functions are compiled: Keras's own work around
aotk's call, and the call.

A small MLP with dropout (so Keras feeds the learning phase, as `1` or `0.`) runs
`train_on_batch`, `predict_on_batch` and `fit` (per batch) on float32 data and on
float64 data (what `np.random.random` gives, which aotk converts), batch 32, in this
process; "call" is the train function Keras compiled, called alone with what Keras
feeds it. Medians of ROUNDS runs, with their range. Needs the `keras` extra; run with
`python -m bench.keras_batches`.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

ROUNDS = 7
BATCH, FEATURES, ROWS = 32, 20, 3200


def _model() -> Any:
    from keras.layers import Dense, Dropout
    from keras.models import Sequential

    model = Sequential(
        [Dense(64, activation="relu", input_shape=(FEATURES,)), Dropout(0.1), Dense(1)]
    )
    model.compile("sgd", "mse")
    return model


def _per_call(run: Callable[[], Any], calls: int) -> tuple[float, float, float]:
    """(median, min, max) microseconds a call over ROUNDS rounds of `calls` calls."""
    run()
    times = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        times.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(times), min(times), max(times)


def measure(dtype: str) -> dict[str, tuple[float, float, float]]:
    """Microseconds per batch of each way of running the model on `dtype` data."""
    rng = np.random.default_rng(0)
    model = _model()
    x = rng.random((ROWS, FEATURES)).astype(dtype)
    y = rng.random((ROWS, 1)).astype(dtype)
    xb, yb = x[:BATCH], y[:BATCH]
    model.train_on_batch(xb, yb)
    model.predict_on_batch(xb)
    fed = [xb, yb, np.ones(BATCH, np.float32), 1]  # as Keras 2 feeds its train function
    train = model.train_function
    batches = ROWS // BATCH

    def fit() -> None:
        model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False)

    fit_epoch = _per_call(fit, 1)
    return {
        "train_on_batch": _per_call(lambda: model.train_on_batch(xb, yb), 500),
        "call": _per_call(lambda: train(fed), 2000),
        "predict_on_batch": _per_call(lambda: model.predict_on_batch(xb), 500),
        "fit, per batch": tuple(t / batches for t in fit_epoch),  # type: ignore[return-value]
    }


def main() -> None:
    os.environ.setdefault("KERAS_BACKEND", "aotk.backend")
    print(f"us per batch (batch {BATCH}), median [min-max] of {ROUNDS} rounds")
    for dtype in ("float32", "float64"):
        for what, (median, low, high) in measure(dtype).items():
            print(f"  {dtype} {what:<18} {median:8.1f} [{low:.1f}-{high:.1f}]")


if __name__ == "__main__":
    main()
