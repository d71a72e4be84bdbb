"""K.gradients of broadcasting ops whose dims are unknown when traced (None).

A dim declared 1 is summed over; a None dim cannot be (the trace does not know whether it
will broadcast), so the gradient assumes it does not, and the call checks that: a
broadcast there is refused with a clear error, never answered with a cotangent of the
broadcast shape.
"""

from __future__ import annotations

import numpy as np
import pytest

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.dialect.identity import SameShapeOp
from aotk.lowering import pipeline

pytestmark = pytest.mark.usefixtures("float64")  # see conftest.py

RNG = np.random.default_rng(3)
BROADCAST = r"broadcast along axis 0"


def _tanh_product(a_shape: tuple[int | None, ...]) -> tuple[list, list]:
    """Placeholders a (`a_shape`) and b (None, 3), and the gradients of sum(tanh(a * b))."""
    a, b = K.placeholder(a_shape), K.placeholder((None, 3))
    return [a, b], K.gradients(K.sum(K.tanh(a * b)), [a, b])


def _expected(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """d/da and d/db of sum(tanh(a * b)), a summed down to its own rows."""
    d = 1.0 - np.tanh(a * b) ** 2
    return (d * b).sum(axis=0, keepdims=True) if len(a) == 1 else d * b, d * a


def _both(inputs: list, outputs: list, values: list[np.ndarray]) -> list[list[np.ndarray]]:
    """The outputs compiled, then interpreted on the traced module."""
    module, captures = trace.extract(inputs, outputs)
    interpreted = interp.run_module(module, [*values, *(c.storage for c in captures)])
    return [list(K.function(inputs, outputs)(values)), list(interpreted)]


def test_a_dim_declared_one_is_summed_over() -> None:
    inputs, grads = _tanh_product((1, 3))
    a, b = RNG.standard_normal((1, 3)), RNG.standard_normal((5, 3))
    for got in _both(inputs, grads, [a, b]):
        for g, want in zip(got, _expected(a, b), strict=True):
            assert g.shape == want.shape
            np.testing.assert_allclose(g, want, rtol=1e-12)


@pytest.mark.parametrize("rows", [4, 1, 0])
def test_equal_unknown_dims_give_the_elementwise_gradient(rows: int) -> None:
    inputs, grads = _tanh_product((None, 3))
    a, b = RNG.standard_normal((rows, 3)), RNG.standard_normal((rows, 3))
    for got in _both(inputs, grads, [a, b]):
        for g, want in zip(got, _expected(a, b), strict=True):
            assert g.shape == (rows, 3)
            np.testing.assert_allclose(g, want, rtol=1e-12)


def test_a_broadcast_of_an_unknown_dim_is_refused_at_the_call() -> None:
    """a of 1 row against b of 5: forward it broadcasts; its gradient would need a sum
    the trace could not know of, so the call refuses, compiled and interpreted."""
    inputs, grads = _tanh_product((None, 3))
    a, b = RNG.standard_normal((1, 3)), RNG.standard_normal((5, 3))
    with pytest.raises(ValueError, match=r"shapes \(1, 3\), \(5, 3\) do not fit: .*" + BROADCAST):
        K.function(inputs, grads)([a, b])
    module, captures = trace.extract(inputs, grads)
    with pytest.raises(ValueError, match=BROADCAST):
        interp.run_module(module, [a, b, *(c.storage for c in captures)])
    forward = K.function(inputs, [K.tanh(inputs[0] * inputs[1])])([a, b])[0]
    np.testing.assert_allclose(forward, np.tanh(a * b), rtol=1e-12)


def test_every_broadcasting_rule_checks_its_unknown_dims() -> None:
    """add, sub, mul, div, pow, maximum and select (K.switch): each operand of an unknown
    dim gets the check (its cotangent stays elementwise), and a broadcast there is
    refused, of either operand."""
    a, b = K.placeholder((None, 3)), K.placeholder((None, 3))
    terms = [a + b, a - b, a * b, a / (b * b + 1), K.pow(K.abs(a) + 1, b), K.maximum(a, b)]
    terms.append(K.switch(a > b, a, b))
    grads = K.gradients(sum(K.sum(t) for t in terms), [a, b])
    module, _ = trace.extract([a, b], grads)
    assert any(isinstance(op, SameShapeOp) for op in module.walk())
    f = K.function([a, b], grads)
    ok = [RNG.standard_normal((4, 3)) for _ in range(2)]
    assert [g.shape for g in f(ok)] == [(4, 3), (4, 3)]
    for wrong in ([ok[0][:1], ok[1]], [ok[0], ok[1][:1]]):
        with pytest.raises(ValueError, match=BROADCAST):
            f(wrong)


def test_the_check_leaves_nothing_in_compiled_code() -> None:
    inputs, grads = _tanh_product((None, 3))
    module, _ = trace.extract(inputs, grads)
    traced = sum(isinstance(op, SameShapeOp) for op in module.walk())
    pipeline.lower(module, stop_after="graph")
    assert traced == 2
    assert not any(isinstance(op, SameShapeOp) for op in module.walk())


def _masked_rnn() -> tuple[list, object, object]:
    """x (None, 5, 4) and a mask m (None, 4) that every step multiplies the state by; W a
    variable. Returns the placeholders, W and the loss sum(outputs)."""
    x, m = K.placeholder((None, 5, 4)), K.placeholder((None, 4))
    w = K.variable(RNG.standard_normal((4, 4)) * 0.3)

    def step(inp, states):
        h = K.tanh(K.dot(inp, w) + states[0] * m)
        return h, [h]

    _, outputs, _ = K.rnn(step, x, [K.zeros_like(x[:, 0, :])])
    return [x, m], w, K.sum(outputs)


def _masked_rnn_loss(x: np.ndarray, m: np.ndarray, w: np.ndarray) -> float:
    h, total = np.zeros((len(x), 4)), 0.0
    for t in range(x.shape[1]):
        h = np.tanh(x[:, t] @ w + h * m)
        total += h.sum()
    return total


def _central_difference(f, at: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(at)
    for i in np.ndindex(at.shape):
        step = np.zeros_like(at)
        step[i] = eps
        grad[i] = (f(at + step) - f(at - step)) / (2 * eps)
    return grad


def test_a_scan_computes_the_gradients_asked_for_past_a_broadcast_it_was_not_asked_for() -> None:
    """A mask of 1 row against 19 rows of steps broadcasts in the forward pass. Its
    gradient would need a sum over the unknown dim, but only W's and x's are asked for:
    the backward scan carries no cotangent for the mask, so nothing refuses the call."""
    (x, m), w, loss = _masked_rnn()
    grads = K.gradients(loss, [w, x])
    xv, mv = RNG.standard_normal((19, 5, 4)), RNG.standard_normal((1, 4))
    wv = K.get_value(w)
    want_w = _central_difference(lambda v: _masked_rnn_loss(xv, mv, v), wv)
    want_x = _central_difference(lambda v: _masked_rnn_loss(v, mv, wv), xv)
    for got_w, got_x in _both([x, m], grads, [xv, mv]):
        np.testing.assert_allclose(got_w, want_w, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(got_x, want_x, rtol=1e-6, atol=1e-7)


def test_a_scan_refuses_the_gradient_of_a_broadcast_asked_for() -> None:
    (x, m), w, loss = _masked_rnn()
    f = K.function([x, m], K.gradients(loss, [w, m]))
    xv = RNG.standard_normal((19, 5, 4))
    with pytest.raises(ValueError, match=r"\(19, 4\) for an operand of shape \(1, 4\).*axis 0"):
        f([xv, RNG.standard_normal((1, 4))])
    mv = RNG.standard_normal((19, 4))
    want_m = _central_difference(lambda v: _masked_rnn_loss(xv, v, K.get_value(w)), mv)
    np.testing.assert_allclose(f([xv, mv])[1], want_m, rtol=1e-6, atol=1e-7)
