"""aotk-merge-scans on real gradients: backpropagation through time runs the forward
steps once (the state-saving scan replaces the forward scan), with unchanged results."""

from __future__ import annotations

import numpy as np

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.dialect.scan import ScanOp
from aotk.lowering import pipeline


def _rnn_training_graph() -> tuple[list, list]:
    x = K.placeholder((4, 6, 3))
    w = K.variable(np.random.default_rng(0).normal(0, 0.3, (3, 3)).astype(np.float32))

    def step(xt, states):
        h = K.tanh(xt + K.dot(states[0], w))
        return h, [h]

    last, _, _ = K.rnn(step, x, [K.zeros((4, 3))])
    loss = K.sum(K.square(last))
    return [x], [loss, *K.gradients(loss, [w])]


def test_the_gradient_of_an_rnn_runs_its_forward_steps_once() -> None:
    inputs, outputs = _rnn_training_graph()
    module, captures = trace.extract(inputs, outputs, "test")
    scans = lambda m: sum(isinstance(op, ScanOp) for op in m.walk())  # noqa: E731
    assert scans(module) == 3  # forward, the forward again saving states, backward
    merged = pipeline.lower(module.clone(), stop_after="graph")
    assert scans(merged) == 2
    xs = np.random.default_rng(1).normal(size=(4, 6, 3)).astype(np.float32)
    args = [xs, *(c.storage for c in captures)]
    want = interp.run_module(module, args)
    got = interp.run_module(merged, args)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
