"""The graphs whose compile time `bench.compile_time` measures, built with the backend.

Each builder returns `(inputs, outputs, updates)` for `K.function`, with seeded weights.
They follow the workloads of the performance issues: W3 (MLP inference), W4 (its SGD
step), W5 (a small CNN), W6 (an LSTM, forward and training), plus one dense layer, a
Keras-sized CNN training step and a DenseNet-BC-style block's (one layer at many
widths).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

Graph = tuple[list[Any], list[Any], list[Any]]
MLP = (784, 1024, 1024, 10)
LSTM_B, LSTM_T, LSTM_D, LSTM_H = 32, 50, 64, 128
DENSE_IN, GROWTH, DENSE_LAYERS = 64, 16, 6  # a dense block's channels in, added a layer


@functools.cache
def _array(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 0.05, shape).astype(np.float32)


def _weights(*shape: int, seed: int = 0) -> Any:
    """A variable of seeded weights (the arrays are made once: a second trace of a graph
    then costs only the tracing)."""
    from aotk import backend as K

    return K.variable(_array(shape, seed))


def sgd_updates(loss: Any, params: list[Any], lr: float = 0.01) -> list[Any]:
    """Plain SGD: each parameter minus `lr` times its gradient."""
    from aotk import backend as K

    updates = []
    for p, g in zip(params, K.gradients(loss, params), strict=True):
        if g is None:
            raise ValueError(f"the loss does not depend on parameter {p.name}")
        updates.append(K.update_sub(p, lr * g))
    return updates


def dense() -> Graph:
    from aotk import backend as K

    x = K.placeholder((None, 64))
    return [x], [K.dot(x, _weights(64, 64))], []


def _mlp(x: Any) -> tuple[Any, list[Any]]:
    from aotk import backend as K

    params, h = [], x
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(MLP)):
        w, b = _weights(fan_in, fan_out, seed=i), K.variable(np.zeros(fan_out, np.float32))
        params += [w, b]
        z = K.bias_add(K.dot(h, w), b)
        h = K.relu(z) if fan_out != MLP[-1] else K.softmax(z)
    return h, params


def w3_mlp() -> Graph:
    from aotk import backend as K

    x = K.placeholder((None, MLP[0]))
    return [x], [_mlp(x)[0]], []


def w4_mlp_sgd() -> Graph:
    from aotk import backend as K

    x, y = K.placeholder((None, MLP[0])), K.placeholder((None, MLP[-1]))
    p, params = _mlp(x)
    loss = K.mean(K.categorical_crossentropy(y, p))
    return [x, y], [loss], sgd_updates(loss, params)


def _cnn(x: Any, hidden: int | None) -> tuple[Any, list[Any]]:
    from aotk import backend as K

    k1, k2 = _weights(3, 3, 3, 32, seed=1), _weights(3, 3, 32, 64, seed=2)
    h = K.relu(K.conv2d(x, k1, padding="same", data_format="channels_last"))
    h = K.relu(K.conv2d(h, k2, padding="same", data_format="channels_last"))
    h = K.batch_flatten(K.pool2d(h, (2, 2), (2, 2), data_format="channels_last"))
    params = [k1, k2]
    if hidden is not None:
        w = _weights(16 * 16 * 64, hidden, seed=3)
        h, params = K.relu(K.dot(h, w)), [*params, w]
    w_out = _weights(hidden or 16 * 16 * 64, 10, seed=4)
    return K.softmax(K.dot(h, w_out)), [*params, w_out]


def w5_cnn() -> Graph:
    from aotk import backend as K

    x = K.placeholder((None, 32, 32, 3))
    return [x], [_cnn(x, None)[0]], []


def keras_cnn_sgd() -> Graph:
    """A Keras-sized training step: two convs, pooling, two dense layers, SGD."""
    from aotk import backend as K

    x, y = K.placeholder((None, 32, 32, 3)), K.placeholder((None, 10))
    p, params = _cnn(x, 128)
    loss = K.mean(K.categorical_crossentropy(y, p))
    return [x, y], [loss], sgd_updates(loss, params)


def _normalized(h: Any, width: int) -> tuple[Any, list[Any]]:
    """relu of `h` normalized per channel by the batch's statistics, scaled and shifted."""
    from aotk import backend as K

    gamma = K.variable(np.ones(width, np.float32))
    beta = K.variable(np.zeros(width, np.float32))
    mean, var = K.mean(h, axis=[0, 1, 2]), K.var(h, axis=[0, 1, 2])
    return K.relu((h - mean) / K.sqrt(var + 1e-3) * gamma + beta), [gamma, beta]


def dense_block_sgd() -> Graph:
    """A DenseNet-BC-style training step: each layer normalizes its input, convolves it
    1 x 1 to 4 x GROWTH channels, normalizes those, convolves them 3 x 3 to GROWTH and
    concatenates those on; one layer at DENSE_LAYERS widths."""
    from aotk import backend as K

    x, y = K.placeholder((None, 16, 16, DENSE_IN)), K.placeholder((None, 10))
    h, params = x, []
    for i in range(DENSE_LAYERS):
        width = DENSE_IN + GROWTH * i
        a, affine = _normalized(h, width)
        k1 = _weights(1, 1, width, 4 * GROWTH, seed=10 + i)
        b, affine2 = _normalized(K.conv2d(a, k1, padding="same"), 4 * GROWTH)
        k3 = _weights(3, 3, 4 * GROWTH, GROWTH, seed=20 + i)
        h = K.concatenate([h, K.conv2d(b, k3, padding="same", data_format="channels_last")])
        params += [*affine, k1, *affine2, k3]
    w = _weights(DENSE_IN + GROWTH * DENSE_LAYERS, 10, seed=30)
    p = K.softmax(K.dot(K.mean(h, axis=[1, 2]), w))
    loss = K.mean(K.categorical_crossentropy(y, p))
    return [x, y], [loss], sgd_updates(loss, [*params, w])


def _lstm(train: bool) -> Graph:
    from aotk import backend as K

    x = K.placeholder((LSTM_B, LSTM_T, LSTM_D))
    w, u = _weights(LSTM_D, 4 * LSTM_H, seed=5), _weights(LSTM_H, 4 * LSTM_H, seed=6)
    hid = LSTM_H

    def step(xt: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        h, c = states
        z = K.dot(xt, w) + K.dot(h, u)
        i, f = K.sigmoid(z[:, :hid]), K.sigmoid(z[:, hid : 2 * hid])
        o, g = K.sigmoid(z[:, 2 * hid : 3 * hid]), K.tanh(z[:, 3 * hid :])
        c = f * c + i * g
        h = o * K.tanh(c)
        return h, [h, c]

    zeros = K.zeros((LSTM_B, LSTM_H))
    last, _, _ = K.rnn(step, x, [zeros, zeros])
    if not train:
        return [x], [last], []
    loss = K.mean(K.square(last))
    return [x], [loss], sgd_updates(loss, [w, u])


def w6_lstm() -> Graph:
    return _lstm(train=False)


def w6_lstm_sgd() -> Graph:
    return _lstm(train=True)


GRAPHS: dict[str, Callable[[], Graph]] = {
    "dense 64x64": dense,
    "W3 MLP inference": w3_mlp,
    "W4 MLP SGD step": w4_mlp_sgd,
    "W5 CNN inference": w5_cnn,
    "W6 LSTM forward": w6_lstm,
    "W6 LSTM SGD step": w6_lstm_sgd,
    "Keras-sized CNN SGD step": keras_cnn_sgd,
    "dense block SGD step, 6 widths": dense_block_sgd,
}
