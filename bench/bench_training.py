"""Training and recurrence: an MLP SGD step and LSTM inference, aotk against NumPy.

- MLP 784-1024-1024-10, batch 128, categorical cross-entropy, plain SGD: one compiled
  K.function (forward, K.gradients, updates) against a hand-written NumPy backprop.
- LSTM inference, batch 32, 50 steps, input 64, hidden 128: K.rnn (one compiled loop)
  against a NumPy loop over the steps.
Run alone with `python -m bench.bench_training`.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from bench.common import Case, run
from bench.workloads import sgd_updates

SIZES = (784, 1024, 1024, 10)
BATCH, LR = 128, 0.01
LSTM_B, LSTM_T, LSTM_D, LSTM_H = 32, 50, 64, 128


def _mlp_params(rng: np.random.Generator) -> list[np.ndarray]:
    params = []
    for fan_in, fan_out in itertools.pairwise(SIZES):
        params.append(rng.normal(0.0, (2.0 / fan_in) ** 0.5, (fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return params


def _numpy_sgd_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    w1, b1, w2, b2, w3, b3 = params
    a1 = x @ w1 + b1
    h1 = np.maximum(a1, 0)
    a2 = h1 @ w2 + b2
    h2 = np.maximum(a2, 0)
    z = h2 @ w3 + b3
    e = np.exp(z - z.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    loss = float(-np.mean(np.sum(y * np.log(p), axis=1)))
    dz = (p - y) / len(x)
    dh2 = (dz @ w3.T) * (a2 > 0)
    dh1 = (dh2 @ w2.T) * (a1 > 0)
    grads = [x.T @ dh1, dh1.sum(0), h1.T @ dh2, dh2.sum(0), h2.T @ dz, dz.sum(0)]
    for p_, g in zip(params, grads, strict=True):
        p_ -= LR * g
    return loss


def _aotk_sgd_step(params: list[np.ndarray]) -> Any:
    from aotk import backend as K

    x, y = K.placeholder(shape=(None, SIZES[0])), K.placeholder(shape=(None, SIZES[-1]))
    variables = [K.variable(p) for p in params]
    h = x
    for i in range(0, 6, 2):
        z = K.bias_add(K.dot(h, variables[i]), variables[i + 1])
        h = K.relu(z) if i < 4 else K.softmax(z)
    loss = K.mean(K.categorical_crossentropy(y, h))
    return K.function([x, y], [loss], updates=sgd_updates(loss, variables, LR))


def _lstm_weights(rng: np.random.Generator) -> list[np.ndarray]:
    w = rng.normal(0, 0.1, (LSTM_D, 4 * LSTM_H)).astype(np.float32)
    u = rng.normal(0, 0.1, (LSTM_H, 4 * LSTM_H)).astype(np.float32)
    return [w, u, np.zeros(4 * LSTM_H, np.float32)]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _numpy_lstm(xs: np.ndarray, w: np.ndarray, u: np.ndarray, b: np.ndarray) -> np.ndarray:
    h = np.zeros((xs.shape[0], LSTM_H), np.float32)
    c = np.zeros_like(h)
    for t in range(xs.shape[1]):
        z = xs[:, t] @ w + h @ u + b
        i, f, g, o = np.split(z, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
    return h


def _aotk_lstm(w: np.ndarray, u: np.ndarray, b: np.ndarray) -> Any:
    from aotk import backend as K

    wv, uv, bv = K.variable(w), K.variable(u), K.variable(b)
    x, h0 = K.placeholder(shape=(None, None, LSTM_D)), K.placeholder(shape=(None, LSTM_H))

    def step(x_t, states):
        h, c = states
        z = K.dot(x_t, wv) + K.dot(h, uv) + bv
        i, f, g, o = (z[:, k * LSTM_H : (k + 1) * LSTM_H] for k in range(4))
        c = K.sigmoid(f) * c + K.sigmoid(i) * K.tanh(g)
        h = K.sigmoid(o) * K.tanh(c)
        return h, [h, c]

    last, _, _ = K.rnn(step, x, [h0, h0])
    return K.function([x, h0], [last])


def cases(with_aotk: bool = True) -> list[Case]:
    """The SGD step and LSTM inference, NumPy and aotk."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, SIZES[0])).astype(np.float32)
    y = np.eye(SIZES[-1], dtype=np.float32)[rng.integers(0, SIZES[-1], BATCH)]
    np_params = _mlp_params(rng)
    flops = 3 * float(sum(2 * BATCH * a * b for a, b in itertools.pairwise(SIZES)))
    xs = rng.standard_normal((LSTM_B, LSTM_T, LSTM_D)).astype(np.float32)
    weights = _lstm_weights(rng)
    h0 = np.zeros((LSTM_B, LSTM_H), np.float32)
    lstm_flops = float(LSTM_T * 2 * LSTM_B * (LSTM_D + LSTM_H) * 4 * LSTM_H)
    step = lstm = None
    if with_aotk:
        step = _aotk_sgd_step([p.copy() for p in np_params])
        lstm = _aotk_lstm(*weights)
    return [
        Case(
            "mlp sgd step b=128",
            lambda: _numpy_sgd_step(np_params, x, y),
            (lambda: step([x, y])[0]) if step is not None else None,
            flops=flops,
            repeat=10,
        ),
        Case(
            "lstm b=32 t=50 64->128",
            lambda: _numpy_lstm(xs, *weights),
            (lambda: lstm([xs, h0])[0]) if lstm is not None else None,
            flops=lstm_flops,
            repeat=10,
        ),
    ]


if __name__ == "__main__":
    run(["bench.bench_training"])
