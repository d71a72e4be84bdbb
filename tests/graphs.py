"""Two real graphs the pass-equivalence tests lower, an MLP training step and an RNN, and
an LSTM step for K.rnn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from aotk import backend as K


def mlp_step() -> ModuleOp:
    """A dense layer's SGD step, large enough that its update is split over threads."""
    rng = np.random.default_rng(0)
    x = K.placeholder((None, 300))
    w = K.variable(rng.normal(size=(300, 200)).astype("float32"))
    b = K.variable(np.zeros(200, "float32"))
    loss = K.mean(K.log(K.softmax(K.relu(K.dot(x, w) + b)) + 1e-3))
    gw, gb = K.gradients(loss, [w, b])
    return K.function([x], [loss], [K.update_sub(w, 0.1 * gw), K.update_sub(b, 0.1 * gb)]).module


def rnn() -> ModuleOp:
    """A small recurrent layer: a scan loop holding matmuls."""
    x = K.placeholder((None, 5, 3))
    w = K.variable(np.full((3, 4), 0.1, "float32"))
    u = K.variable(np.full((4, 4), 0.2, "float32"))

    def step(xt, states):
        h = K.tanh(K.dot(xt, w) + K.dot(states[0], u))
        return h, [h]

    last, outs, _ = K.rnn(step, x, [K.zeros((2, 4))])
    return K.function([x], [last, K.sum(outs, axis=1)]).module


def lstm_step(w: Any, u: Any, b: Any, units: int) -> Callable[[Any, list[Any]], Any]:
    """A Keras-style LSTM step (gates i, f, g, o) for K.rnn, on states [h, c]."""

    def step(xt: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        h, c = states
        z = K.dot(xt, w) + K.dot(h, u) + b
        i, f, g, o = (z[:, units * n : units * (n + 1)] for n in range(4))
        c2 = K.sigmoid(f) * c + K.sigmoid(i) * K.tanh(g)
        h2 = K.sigmoid(o) * K.tanh(c2)
        return h2, [h2, c2]

    return step
