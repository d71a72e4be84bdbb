"""Buffers read or written in place: slices that elementwise loops read as strided views
(`strided_views`), and scan carries computed straight into their buffers
(`in_place.carries_in_place`). Each case checks which choice is made and that the values
are NumPy's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from aotk import backend as K
from aotk import interp
from aotk.dialect import strided_views, trace
from aotk.dialect.in_place import carries_in_place
from aotk.dialect.scan import ScanOp
from aotk.dialect.scan_loop import direct_outputs
from aotk.dialect.shape import SliceOp
from aotk.lowering import pipeline

RNG = np.random.default_rng(7)


pytestmark = pytest.mark.usefixtures("float64")  # see conftest.py


def _graph(f: Any) -> Any:
    return pipeline.lower(f.module.clone(), "graph")


def _views(f: Any) -> list[bool]:
    """For each slice of `f`'s graph, in order: whether it is lowered as a view."""
    return [strided_views.is_view(op) for op in _graph(f).walk() if isinstance(op, SliceOp)]


def test_gate_slices_are_read_in_place_with_their_strides() -> None:
    """An LSTM's gate slices of one product, one of them with a step of 2, and a slice
    of a 3-D tensor on two axes: every one is a view, at any batch."""
    x = K.placeholder((None, 6))
    w = K.variable(RNG.standard_normal((6, 20)))
    z = K.dot(x, w)
    gates = K.sigmoid(z[:, :4]) * K.tanh(z[:, 4:8]) + z[:, 8:16:2] - z[:, 16:]
    cube = K.reshape(z, (-1, 4, 5))
    corner = K.exp(cube[:, 1:3, 2:4])
    f = K.function([x], [gates, corner])
    assert _views(f) == [True] * 5
    for batch in (0, 1, 5):
        xs = RNG.standard_normal((batch, 6))
        zs = xs @ K.get_value(w)
        want = 1 / (1 + np.exp(-zs[:, :4])) * np.tanh(zs[:, 4:8]) + zs[:, 8:16:2] - zs[:, 16:]
        got_gates, got_corner = f([xs])
        np.testing.assert_allclose(got_gates, want, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(
            got_corner, np.exp(zs.reshape(-1, 4, 5)[:, 1:3, 2:4]), rtol=1e-13, atol=0
        )


def test_a_slice_with_any_other_use_is_a_copy() -> None:
    """Returned, or read by a matmul, or reversed: the dense copy stays."""
    x = K.placeholder((3, 8))
    w = K.variable(RNG.standard_normal((4, 2)))
    left = x[:, :4]
    backwards = x[:, ::-1]
    f = K.function([x], [left, K.dot(x[:, 4:], w), backwards * 2.0, K.exp(left)])
    assert _views(f) == [False, False, False]
    xs = RNG.standard_normal((3, 8))
    got = f([xs])
    want = [xs[:, :4], xs[:, 4:] @ K.get_value(w), xs[:, ::-1] * 2, np.exp(xs[:, :4])]
    for g, v in zip(got, want, strict=True):
        np.testing.assert_allclose(g, v, rtol=1e-13)


def test_a_slice_of_a_variable_updated_in_place_is_copied_before_the_update() -> None:
    """a <- a * a[0:1, :]: a view would read row 0 after the update overwrote it."""
    a0 = RNG.standard_normal((3, 4))
    a = K.variable(a0)
    f = K.function([], [], [K.update(a, a * a[0:1, :])])
    f([])
    np.testing.assert_allclose(K.get_value(a), a0 * a0[0:1, :], rtol=1e-15)


def test_a_reversed_sequence_is_scanned_in_place() -> None:
    """go_backwards reverses the inputs by a slice of step -1; the scan reads its rows
    where they are. A slice on another axis (which the time-major transpose reads) and
    a slice of an initial state are copies."""
    x, h0 = K.placeholder((None, None, 3)), K.placeholder((None, 3))
    _, outs, _ = K.rnn(lambda xt, s: (s[0] * 0.5 + xt, [s[0] * 0.5 + xt]), x, [h0], True)
    _, narrow, _ = K.rnn(lambda xt, s: (s[0] + xt, [s[0] + xt]), x[:, :, 1:], [h0[:, 1:]])
    f = K.function([x, h0], [outs, narrow])
    assert _views(f) == [True, False, False]
    for batch, steps in [(2, 4), (1, 1), (3, 0)]:
        xs, hs = RNG.standard_normal((batch, steps, 3)), RNG.standard_normal((batch, 3))
        want, h, sums = [], hs, []
        for t in reversed(range(steps)):
            h = h * 0.5 + xs[:, t]
            want.append(h)
        acc = hs[:, 1:]
        for t in range(steps):
            acc = acc + xs[:, t, 1:]
            sums.append(acc)
        got, got_narrow = f([xs, hs])
        shape = (batch, 0, 3)
        np.testing.assert_allclose(got, np.stack(want, 1) if want else np.zeros(shape), rtol=1e-14)
        np.testing.assert_allclose(
            got_narrow, np.stack(sums, 1) if sums else np.zeros((batch, 0, 2)), rtol=1e-14
        )


Step = Callable[[Any, list[Any]], tuple[Any, list[Any]]]


def _scan(step: Step, n_states: int) -> tuple[Any, set[int]]:
    """K.rnn of `step` over (None, None, 4) inputs and `n_states` (None, 4) states: the
    function (inputs, states) -> (outputs, final states), and its carries in place."""
    x = K.placeholder((None, None, 4))
    inits = [K.placeholder((None, 4)) for _ in range(n_states)]
    _, outputs, states = K.rnn(step, x, inits)
    f = K.function([x, *inits], [outputs, *states])
    (scan,) = [op for op in _graph(f).walk() if isinstance(op, ScanOp)]
    return f, carries_in_place(scan, set())


def _reference(step: Step, xs: np.ndarray, inits: list[np.ndarray]) -> list[np.ndarray]:
    """The same step run by NumPy (`step` written on operators NumPy also has)."""
    states, outs = list(inits), []
    for t in range(xs.shape[1]):
        out, states = step(xs[:, t], states)
        outs.append(out)
    return [np.stack(outs, axis=1), *states]


def _check(f: Any, step: Step, n_states: int) -> None:
    for batch, steps in [(3, 5), (1, 2)]:
        xs = RNG.standard_normal((batch, steps, 4))
        inits = [RNG.standard_normal((batch, 4)) for _ in range(n_states)]
        for got, want in zip(f([xs, *inits]), _reference(step, xs, inits), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


def _lstm_like(x: Any, s: list[Any]) -> tuple[Any, list[Any]]:
    h, c = s
    c2 = c * x + h * 0.5
    h2 = c2 * 2.0
    return h2 - 1.0, [h2, c2]


def _row_broadcast(x: Any, s: list[Any]) -> tuple[Any, list[Any]]:
    """The new state reads the old one's row 0 for every row (a strided view of it)."""
    (c,) = s
    c2 = c * c[0:1, :] * 0.5 + x
    return c2, [c2]


def _swap(x: Any, s: list[Any]) -> tuple[Any, list[Any]]:
    a, b = s
    return a + x, [b * 1.5, a * 0.5 + x]


def _twice(x: Any, s: list[Any]) -> tuple[Any, list[Any]]:
    a, b = s
    new = a * 0.5 + b + x
    return new, [new, new]


MIX = RNG.standard_normal((4, 4))


def _read_after(x: Any, s: list[Any]) -> tuple[Any, list[Any]]:
    """A matmul reads the old state after the new one is computed (in another loop)."""
    (c,) = s
    c2 = c * 0.5 + x
    return _mix(c2) + _mix(c), [c2]


def _mix(v: Any) -> Any:
    return v @ MIX if isinstance(v, np.ndarray) else K.dot(v, K.constant(MIX))


def _old_as_output(x: Any, s: list[Any]) -> tuple[Any, list[Any]]:
    (c,) = s
    return c, [c * 0.5 + x]


@pytest.mark.parametrize(
    ("step", "n_states", "chosen"),
    [
        (_lstm_like, 2, {0, 1}),
        (_row_broadcast, 1, set()),
        (_swap, 2, {1}),  # new a is written after old a is read, by new b's op
        (_twice, 2, set()),
        (_read_after, 1, set()),
        (_old_as_output, 1, set()),
    ],
)
def test_carries_computed_in_place_only_when_safe(step: Step, n_states: int, chosen: set[int]):
    f, in_place = _scan(step, n_states)
    assert in_place == chosen
    _check(f, step, n_states)


def test_step_outputs_computed_in_their_rows_give_the_interpreters_gradients() -> None:
    """An LSTM's gradient: the forward scan saves h @ U (a matmul's result: computed in
    its row of the stack) and the old states (copied); the backward scan stacks its
    gates' gradient (a concat: computed in its row). Values as the interpreter's."""
    x = K.placeholder((3, 5, 4))
    w, u = K.variable(RNG.normal(0, 0.4, (4, 24))), K.variable(RNG.normal(0, 0.4, (6, 24)))

    def step(xt: Any, s: list[Any]) -> tuple[Any, list[Any]]:
        h, c = s
        z = K.dot(xt, w) + K.dot(h, u)
        i, f, g, o = (z[:, 6 * n : 6 * n + 6] for n in range(4))
        c2 = K.sigmoid(f) * c + K.sigmoid(i) * K.tanh(g)
        h2 = K.sigmoid(o) * K.tanh(c2)
        return h2, [h2, c2]

    zeros = K.zeros((3, 6))
    last, _, _ = K.rnn(step, x, [zeros, zeros])
    loss = K.sum(K.square(last))
    outputs = [loss, *K.gradients(loss, [w, u])]
    f = K.function([x], outputs)
    scans = [op for op in _graph(f).walk() if isinstance(op, ScanOp)]
    assert [sorted(direct_outputs(s)) for s in scans] == [[3], [0]]
    module, captures = trace.extract([x], outputs, "test")
    xs = RNG.standard_normal((3, 5, 4))
    want = interp.run_module(module, [xs, *(c.storage for c in captures)])
    for got, expected in zip(f([xs]), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-13)
