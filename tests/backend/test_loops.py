"""K.rnn, map_fn, foldl, foldr: compiled loops against NumPy loops, and their gradients."""

from __future__ import annotations

import time

import numpy as np
import pytest

from aotk import backend as K
from aotk import host_code, interp
from aotk.dialect import trace
from aotk.dialect.scan import ScanOp

RNG = np.random.default_rng(0)
B, T, D, H = 3, 5, 4, 6


pytestmark = pytest.mark.usefixtures("float64")  # see conftest.py


def _weights():
    return RNG.standard_normal((D, H)) * 0.4, RNG.standard_normal((H, H)) * 0.4


def _simple_rnn(wx, wh):
    def step(x_t, states):
        h = K.tanh(K.dot(x_t, wx) + K.dot(states[0], wh))
        return h * 2.0, [h]

    return step


def _numpy_rnn(xs, h0, wx, wh, mask=None, backwards=False):
    """The reference's loop, written out."""
    h, out = h0, np.zeros((xs.shape[0], wh.shape[0]))
    outputs = []
    steps = range(xs.shape[1])
    for t in reversed(steps) if backwards else steps:
        new_h = np.tanh(xs[:, t] @ wx + h @ wh)
        new_out = 2.0 * new_h
        if mask is not None:
            keep = mask[:, t : t + 1].astype(bool)
            new_out, new_h = np.where(keep, new_out, out), np.where(keep, new_h, h)
        h, out = new_h, new_out
        outputs.append(out)
    return outputs[-1], np.stack(outputs, axis=1), h


@pytest.mark.parametrize("backwards", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_rnn_matches_the_reference_loop(backwards, masked):
    wxv, whv = _weights()
    x, h0 = K.placeholder(shape=(None, None, D)), K.placeholder(shape=(None, H))
    mask = K.placeholder(shape=(None, None)) if masked else None
    last, outputs, states = K.rnn(
        _simple_rnn(K.variable(wxv), K.variable(whv)), x, [h0], go_backwards=backwards, mask=mask
    )
    inputs = [x, h0] + ([mask] if masked else [])
    f = K.function(inputs, [last, outputs, states[0]])
    for batch, steps in [(B, T), (2, 9)]:  # one compiled function, any batch and length
        xs, hs = RNG.standard_normal((batch, steps, D)), RNG.standard_normal((batch, H))
        ms = (RNG.random((batch, steps)) > 0.3).astype(np.float64)
        got = f([xs, hs] + ([ms] if masked else []))
        want = _numpy_rnn(xs, hs, wxv, whv, ms if masked else None, backwards)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


def test_recurrent_weights_of_several_tiles_forward_and_gradients():
    """A recurrent weight of several register tiles, packed once per call (U, and U^T in
    the backward scan): 19 rows leave a partial row tile, 40 columns a partial sliver.
    The output against the reference loop, the gradients against the interpreter."""
    batch, hid = 19, 40
    wxv, whv = RNG.standard_normal((D, hid)) * 0.3, RNG.standard_normal((hid, hid)) * 0.3
    x, h0 = K.placeholder(shape=(None, None, D)), K.placeholder(shape=(None, hid))
    wx, wh = K.placeholder(shape=(D, hid)), K.placeholder(shape=(hid, hid))
    last, outputs, _ = K.rnn(_simple_rnn(wx, wh), x, [h0])
    grads = K.gradients(K.sum(K.square(outputs)), [wx, wh, h0])
    f = K.function([x, h0, wx, wh], [last, *grads])
    values = [RNG.standard_normal((batch, 6, D)), RNG.standard_normal((batch, hid)), wxv, whv]
    got = f(values)
    want = _numpy_rnn(values[0], values[1], wxv, whv)[0]
    np.testing.assert_allclose(got[0], want, rtol=1e-12, atol=1e-12)
    for g, w in zip(got[1:], interp.run_module(f.module, values)[1:], strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def test_rnn_is_one_loop_whatever_the_length():
    wx, wh = (K.variable(w) for w in _weights())
    sizes = []
    for steps in (10, 1000):
        x, h0 = K.placeholder(shape=(2, steps, D)), K.placeholder(shape=(2, H))
        last, _, _ = K.rnn(_simple_rnn(wx, wh), x, [h0])
        module, _ = trace.extract([x, h0], [last])
        sizes.append(len(list(module.walk())))
        assert sum(isinstance(op, ScanOp) for op in module.walk()) == 1
    assert sizes[0] == sizes[1]


def test_unroll_gives_the_same_result():
    wxv, whv = _weights()
    x, h0 = K.placeholder(shape=(B, T, D)), K.placeholder(shape=(B, H))
    step = _simple_rnn(K.variable(wxv), K.variable(whv))
    rolled = K.rnn(step, x, [h0])
    unrolled = K.rnn(step, x, [h0], unroll=True)
    module, _ = trace.extract([x, h0], [unrolled[1]])
    assert not any(isinstance(op, ScanOp) for op in module.walk())
    xs, hs = RNG.standard_normal((B, T, D)), RNG.standard_normal((B, H))
    a = K.function([x, h0], [rolled[1], rolled[2][0]])([xs, hs])
    b = K.function([x, h0], [unrolled[1], unrolled[2][0]])([xs, hs])
    for u, v in zip(a, b, strict=True):
        np.testing.assert_allclose(u, v, rtol=1e-13)


def _finite_difference(f, a, eps=1e-6):
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        up, down = a.copy(), a.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def test_bptt_gradients_match_finite_differences():
    wxv, whv = _weights()
    wx, wh = K.variable(wxv), K.variable(whv)
    x, h0 = K.placeholder(shape=(None, None, D)), K.placeholder(shape=(None, H))
    _, outputs, states = K.rnn(_simple_rnn(wx, wh), x, [h0])
    loss = K.sum(outputs * outputs) + K.sum(states[0])
    grads = K.gradients(loss, [wx, wh, x, h0])
    xs, hs = RNG.standard_normal((2, 4, D)), RNG.standard_normal((2, H))

    def np_loss(wx_, wh_, xs_, hs_):
        _, outs, h = _numpy_rnn(xs_, hs_, wx_, wh_)
        return float(np.sum(outs**2) + h.sum())

    numeric = [
        _finite_difference(lambda w: np_loss(w, whv, xs, hs), wxv),
        _finite_difference(lambda w: np_loss(wxv, w, xs, hs), whv),
        _finite_difference(lambda a: np_loss(wxv, whv, a, hs), xs),
        _finite_difference(lambda a: np_loss(wxv, whv, xs, a), hs),
    ]
    compiled = K.function([x, h0], grads)([xs, hs])
    module, captures = trace.extract([x, h0], grads)
    interpreted = interp.run_module(module, [xs, hs] + [c.storage for c in captures])
    for c, i, n in zip(compiled, interpreted, numeric, strict=True):
        np.testing.assert_allclose(i, n, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(c, i, rtol=1e-11, atol=1e-12)


def _lstm_step(w, u, b):
    def step(x_t, states):
        h, c = states
        z = K.dot(x_t, w) + K.dot(h, u) + b
        i, f, g, o = (z[:, k * H : (k + 1) * H] for k in range(4))
        c_new = K.sigmoid(f) * c + K.sigmoid(i) * K.tanh(g)
        h_new = K.sigmoid(o) * K.tanh(c_new)
        return h_new, [h_new, c_new]

    return step


def test_lstm_gradients_match_finite_differences():
    w, u = K.placeholder(shape=(D, 4 * H)), K.placeholder(shape=(H, 4 * H))
    b, x = K.placeholder(shape=(4 * H,)), K.placeholder(shape=(2, 3, D))
    zeros = K.zeros_like(K.dot(x[:, 0], w[:, :H]))
    _, outputs, (_, c) = K.rnn(_lstm_step(w, u, b), x, [zeros, zeros])
    loss = K.sum(K.square(outputs)) + K.sum(c)
    inputs = [w, u, b, x]
    grads = K.gradients(loss, inputs)
    values = [RNG.standard_normal(t.shape) * 0.5 for t in inputs]
    loss_module, _ = trace.extract(inputs, [loss])

    def f(arrays):
        return float(interp.run_module(loss_module, arrays)[0])

    compiled = K.function(inputs, grads)(values)
    for i, got in enumerate(compiled):

        def g(a, i=i):
            return f([a if j == i else v for j, v in enumerate(values)])

        np.testing.assert_allclose(got, _finite_difference(g, values[i]), rtol=1e-6, atol=1e-8)


def test_lstm_trains_on_a_sequence_task():
    """Predict the sum of the inputs' first channel; the loss must fall."""
    rng = np.random.default_rng(0)  # its own: the module's depends on which tests ran first
    w = K.variable(rng.standard_normal((D, 4 * H)) * 0.3)
    u = K.variable(rng.standard_normal((H, 4 * H)) * 0.3)
    b = K.variable(np.zeros(4 * H))
    v = K.variable(rng.standard_normal((H, 1)) * 0.3)
    x, y = K.placeholder(shape=(None, None, D)), K.placeholder(shape=(None, 1))
    zeros = K.zeros_like(K.dot(x[:, 0], K.variable(np.zeros((D, H)))))
    last, _, _ = K.rnn(_lstm_step(w, u, b), x, [zeros, zeros])
    loss = K.mean(K.square(K.dot(last, v) - y))
    params = [w, u, b, v]
    grads = K.gradients(loss, params)
    updates = [K.update_sub(p, 0.3 * g) for p, g in zip(params, grads, strict=True)]
    step = K.function([x, y], [loss], updates=updates)
    xs = rng.standard_normal((32, 6, D)) * 0.5
    ys = xs[:, :, :1].sum(axis=1)
    losses = [float(step([xs, ys])[0]) for _ in range(60)]
    assert all(np.isfinite(losses))
    assert losses[-1] < 0.5 * losses[0]


def test_map_fn_foldl_foldr():
    elems = K.placeholder(shape=(None,))
    outs = [
        K.map_fn(lambda e: e * e + 1.0, elems),
        K.foldl(lambda acc, e: acc * 2.0 + e, elems),
        K.foldr(lambda acc, e: acc * 2.0 + e, elems),
        K.foldl(lambda acc, e: acc + e, elems, initializer=K.constant(10.0)),
    ]
    f = K.function([elems], outs)
    for values in (np.array([1.0, 2.0, 3.0, 4.0]), np.array([5.0, -1.0])):
        got = f([values])
        np.testing.assert_allclose(got[0], values**2 + 1)
        left = values[0]
        for e in values[1:]:
            left = left * 2 + e
        right = values[-1]
        for e in values[-2::-1]:
            right = right * 2 + e
        np.testing.assert_allclose(got[1], left)
        np.testing.assert_allclose(got[2], right)
        np.testing.assert_allclose(got[3], 10 + values.sum())


def test_rnn_errors():
    x2 = K.placeholder(shape=(None, 4))
    x3 = K.placeholder(shape=(None, None, 4))
    h0 = K.placeholder(shape=(None, 4))
    ident = lambda x_t, states: (x_t, states)  # noqa: E731
    with pytest.raises(ValueError, match=r"K\.rnn: inputs must be at least 3D"):
        K.rnn(ident, x2, [h0])
    with pytest.raises(ValueError, match=r"K\.rnn: a mask needs at least one state"):
        K.rnn(ident, x3, [], mask=K.placeholder(shape=(None, None)))
    with pytest.raises(ValueError, match="unroll=True needs a fixed number of time steps"):
        K.rnn(ident, x3, [h0], unroll=True)
    with pytest.raises(ValueError, match="returned 2 states, expected 1"):
        K.rnn(lambda x_t, states: (x_t, [x_t, x_t]), x3, [h0])
    with pytest.raises(ValueError, match=r"shape \(None, 0, 4\) have no time steps"):
        K.rnn(ident, K.placeholder(shape=(None, 0, 4)), [h0])


@pytest.mark.parametrize("masked", [False, True])
def test_a_tensor_the_step_makes_once_is_the_same_for_every_step(masked):
    """As the reference, K.rnn calls the step function on step 0 before its loop: a
    dropout mask a Keras cell makes on its first call (and keeps) is made there, once
    for the sequence, not drawn again at every step."""
    kept: list = []

    def step(x_t, states):
        if not kept:
            kept.append(K.random_binomial(K.shape(x_t), p=0.5, seed=3))
        return x_t * kept[0], [states[0] + x_t * kept[0]]

    x, h0 = K.placeholder(shape=(None, None, D)), K.placeholder(shape=(None, D))
    mask = K.placeholder(shape=(None, None)) if masked else None
    _, outputs, (total,) = K.rnn(step, x, [h0], mask=mask)
    f = K.function([x, h0] + ([mask] if masked else []), [outputs, total])
    batch, steps = 40, 6
    ones = np.ones((batch, steps, D))
    got, summed = f([ones, np.zeros((batch, D))] + ([np.ones((batch, steps))] if masked else []))
    assert 0.3 < got.mean() < 0.7  # a mask of zeros and ones, about half kept
    for t in range(1, steps):
        np.testing.assert_array_equal(got[:, t], got[:, 0])
    np.testing.assert_array_equal(summed, steps * got[:, 0])


def test_compile_cache_and_time_independent_of_length():
    wx, wh = (K.variable(w) for w in _weights())
    before = host_code.COMPILE_COUNT
    for steps in (10, 1000):
        x, h0 = K.placeholder(shape=(2, None, D)), K.placeholder(shape=(2, H))
        start = time.perf_counter()
        f = K.function([x, h0], [K.rnn(_simple_rnn(wx, wh), x, [h0])[0]])
        del start
        out = f([RNG.standard_normal((2, steps, D)), np.zeros((2, H))])[0]
        assert out.shape == (2, H)
    assert host_code.COMPILE_COUNT - before == 1  # same graph: compiled once


def test_constants_of_a_step_give_their_gradients_and_a_loop_invariant_output():
    """A Keras RNN cell with `constants`: c @ wc is the same every step, so its matmul
    leaves the loop, and the scan that saves each step's products for the gradient (and a
    step that outputs it as it is) then yields a value from outside its body."""
    wxv, whv = _weights()
    wcv = RNG.standard_normal((3, H)) * 0.4
    wx, wh, wc = K.variable(wxv), K.variable(whv), K.variable(wcv)
    x, c = K.placeholder(shape=(None, None, D)), K.placeholder(shape=(None, 3))

    def step(x_t, states):
        h = K.tanh(K.dot(x_t, wx) + K.dot(states[0], wh) + K.dot(states[1], wc))
        return h, [h]

    last, _, _ = K.rnn(step, x, [K.zeros_like(K.dot(x[:, 0], wx))], constants=[c])
    _, same, _ = K.rnn(lambda x_t, s: (K.dot(s[1], wc), s[:1]), x, [x[:, 0]], constants=[c])
    loss = K.sum(last * last)
    outputs = [same, *K.gradients(loss, [wx, wh, wc])]
    xs, cs = RNG.standard_normal((2, 4, D)), RNG.standard_normal((2, 3))

    def np_loss(wx_, wh_, wc_):
        h = np.zeros((2, H))
        for t in range(xs.shape[1]):
            h = np.tanh(xs[:, t] @ wx_ + h @ wh_ + cs @ wc_)
        return float(np.sum(h * h))

    numeric = [
        _finite_difference(lambda w: np_loss(w, whv, wcv), wxv),
        _finite_difference(lambda w: np_loss(wxv, w, wcv), whv),
        _finite_difference(lambda w: np_loss(wxv, whv, w), wcv),
    ]
    compiled = K.function([x, c], outputs)([xs, cs])
    np.testing.assert_allclose(compiled[0], np.repeat((cs @ wcv)[:, None], 4, axis=1), rtol=1e-12)
    for got, want in zip(compiled[1:], numeric, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
