"""What compiling costs a Keras user: a model's first epoch minus its later ones.

Small Keras 2 programs (an MLP with dropout, a CNN, an LSTM, a bidirectional GRU; Adam,
validation split) each run three one-epoch `fit` calls in a fresh process with the
compile cache off. The first compiles the train and test functions; the later ones
only run. The difference is the compile time a user waits for. Needs the `keras` extra;
the micro-kernel library is built first, as on a user's first run, and not counted.
Run with `python -m bench.keras_first_epoch [mlp cnn lstm gru]`.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from typing import Any

from bench.compile_time import build_library, cold_child

PROGRAMS = ("mlp", "cnn", "lstm", "gru")
EPOCHS = 3


def _model(name: str, rng: Any) -> tuple[Any, Any, Any]:
    """The model of program `name`, compiled, and its data."""
    import numpy as np
    from keras import layers
    from keras.models import Sequential

    if name == "mlp":
        x = rng.normal(size=(512, 20)).astype("float32")
        stack = [
            layers.Dense(64, activation="relu", input_shape=(20,)),
            layers.Dropout(0.2),
            layers.Dense(64, activation="relu"),
        ]
    elif name == "cnn":
        x = rng.normal(size=(256, 16, 16, 1)).astype("float32")
        stack = [
            layers.Conv2D(8, 3, activation="relu", input_shape=(16, 16, 1)),
            layers.MaxPooling2D(),
            layers.Conv2D(16, 3, activation="relu"),
            layers.Flatten(),
        ]
    else:
        x = rng.normal(size=(256, 12, 8)).astype("float32")
        cell = layers.LSTM(16) if name == "lstm" else layers.Bidirectional(layers.GRU(16))
        stack = [cell]
    model = Sequential([*stack, layers.Dense(4, activation="softmax")])
    model.build((None, *x.shape[1:]))
    model.compile("adam", "categorical_crossentropy", metrics=["accuracy"])
    y = np.eye(4, dtype="float32")[rng.integers(0, 4, len(x))]
    return model, x, y


def epochs(name: str) -> list[float]:
    """In this (fresh) process: seconds of each one-epoch `fit` of program `name`."""
    import numpy as np

    model, x, y = _model(name, np.random.default_rng(0))
    seconds = []
    for _ in range(EPOCHS):
        t0 = time.perf_counter()
        model.fit(x, y, epochs=1, batch_size=32, verbose=0, validation_split=0.2)
        seconds.append(time.perf_counter() - t0)
    return seconds


def _child(args: list[str], cache: str) -> Any:
    return cold_child("bench.keras_first_epoch", args, cache, KERAS_BACKEND="aotk.backend")


def run(names: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="aotk-bench-") as cache:
        _child(["--library"], cache)
        print(f"\n{'Keras program':14s} {'first - later (s)':>18s}   epochs (s)")
        for name in names:
            seconds = _child(["--one", name], cache)
            extra = seconds[0] - min(seconds[1:])
            print(f"{name:14s} {extra:18.2f}   {' '.join(f'{s:.2f}' for s in seconds)}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(epochs(argv[1])))
    elif argv[:1] == ["--library"]:
        print(json.dumps(build_library()))
    else:
        unknown = [a for a in argv if a not in PROGRAMS]
        if unknown:
            raise SystemExit(f"unknown program(s) {unknown}; choose from {list(PROGRAMS)}")
        run(argv or list(PROGRAMS))


if __name__ == "__main__":
    main(sys.argv[1:])
