"""`aotk-canonicalize` gives the IR xDSL's `canonicalize` gives, on real kernels."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp

from aotk import backend as K
from aotk.lowering import pipeline


def _mlp_step() -> ModuleOp:
    rng = np.random.default_rng(0)
    x = K.placeholder((None, 40))
    w = K.variable(rng.normal(size=(40, 30)).astype("float32"))
    loss = K.mean(K.log(K.softmax(K.tanh(K.dot(x, w))) + 1e-3))
    g = K.gradients(loss, [w])[0]
    return K.function([x], [loss], [K.update_sub(w, 0.1 * g)]).module


def _rnn() -> ModuleOp:
    x = K.placeholder((None, 5, 3))
    w = K.variable(np.full((3, 4), 0.1, "float32"))
    u = K.variable(np.full((4, 4), 0.2, "float32"))

    def step(xt, states):
        h = K.tanh(K.dot(xt, w) + K.dot(states[0], u))
        return h, [h]

    last, outs, _ = K.rnn(step, x, [K.zeros((2, 4))])
    return K.function([x], [last, K.sum(outs, axis=1)]).module


@pytest.mark.parametrize("build", [_mlp_step, _rnn])
def test_same_ir_as_xdsl_canonicalize(build) -> None:
    traced = build()
    texts = []
    for canonicalize in ("canonicalize", "aotk-canonicalize"):
        module = traced.clone()
        pipeline.lower(module, stop_after="graph")
        pipeline.run(module, f"convert-aotk-to-loops,cse,{canonicalize},cse")
        texts.append(str(module))
    assert texts[0] == texts[1]
    assert "scf.for" in texts[1] and texts[1].count("\n") > 100
