"""aotk's one-sweep conversions give the IR xDSL's worklist-driven passes give."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from aotk import backend as K
from aotk.lowering import pipeline

XDSL = (
    "convert-vector-to-ptr,convert-memref-to-ptr{lower_func=true},convert-ptr-type-offsets,"
    "cse,aotk-ptradd-to-gep,aotk-ptr-to-llvm,aotk-outline-kernels,aotk-parallelize,"
    "convert-scf-to-cf,reconcile-unrealized-casts"
)
AOTK = (
    "aotk-memref-to-ptr,cse,aotk-ptradd-to-gep,aotk-ptr-to-llvm,aotk-outline-kernels,"
    "aotk-parallelize,aotk-scf-to-cf,aotk-reconcile-casts"
)


def _mlp_step() -> ModuleOp:
    rng = np.random.default_rng(0)
    x = K.placeholder((None, 300))
    w = K.variable(rng.normal(size=(300, 200)).astype("float32"))
    b = K.variable(np.zeros(200, "float32"))
    loss = K.mean(K.log(K.softmax(K.relu(K.dot(x, w) + b)) + 1e-3))
    gw, gb = K.gradients(loss, [w, b])
    return K.function([x], [loss], [K.update_sub(w, 0.1 * gw), K.update_sub(b, 0.1 * gb)]).module


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
def test_same_ir_as_xdsl_conversions(build) -> None:
    loops = build().clone()
    pipeline.lower(loops, stop_after="loops")
    texts = [str(pipeline.run(loops.clone(), spec)) for spec in (XDSL, AOTK)]
    assert texts[0] == texts[1]
    assert "cf.cond_br" in texts[1] and "scf." not in texts[1] and "memref." not in texts[1]
    assert "unrealized_conversion_cast" not in texts[1]


@pytest.mark.parametrize("build", [_mlp_step, _rnn])
def test_outlining_leaves_no_dead_ops_behind(build) -> None:
    """xDSL's walkers removed dead ops as they went; the one-sweep passes do not, so the
    passes before them must not leave any (LLVM would remove them, at a cost)."""
    module = build().clone()
    pipeline.lower(module, stop_after="loops")
    pipeline.run(module, AOTK)
    assert "main_k0" in str(module)  # kernels were outlined
    dead = [op for op in module.walk() if op.results and is_trivially_dead(op)]
    assert not dead, dead[:3]
