"""A small LSTM-style training graph shared by the scan pass tests."""

from __future__ import annotations

import numpy as np

from aotk import backend as K
from aotk import interp

B, T, D, H = 3, 5, 4, 6


def lstm_gradients(steps: int | None = T) -> tuple[list, list]:
    """The loss of a one-gate-pair LSTM over x [batch, steps, D] and its gradients in w, u
    (steps None: known only at the call)."""
    rng = np.random.default_rng(0)
    x = K.placeholder((None, steps, D))
    w = K.variable(rng.normal(0, 0.4, (D, 2 * H)).astype(np.float32))
    u = K.variable(rng.normal(0, 0.4, (H, 2 * H)).astype(np.float32))

    def step(xt, states):
        z = K.dot(xt, w) + K.dot(states[0], u)
        h = K.sigmoid(z[:, :H]) * K.tanh(z[:, H:])
        return h, [h]

    zeros = K.zeros_like(K.dot(x[:, 0], K.variable(np.zeros((D, H), np.float32))))
    last, _, _ = K.rnn(step, x, [zeros])
    loss = K.sum(K.square(last))
    return [x], [loss, *K.gradients(loss, [w, u])]


def check_values(module, captures, rewritten, inputs: list, outputs: list) -> None:
    """`rewritten` (interpreted) and the compiled K.function give the traced `module`'s
    values on a seeded batch."""
    xs = np.random.default_rng(1).normal(size=(B, T, D)).astype(np.float32)
    args = [xs, *(c.storage for c in captures)]
    want = interp.run_module(module, args)
    for got in (interp.run_module(rewritten, args), K.function(inputs, outputs)([xs])):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)
