"""aotk-hoist-scan-matmuls on a real LSTM-style training step: the input projections of
the forward and backward scans leave the loops, with unchanged results."""

from __future__ import annotations

import numpy as np
from lstm_graphs import check_values, lstm_gradients

from aotk import backend as K
from aotk.dialect import trace
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.scan import ScanOp
from aotk.lowering import pipeline
from aotk.transforms.hoist_scan_matmuls import hoist_scan_matmuls


def _step_matmuls_of_sequences(module) -> int:
    """Matmuls in scan bodies of a sequence's step (not transposed) by a value from
    outside the loop."""
    count = 0
    for scan in (op for op in module.walk() if isinstance(op, ScanOp)):
        steps = set(scan.body.block.args[: scan.num_seq])
        inside = {r for op in scan.body.walk() for r in op.results}
        inside.update(a for b in scan.body.blocks for a in b.args)
        count += sum(
            isinstance(op, MatMulOp)
            and op.lhs in steps
            and op.rhs not in inside
            and not op.attrs().get("transpose_lhs")
            for op in scan.body.walk()
        )
    return count


def test_projections_leave_the_loops_and_the_values_stay() -> None:
    inputs, outputs = lstm_gradients()
    module, captures = trace.extract(inputs, outputs, "test")
    before = pipeline.lower(module.clone(), stop_after="graph", start_after="trace")
    assert _step_matmuls_of_sequences(before) == 0
    unhoisted = pipeline.run(module.clone(), "aotk-simplify,canonicalize,aotk-merge-scans")
    counts = _step_matmuls_of_sequences(unhoisted)
    assert counts == 1  # the forward step's x_t @ w (BPTT reads the saved products)
    assert hoist_scan_matmuls(unhoisted) == counts
    check_values(module, captures, unhoisted, inputs, outputs)


def test_backpropagation_reads_the_forward_products_instead_of_recomputing_them() -> None:
    """After the graph stage, the only matmul in a loop that is not a gradient's
    (transposed) product is the forward step's h @ u."""
    inputs, outputs = lstm_gradients()
    module, _ = trace.extract(inputs, outputs, "test")
    graph = pipeline.lower(module, stop_after="graph")
    plain = [
        op
        for scan in graph.walk()
        if isinstance(scan, ScanOp)
        for op in scan.body.walk()
        if isinstance(op, MatMulOp) and not op.attrs()
    ]
    assert len(plain) == 1


def test_sequences_of_any_length_including_none() -> None:
    x = K.placeholder((2, None, 3))
    w = K.variable(np.arange(12, dtype=np.float32).reshape(3, 4) / 10)

    def step(xt, states):
        h = K.dot(xt, w) + states[0]
        return h, [h]

    _, outs, _ = K.rnn(step, x, [K.zeros((2, 4))])
    f = K.function([x], [outs])
    assert f([np.zeros((2, 0, 3), np.float32)])[0].shape == (2, 0, 4)
    xs = np.random.default_rng(2).normal(size=(2, 7, 3)).astype(np.float32)
    want = np.cumsum(xs @ (np.arange(12).reshape(3, 4) / 10), axis=1)
    np.testing.assert_allclose(f([xs])[0], want, rtol=1e-5, atol=1e-6)
