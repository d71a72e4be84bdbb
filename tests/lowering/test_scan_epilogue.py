"""A recurrent step's gates computed by row blocks right after its matmul
(`scan_epilogue`): chosen for an LSTM step, and its values are the interpreter's at any
batch, including batches that are not a whole number of blocks and a batch known only
at the call (checked at run time)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graphs import lstm_step

from aotk import backend as K
from aotk import interp
from aotk.dialect import scan_epilogue, trace
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.scan import ScanOp
from aotk.lowering import pipeline

RNG = np.random.default_rng(11)
D, H = 5, 7


def _lstm(batch: int | None, dtype: str) -> tuple[list[Any], list[Any]]:
    x = K.placeholder((batch, 4, D), dtype=dtype)
    w = K.variable(RNG.normal(0, 0.5, (D, 4 * H)), dtype=dtype)
    u = K.variable(RNG.normal(0, 0.5, (H, 4 * H)), dtype=dtype)
    b = K.variable(RNG.normal(0, 0.5, (4 * H,)), dtype=dtype)

    h0 = K.placeholder((batch, H), dtype=dtype)
    _, outs, states = K.rnn(lstm_step(w, u, b, H), x, [h0, h0 * 0.5])
    return [x, h0], [outs, states[1]]


def _epilogues(f: Any) -> list[bool]:
    """For each prepackable matmul of every scan body: whether it has an epilogue."""
    module = pipeline.lower(f.module.clone(), "graph")
    found = []
    for scan in (op for op in module.walk() if isinstance(op, ScanOp)):
        for op in scan.body.block.ops:
            if isinstance(op, MatMulOp) and op.rhs.owner is not None:
                use = next(iter(op.result.uses)).operation
                product = use.results[0] if len(use.results) == 1 else op.result
                found.append(scan_epilogue.find(product, op) is not None)
    return found


@pytest.mark.parametrize(("batch", "dtype"), [(19, "float64"), (None, "float64"), (3, "float32")])
def test_lstm_gates_run_by_row_blocks_give_the_interpreters_values(batch, dtype) -> None:
    inputs, outputs = _lstm(batch, dtype)
    f = K.function(inputs, outputs)
    assert _epilogues(f) == [True]
    module, captures = trace.extract(inputs, outputs, "test")
    tol = 1e-12 if dtype == "float64" else 2e-6
    for rows in [batch] if batch else [1, 8, 17]:
        xs = RNG.standard_normal((rows, 4, D)).astype(dtype)
        hs = RNG.standard_normal((rows, H)).astype(dtype)
        want = interp.run_module(module, [xs, hs, *(c.storage for c in captures)])
        for got, expected in zip(f([xs, hs]), want, strict=True):
            np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def test_a_product_read_by_anything_else_runs_on_its_own() -> None:
    """The step also returns z's first gate itself: no epilogue, same values."""
    x, h0 = K.placeholder((3, 4, D), dtype="float64"), K.placeholder((3, H), dtype="float64")
    u = K.variable(RNG.normal(0, 0.5, (H, 2 * H)), dtype="float64")
    w = K.variable(RNG.normal(0, 0.5, (D, 2 * H)), dtype="float64")

    def step(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        z = K.dot(xt, w) + K.dot(s[0], u)
        h = K.tanh(z[:, :H]) * K.sigmoid(z[:, H:])
        return K.concatenate([z, h], axis=1), [h]

    _, outs, _ = K.rnn(step, x, [h0])
    f = K.function([x, h0], [outs])
    assert _epilogues(f) == [False]
    xs, hs = RNG.standard_normal((3, 4, D)), RNG.standard_normal((3, H))
    module, captures = trace.extract([x, h0], [outs], "test")
    (want,) = interp.run_module(module, [xs, hs, *(c.storage for c in captures)])
    np.testing.assert_allclose(f([xs, hs])[0], want, rtol=1e-12, atol=1e-12)


def test_no_epilogue_when_an_op_between_reads_what_the_gates_overwrite() -> None:
    """A matmul between the product and the gates reads the old h, which the gates write
    in place: the gates must not run early, where the product is."""
    x, h0 = K.placeholder((3, 4, D), dtype="float64"), K.placeholder((3, H), dtype="float64")
    u = K.variable(RNG.normal(0, 0.5, (H, 2 * H)), dtype="float64")
    v = K.variable(RNG.normal(0, 0.5, (H, H)), dtype="float64")
    w = K.variable(RNG.normal(0, 0.5, (D, 2 * H)), dtype="float64")

    def step(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        z = K.dot(xt, w) + K.dot(s[0], u)
        mixed = K.dot(s[0], v)
        h = K.tanh(z[:, :H]) * K.sigmoid(z[:, H:])
        return h + mixed, [h]

    _, outs, _ = K.rnn(step, x, [h0])
    f = K.function([x, h0], [outs])
    assert _epilogues(f) == [False, False]  # h @ U, h @ V
    xs, hs = RNG.standard_normal((3, 4, D)), RNG.standard_normal((3, H))
    module, captures = trace.extract([x, h0], [outs], "test")
    (want,) = interp.run_module(module, [xs, hs, *(c.storage for c in captures)])
    np.testing.assert_allclose(f([xs, hs])[0], want, rtol=1e-12, atol=1e-12)
