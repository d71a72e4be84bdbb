"""Recurrent steps run by blocks of rows (`scan_rows`): which scans are split, and their
values against the interpreter's, forward and through their gradient, for batches of
whole and partial blocks, in float32 and float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from graphs import lstm_step
from xdsl.dialects.builtin import f32, f64

from aotk import backend as K
from aotk import interp
from aotk.dialect import scan_rows, trace
from aotk.dialect.scan import ScanOp
from aotk.kernels import matmul_prepacked
from aotk.lowering import pipeline

RNG = np.random.default_rng(23)
T, D, H = 5, 6, 7


def _split(outputs: list[Any], inputs: list[Any]) -> list[int | None]:
    """For each scan of the graph: its rows per block (-1: chosen at run time), None
    when it runs whole."""
    module, _ = trace.extract(inputs, outputs, "test")
    pipeline.lower(module, "graph")
    found = []
    for scan in (op for op in module.walk() if isinstance(op, ScanOp)):
        split = scan_rows.row_split(scan)
        found.append(None if split is None else split.per_block or -1)
    return found


def _check(inputs: list[Any], outputs: list[Any], values: list[np.ndarray], tol: float) -> None:
    f = K.function(inputs, outputs)
    module, captures = trace.extract(inputs, outputs, "test")
    want = interp.run_module(module, [*values, *(c.storage for c in captures)])
    for got, expected in zip(f(values), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def _weights(dtype: str, *shapes: tuple[int, ...]) -> list[Any]:
    return [K.variable(RNG.normal(0, 0.4, s), dtype=dtype) for s in shapes]


def _lstm(batch: int | None, dtype: str) -> tuple[list[Any], Any, list[Any]]:
    """An LSTM over x (batch, T, D) from h0, and its weights."""
    x, h0 = K.placeholder((batch, T, D), dtype=dtype), K.placeholder((batch, H), dtype=dtype)
    w, u, b = _weights(dtype, (D, 4 * H), (H, 4 * H), (4 * H,))

    _, outs, states = K.rnn(lstm_step(w, u, b, H), x, [h0, h0 * 0.5])
    return [x, h0], [outs, states[1]], [w, u, b]


def _values(batch: int, dtype: str) -> list[np.ndarray]:
    return [RNG.standard_normal(s).astype(dtype) for s in ((batch, T, D), (batch, H))]


def _tolerance(dtype: str) -> float:
    return 1e-12 if dtype == "float64" else 3e-6


@pytest.mark.parametrize(("batch", "dtype"), [(19, "float64"), (40, "float32"), (33, "float32")])
def test_an_lstm_runs_by_blocks_of_rows_with_the_interpreters_values(batch, dtype) -> None:
    inputs, outputs, _ = _lstm(batch, dtype)
    tile = matmul_prepacked.row_tile(f64 if dtype == "float64" else f32)
    (rows,) = _split(outputs, inputs)
    assert rows is not None and rows % tile == 0 and rows < batch
    _check(inputs, outputs, _values(batch, dtype), _tolerance(dtype))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_the_gradient_through_the_steps_runs_by_blocks_too(dtype) -> None:
    """The backward scan (a concatenation of the gates' gradients times U^T) is row-wise
    as well; the weights' gradients, summed over rows, are hoisted out of it."""
    batch = 21
    inputs, outputs, weights = _lstm(batch, dtype)
    loss = K.sum(K.square(outputs[0])) + K.sum(outputs[1])
    grads = K.gradients(loss, [*weights, inputs[0]])
    assert all(r is not None for r in _split(grads, inputs))
    _check(inputs, grads, _values(batch, dtype), 1e-11 if dtype == "float64" else 2e-4)


def test_a_gru_like_step_with_a_concatenation_and_a_broadcast_splits() -> None:
    x = K.placeholder((24, T, D), dtype="float64")
    h0 = K.placeholder((24, H), dtype="float64")
    w, u, b = _weights("float64", (D, 2 * H), (2 * H, 2 * H), (2 * H,))

    def step(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        both = K.concatenate([s[0], K.tanh(s[0])], axis=1)
        z = K.dot(xt, w) + K.dot(both, u) + b
        h = K.sigmoid(z[:, :H]) * s[0] + K.tanh(z[:, H:])
        return h, [h]

    _, outs, _ = K.rnn(step, x, [h0])
    ((rows,),) = [_split([outs], [x, h0])]
    assert rows is not None and rows < 24
    _check([x, h0], [outs], [RNG.standard_normal((24, T, D)), RNG.standard_normal((24, H))], 1e-12)


def test_a_keras_gru_step_slicing_its_weight_splits_forward_and_back() -> None:
    """Keras's GRU slices its recurrent weight inside the step: the slices move before
    the loop (`aotk-hoist-scan-matmuls`), and the step is row-wise; so is the gradient's,
    once the recurrent weight's gradient (a concatenation of the slices' gradients)
    leaves it (`aotk-scan-accumulations`)."""
    x = K.placeholder((None, T, D), dtype="float64")
    h0 = K.placeholder((None, H), dtype="float64")
    w, u = _weights("float64", (D, 3 * H), (H, 3 * H))

    def step(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        xz = K.dot(xt, w)
        rz = K.sigmoid(xz[:, : 2 * H] + K.dot(s[0], u[:, : 2 * H]))
        r, z = rz[:, :H], rz[:, H:]
        hh = K.tanh(xz[:, 2 * H :] + K.dot(r * s[0], u[:, 2 * H :]))
        h = z * s[0] + (1 - z) * hh
        return h, [h]

    _, outs, _ = K.rnn(step, x, [h0])
    assert _split([outs], [x, h0]) == [-1]
    assert _split(K.gradients(K.sum(outs), [u]), [x, h0]) == [-1, -1]
    values = [RNG.standard_normal((20, T, D)), RNG.standard_normal((20, H))]
    _check([x, h0], [outs], values, 1e-12)
    grads = K.gradients(K.sum(outs * outs), [x, w, u])
    _check([x, h0], grads, values, 1e-11)


def _step_scan(step: Any, batch: int | None, width: int = H) -> tuple[list[Any], Any]:
    x = K.placeholder((batch, T, width), dtype="float64")
    h0 = K.placeholder((batch, width), dtype="float64")
    _, outs, _ = K.rnn(step, x, [h0])
    return [x, h0], outs


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_rows_known_at_the_call_are_split_then(dtype) -> None:
    """Blocks chosen at run time: 19 rows (several, the last partial), 5 (one), none."""
    inputs, outputs, _ = _lstm(None, dtype)
    assert _split(outputs, inputs) == [-1]
    f = K.function(inputs, outputs)
    module, captures = trace.extract(inputs, outputs, "test")
    for rows in (19, 5, 0):
        values = _values(rows, dtype)
        want = interp.run_module(module, [*values, *(c.storage for c in captures)])
        for got, expected in zip(f(values), want, strict=True):
            assert got.shape == expected.shape
            np.testing.assert_allclose(
                got, expected, rtol=_tolerance(dtype), atol=_tolerance(dtype)
            )


def test_a_sequence_of_one_row_against_a_state_of_many_runs_whole() -> None:
    """Steps of one row broadcast against a state of 6: not every buffer has the same
    rows at run time, so one block runs all of each, as the scan whole would."""
    inputs, outputs, _ = _lstm(None, "float64")
    xs = RNG.standard_normal((1, T, D))
    hs = RNG.standard_normal((6, H))
    module, captures = trace.extract(inputs, outputs, "test")
    want = interp.run_module(module, [xs, hs, *(c.storage for c in captures)])
    got = K.function(inputs, outputs)([xs, hs])
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_steps_that_mix_rows_or_too_few_rows_run_whole() -> None:
    u = K.variable(RNG.normal(0, 0.4, (H, H)), dtype="float64")

    def mean_of_rows(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        h = K.tanh(xt + K.dot(s[0], u) - K.mean(s[0], axis=0, keepdims=True))
        return h, [h]

    def plain(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        h = K.tanh(xt + K.dot(s[0], u))
        return h, [h]

    cases = [(mean_of_rows, 32), (plain, 4)]
    for step, batch in cases:
        inputs, outs = _step_scan(step, batch)
        assert _split([outs], inputs) == [None], step.__name__
        values = [RNG.standard_normal((batch, T, H)), RNG.standard_normal((batch, H))]
        _check(inputs, [outs], values, 1e-12)


def _dropout_lstm(batch: int | None, dtype: str) -> tuple[list[Any], list[Any], list[Any]]:
    """An LSTM whose input and state are scaled by masks made once, outside the steps
    (as a Keras cell's dropout masks): placeholders, so that both sides read the same."""
    inputs, _, weights = _lstm(batch, dtype)
    x, h0 = inputs
    keep_x, keep_h = (K.placeholder((batch, n), dtype=dtype) for n in (D, H))
    w, u, b = weights
    plain = lstm_step(w, u, b, H)

    def step(xt: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        return plain(xt * keep_x, [states[0] * keep_h, states[1]])

    _, outs, states = K.rnn(step, x, [h0, h0 * 0.5])
    return [x, h0, keep_x, keep_h], [outs, states[1]], weights


def _masks(batch: int, dtype: str) -> list[np.ndarray]:
    return [(RNG.random((batch, n)) > 0.3).astype(dtype) / 0.7 for n in (D, H)]


@pytest.mark.parametrize(("batch", "dtype"), [(40, "float32"), (None, "float64")])
def test_masks_from_outside_are_read_by_rows_forward_and_back(batch, dtype) -> None:
    """Each block reads its rows of a (rows, features) value from outside the steps:
    forward, and in the backward scan, which reads the masks too. Rows known at the
    call: 19 (blocks, the last partial), 5 (one), and forward, 19 against masks of one
    row (which broadcast: one block runs each buffer's own rows)."""
    inputs, outputs, weights = _dropout_lstm(batch, dtype)
    loss = K.sum(K.square(outputs[0])) + K.sum(outputs[1])
    grads = K.gradients(loss, [*weights, inputs[0]])
    assert all(r is not None for r in _split([*outputs, *grads], inputs))
    tol = _tolerance(dtype)
    for rows in [batch] if batch else [19, 5]:
        values = [*_values(rows, dtype), *_masks(rows, dtype)]
        _check(inputs, outputs, values, tol)
        _check(inputs, grads, values, 1e-11 if dtype == "float64" else 2e-4)
    if batch is None:
        _check(inputs, outputs, [*_values(19, dtype), *_masks(1, dtype)], tol)


def test_a_masked_rnn_reshapes_its_mask_by_rows_and_splits() -> None:
    """K.rnn's mask: each step's (rows,) slice, reshaped to (rows, 1), picks the new or
    the old state; the reshape keeps the rows, so the steps still split."""
    inputs, _, (w, u, b) = _lstm(None, "float64")
    mask = K.placeholder((None, T), dtype="float64")
    _, outs, states = K.rnn(lstm_step(w, u, b, H), inputs[0], [inputs[1]] * 2, mask=mask)
    assert _split([outs, states[1]], [*inputs, mask]) == [-1]
    for rows in (19, 5):
        keep = (RNG.random((rows, T)) > 0.4).astype("float64")
        _check([*inputs, mask], [outs, states[1]], [*_values(rows, "float64"), keep], 1e-12)


def test_a_value_from_outside_read_by_rows_and_as_a_weight_keeps_the_steps_whole() -> None:
    """`w` of (rows, n) is read by rows (against the step's input) and as the weight of
    the state's matmul, which needs all of it: a block's rows of it would not serve."""
    n = 16
    w = K.variable(RNG.normal(0, 0.4, (n, n)), dtype="float64")

    def step(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        h = K.tanh(xt * w + K.dot(s[0], w))  # row i of w, then all of w
        return h, [h]

    inputs, outs = _step_scan(step, n, n)
    assert _split([outs], inputs) == [None]
    values = [RNG.standard_normal((n, T, n)), RNG.standard_normal((n, n))]
    _check(inputs, [outs], values, 1e-12)
