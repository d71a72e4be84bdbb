"""aotk-scan-accumulations on a real LSTM training step: the weight gradients leave the
backward loop as one matmul each, and the values stay. (An unread stacked output going
with the loop is in lit_tests/aotk-scan-accumulations: K.gradients makes none here.)"""

from __future__ import annotations

import numpy as np
from lstm_graphs import B, D, H, T, check_values, lstm_gradients

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.dialect.arithmetic import AddOp
from aotk.dialect.elementwise import is_zero_fill
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.scan import ScanOp
from aotk.lowering import pipeline
from aotk.transforms.scan_accumulations import scan_accumulations

BEFORE = "aotk-simplify,canonicalize,aotk-cse,aotk-merge-scans,dce,aotk-hoist-scan-matmuls"


def _loop_shape(module) -> tuple[int, int]:
    """(matmuls with a transposed lhs summed into a carry, stacked outputs nobody reads)
    over every scan."""
    summed = unread = 0
    for scan in (op for op in module.walk() if isinstance(op, ScanOp)):
        carries = scan.body.block.args[scan.num_seq :]
        for op in scan.body.walk():
            if isinstance(op, AddOp) and any(v in carries for v in op.operands):
                product = [v.owner for v in op.operands if isinstance(v.owner, MatMulOp)]
                summed += any(p.attrs().get("transpose_lhs") for p in product)
        unread += sum(not r.uses for r in list(scan.results)[scan.num_carries :])
    return summed, unread


def test_weight_gradients_leave_the_loop_and_the_values_stay() -> None:
    inputs, outputs = lstm_gradients()
    module, captures = trace.extract(inputs, outputs, "test")
    before = pipeline.run(module.clone(), BEFORE)
    # x_t^T dz and h_t^T dz; no dx: x, a placeholder, is not among the wanted values
    assert _loop_shape(before) == (2, 0)
    after = before.clone()
    assert scan_accumulations(after) == 2
    assert _loop_shape(after) == (0, 0)
    # the gradients start from zeros: each is its matmul, with no sum of zeros after it
    sums = [op for op in after.walk() if isinstance(op, AddOp)]
    products = [op for op in sums if any(isinstance(v.owner, MatMulOp) for v in op.operands)]
    assert not any(is_zero_fill(v) for op in products for v in op.operands)
    check_values(module, captures, after, inputs, outputs)


def test_sequences_of_any_length_fold_into_rows() -> None:
    """Steps unknown until the call: the folded row count is dynamic."""
    inputs, outputs = lstm_gradients(None)
    module, captures = trace.extract(inputs, outputs, "test")
    assert _loop_shape(pipeline.lower(module.clone(), stop_after="graph"))[0] == 0
    f = K.function(inputs, outputs)
    for steps in (1, 2, 7):
        xs = np.random.default_rng(steps).normal(size=(B, steps, D)).astype(np.float32)
        want = interp.run_module(module, [xs, *(c.storage for c in captures)])
        for g, w in zip(f([xs]), want, strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


def _stacked_sequence_steps(module) -> int:
    """Stacked outputs, over every scan, that yield a step of a sequence as it is."""
    count = 0
    for scan in (op for op in module.walk() if isinstance(op, ScanOp)):
        block = scan.body.block
        outputs = list(block.last_op.operands)[scan.num_carries :]  # type: ignore[union-attr]
        count += sum(v in block.args[: scan.num_seq] for v in outputs)
    return count


def test_a_saved_input_step_is_read_from_its_sequence() -> None:
    """The forward scan saves z_t's input part (x_t @ W, hoisted into a sequence) for the
    gradient: the gradient reads the sequence, and the stacked copy goes."""
    inputs, outputs = lstm_gradients()
    module, captures = trace.extract(inputs, outputs, "test")
    before = pipeline.run(module.clone(), BEFORE)
    assert _stacked_sequence_steps(before) == 1
    after = before.clone()
    scan_accumulations(after)
    assert _stacked_sequence_steps(after) == 0
    check_values(module, captures, after, inputs, outputs)


def test_a_cotangent_nobody_asked_for_is_never_carried() -> None:
    """Steps that read a mask from outside: its cotangent, asked for by no gradient,
    would cost a carry (a matmul and an add a step); the backward scan has none. The
    weights' carries leave the loop; the state's, read by the stacked dz, stays."""
    rng = np.random.default_rng(2)
    x, keep = K.placeholder((B, T, D)), K.placeholder((B, D))
    w = K.variable(rng.normal(0, 0.4, (D, H)).astype(np.float32))
    u = K.variable(rng.normal(0, 0.4, (H, H)).astype(np.float32))

    def step(xt, states):
        h = K.tanh(K.dot(xt * keep, w) + K.dot(states[0], u))
        return h, [h]

    last, _, _ = K.rnn(step, x, [K.zeros_like(K.dot(x[:, 0], w))])
    loss = K.sum(K.square(last))
    outputs = [loss, *K.gradients(loss, [w, u])]
    module, captures = trace.extract([x, keep], outputs, "test")
    before = pipeline.run(module.clone(), BEFORE)
    after = pipeline.run(before.clone(), "aotk-scan-accumulations,dce")
    backward = [[op for op in m.walk() if isinstance(op, ScanOp)][-1] for m in (before, after)]
    assert [s.num_carries for s in backward] == [3, 1]  # dh, dw, du; then dh
    matmuls = [sum(isinstance(op, MatMulOp) for op in s.body.walk()) for s in backward]
    assert matmuls == [3, 1]  # (x_t keep)^T dz and h_t^T dz hoisted; dz u^T stays
    values = [rng.normal(size=(B, T, D)), (rng.random((B, D)) > 0.5) * 2.0]
    args = [*(v.astype(np.float32) for v in values), *(c.storage for c in captures)]
    want = interp.run_module(module, args)
    for got in (interp.run_module(after, args), K.function([x, keep], outputs)(args[:2])):
        for g, expected in zip(got, want, strict=True):
            np.testing.assert_allclose(g, expected, rtol=2e-5, atol=1e-6)
