"""Keras recurrent models on aotk: an LSTM's and a GRU's predict and SGD step against
NumPy, then their variants (dropout, a mask of steps) at one and two threads, their
steps by blocks of rows against whole.

The models: Sequential([LSTM(128) or GRU(128) over 50 steps of 64 features, Dense(10,
softmax)]), batch 32, categorical cross-entropy, plain SGD (lr 0.01), timed through
Keras's `predict_on_batch` and `train_on_batch` as a Keras user calls them (their
per-call work included). The NumPy sides (`reference_keras_rnn`) compute the same from
the same weights, and the SGD steps are checked on the loss and every weight. The variants
table switches the blocks off by compiling a second copy with `scan_rows.row_split`
answering "whole" (the compile cache off, so that neither copy is served the other's
code), and alternates the copies' calls. Needs the `keras` extra.
Run with `python -m bench.bench_keras_rnn` (`--variants`: only the second table).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import reference_keras_rnn as reference
from bench.common import Case, measure_pair, run

B, T, D, H, CLASSES, LR = 32, 50, 64, 128, 10, 0.01


def _flops(kind: str) -> float:
    """The cell's matmuls over the steps, forward."""
    return 2.0 * B * T * (D + H) * reference.GATES[kind] * H


def _keras(kind: str = "lstm", variant: str = "plain") -> Any:
    """The model (an LSTM or GRU, `variant` plain, dropout or masked), compiled."""
    os.environ.setdefault("KERAS_BACKEND", "aotk.backend")
    from keras import layers, optimizers
    from keras.models import Sequential

    cell = {"lstm": layers.LSTM, "gru": layers.GRU}[kind]
    drop = {"dropout": 0.2, "recurrent_dropout": 0.2} if variant == "dropout" else {}
    if variant == "masked":  # token ids, 0 a padding step the mask skips
        stack = [layers.Embedding(1000, D, mask_zero=True, input_length=T), cell(H)]
    else:
        stack = [cell(H, input_shape=(T, D), **drop)]
    model = Sequential([*stack, layers.Dense(CLASSES, activation="softmax")])
    model.compile(optimizers.SGD(lr=LR), "categorical_crossentropy")
    return model


def _data(rng: np.random.Generator, variant: str = "plain") -> tuple[np.ndarray, np.ndarray]:
    ys = np.eye(CLASSES, dtype=np.float32)[rng.integers(0, CLASSES, B)]
    if variant != "masked":
        return rng.standard_normal((B, T, D)).astype(np.float32), ys
    ids = rng.integers(1, 1000, (B, T))
    lengths = rng.integers(T // 2, T + 1, B)
    ids[np.arange(T)[None, :] >= lengths[:, None]] = 0  # each sequence padded at its end
    return ids, ys


def _check_step(kind: str, params: list[np.ndarray], xs: np.ndarray, ys: np.ndarray) -> None:
    """One step from the same weights: the same loss and weights after it."""
    model = _keras(kind)
    model.set_weights(params)
    mine = [p.copy() for p in params]
    want = reference.sgd_step(kind, mine, xs, ys, LR)
    got = float(model.train_on_batch(xs, ys))
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for name, a, b in zip("W U b Wd bd".split(), model.get_weights(), mine, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-6, err_msg=f"{kind} {name}")


def cases(with_aotk: bool = True) -> list[Case]:
    """The LSTM and GRU models' predict and SGD step, NumPy and aotk."""
    return [case for kind in ("lstm", "gru") for case in _cases(kind, with_aotk)]


def _cases(kind: str, with_aotk: bool) -> list[Case]:
    rng = np.random.default_rng(0)
    params = reference.params(rng, kind, (D, H, CLASSES))
    xs, ys = _data(rng)
    stepped = [p.copy() for p in params]
    predict = train = None
    if with_aotk:
        predict, train = _keras(kind), _keras(kind)
        predict.set_weights(params)
        train.set_weights(params)
    return [
        Case(
            f"keras {kind} predict b=32 t=50",
            lambda: reference.predict(kind, params, xs),
            (lambda: predict.predict_on_batch(xs)) if predict is not None else None,
            flops=_flops(kind),
            repeat=20,
        ),
        Case(
            f"keras {kind} sgd step b=32 t=50",
            lambda: reference.sgd_step(kind, stepped, xs, ys, LR),
            (lambda: train.train_on_batch(xs, ys)) if train is not None else None,
            flops=3 * _flops(kind),
            repeat=10,
            check=lambda: _check_step(kind, params, xs, ys),
        ),
    ]


def _calls(kind: str, variant: str) -> tuple[Callable[[], object], Callable[[], object]]:
    """The model's predict and train steps on seeded data, compiled (Keras compiles its
    functions at their first call)."""
    model = _keras(kind, variant)
    xs, ys = _data(np.random.default_rng(1), variant)
    calls = (lambda: model.predict_on_batch(xs)), (lambda: model.train_on_batch(xs, ys))
    for call in calls:
        call()
    return calls


def variants() -> None:
    """Each variant's steps by blocks and whole, at one and two threads (ms, median ±
    half IQR, calls of the two copies alternating)."""
    import aotk
    from aotk import host_code
    from aotk.dialect import scan_rows

    os.environ["AOTK_DISK_CACHE"] = "0"
    split, before = scan_rows.row_split, aotk.get_num_threads()
    print(f"{'model':18} {'step':8} {'t':>2} {'blocks':>17} {'whole':>17} {'ratio':>6}")
    for kind in ("lstm", "gru"):
        for variant in ("plain", "dropout", "masked"):
            pair = []
            for row_split in (split, lambda op: None):
                scan_rows.row_split = row_split
                host_code.clear_cache()
                pair.append(_calls(kind, variant))
            scan_rows.row_split = split
            for threads in (1, 2):
                aotk.set_num_threads(threads)
                for step, name in ((0, "predict"), (1, "train")):
                    blocks, whole = measure_pair(pair[0][step], pair[1][step], repeat=20)
                    print(
                        f"{kind + ' ' + variant:18} {name:8} {threads:>2} "
                        f"{_ms(blocks):>17} {_ms(whole):>17} {blocks.median / whole.median:6.2f}"
                    )
    aotk.set_num_threads(before)


def _ms(t: Any) -> str:
    return f"{t.median * 1e3:.2f} ±{t.iqr / 2 * 1e3:.2f}"


if __name__ == "__main__":
    if "--variants" not in sys.argv[1:]:
        run(["bench.bench_keras_rnn"])
        print()
    variants()
