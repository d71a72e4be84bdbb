"""aotk-matmul-updates: each form of `w +- c * (a @ b)` becomes one aotk.matmul_update with
the right alpha, the values stay, and what must not fold does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.matmul_update import MatMulUpdateOp
from aotk.dialect.unary import NegOp
from aotk.dialect.update_in_place import in_place_updates, variable_updates
from aotk.lowering import pipeline

pytestmark = pytest.mark.usefixtures("float64")  # see conftest.py
PASS = "aotk-simplify,canonicalize,aotk-cse,dce,aotk-matmul-updates,dce"
RNG = np.random.default_rng(3)
W0 = RNG.standard_normal((4, 3))
A0, B0, LR0 = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3)), np.array(0.3)

Build = Callable[[Any, Any, Any, Any], Any]  # (w, a, b, lr) -> the updated w


def _rewrite(build: Build, w0: np.ndarray = W0) -> tuple[Any, Any, list[np.ndarray]]:
    """(module before, module after the pass, arguments) for `build` on placeholders."""
    w = K.placeholder(w0.shape)
    a, b, lr = K.placeholder((4, 5)), K.placeholder((5, 3)), K.placeholder(())
    module, captures = trace.extract([w, a, b, lr], [build(w, a, b, lr)], "test")
    assert not captures
    before = pipeline.run(module.clone(), PASS.replace(",aotk-matmul-updates,dce", ""))
    return before, pipeline.run(module, PASS), [w0, A0, B0, LR0]


def _ops(module: Any, cls: type) -> list[Any]:
    return [op for op in module.walk() if isinstance(op, cls)]


FOLDED: list[tuple[str, Build, float | None]] = [
    # (form, build, the constant alpha; None: alpha is lr or -lr)
    ("w - c*m", lambda w, a, b, lr: w - 0.25 * K.dot(a, b), -0.25),
    ("w - m*c", lambda w, a, b, lr: w - K.dot(a, b) * 0.25, -0.25),
    ("w + c*m", lambda w, a, b, lr: w + 0.25 * K.dot(a, b), 0.25),
    ("c*m + w", lambda w, a, b, lr: 0.25 * K.dot(a, b) + w, 0.25),
    ("w - m", lambda w, a, b, lr: w - K.dot(a, b), -1.0),
    ("m + w", lambda w, a, b, lr: K.dot(a, b) + w, 1.0),
    ("w - lr*m", lambda w, a, b, lr: w - lr * K.dot(a, b), None),
    ("w + m*lr", lambda w, a, b, lr: w + K.dot(a, b) * lr, None),
]


@pytest.mark.parametrize(("form", "build", "alpha"), FOLDED, ids=[f[0] for f in FOLDED])
def test_each_form_folds_with_its_alpha_and_the_values_stay(form, build, alpha) -> None:
    before, after, args = _rewrite(build)
    (update,) = _ops(after, MatMulUpdateOp)
    assert not _ops(after, MatMulOp)
    source = update.alpha.owner
    if alpha is not None:
        assert isinstance(source, ConstantOp) and source.attrs()["value"] == alpha
    elif form.startswith("w -"):
        assert isinstance(source, NegOp)  # -lr
    else:
        assert source is None or not isinstance(source, ConstantOp | NegOp)  # lr itself
    (want,) = interp.run_module(before, args)
    (got,) = interp.run_module(after, args)
    np.testing.assert_array_equal(got, want)  # -c * p is -(c * p) exactly


NOT_FOLDED: list[tuple[str, Build, np.ndarray]] = [
    ("w broadcast", lambda w, a, b, lr: w - 0.25 * K.dot(a, b), W0[0]),
    ("scale not scalar", lambda w, a, b, lr: w - w * K.dot(a, b), W0),
    ("m - w", lambda w, a, b, lr: K.dot(a, b) - w, W0),
    ("m read twice", lambda w, a, b, lr: (w - K.dot(a, b)) * K.dot(a, b), W0),
    ("c*m read twice", lambda w, a, b, lr: (w - 2.0 * K.dot(a, b)) + 2.0 * K.dot(a, b), W0),
    ("zeros + m", lambda w, a, b, lr: K.zeros_like(w) + K.dot(a, b), W0),
]


@pytest.mark.parametrize(("form", "build", "w0"), NOT_FOLDED, ids=[f[0] for f in NOT_FOLDED])
def test_what_must_not_fold_does_not(form, build, w0) -> None:
    before, after, args = _rewrite(build, w0)
    assert not _ops(after, MatMulUpdateOp), form
    np.testing.assert_array_equal(
        interp.run_module(after, args)[0], interp.run_module(before, args)[0]
    )


def test_dynamic_or_low_precision_weights_do_not_fold() -> None:
    for shape, dtype in (((None, 3), "float64"), ((4, 3), "float16"), ((4, 3), "int32")):
        w = K.placeholder(shape, dtype=dtype)
        a, b = K.placeholder((4, 5), dtype=dtype), K.placeholder((5, 3), dtype=dtype)
        module, _ = trace.extract([w, a, b], [w - K.dot(a, b)], "test")
        assert not _ops(pipeline.run(module, PASS), MatMulUpdateOp), (shape, dtype)


def test_an_sgd_step_updates_its_weights_in_place_by_matmul_updates() -> None:
    """A dense layer's SGD step: both weight updates fold (w's gradient with a transposed
    lhs, the input layer's too), are chosen in place, and give NumPy's values."""
    x, t = K.placeholder((None, 5)), K.placeholder((None, 3))
    w1, w2 = K.variable(RNG.standard_normal((5, 4))), K.variable(RNG.standard_normal((4, 3)))
    loss = K.sum(K.square(K.dot(K.tanh(K.dot(x, w1)), w2) - t))
    updates = [
        K.update_sub(p, 0.05 * g)
        for p, g in zip([w1, w2], K.gradients(loss, [w1, w2]), strict=True)
    ]
    f = K.function([x, t], [loss], updates)
    graph = pipeline.lower(f.module.clone(), stop_after="graph")
    fn = next(iter(graph.ops))
    assert len(_ops(graph, MatMulUpdateOp)) == 2
    assert len(in_place_updates(fn, variable_updates(fn))) == 2
    xs, ts = RNG.standard_normal((7, 5)), RNG.standard_normal((7, 3))
    v1, v2 = K.get_value(w1), K.get_value(w2)
    for _ in range(2):
        h = np.tanh(xs @ v1)
        d = 2 * (h @ v2 - ts)
        g2, g1 = h.T @ d, xs.T @ ((d @ v2.T) * (1 - h * h))
        v1, v2 = v1 - 0.05 * g1, v2 - 0.05 * g2
        f([xs, ts])
    np.testing.assert_allclose(K.get_value(w1), v1, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(K.get_value(w2), v2, rtol=1e-12, atol=1e-12)


def test_an_rnn_sgd_step_updates_its_weights_by_matmul_updates() -> None:
    """A recurrent layer's weight gradients are sums over the steps, started at zero
    (`aotk-scan-accumulations` makes each one matmul): their SGD updates fold too, and
    the step's values are the interpreter's."""
    x = K.placeholder((3, 4, 2))
    w, u = K.variable(RNG.normal(0, 0.5, (2, 5))), K.variable(RNG.normal(0, 0.5, (5, 5)))

    def step(x_t: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        h = K.tanh(K.dot(x_t, w) + K.dot(states[0], u))
        return h, [h]

    _, outputs, _ = K.rnn(step, x, [K.zeros_like(K.dot(x[:, 0], w))])
    loss = K.sum(K.square(outputs))
    news = [p - 0.1 * g for p, g in zip([w, u], K.gradients(loss, [w, u]), strict=True)]
    module, captures = trace.extract([x], [loss, *news], "test")
    xs = RNG.standard_normal((3, 4, 2))
    want = interp.run_module(module, [xs, *(c.storage for c in captures)])
    f = K.function([x], [loss], [K.update(w, news[0]), K.update(u, news[1])])
    graph = pipeline.lower(f.module.clone(), stop_after="graph")
    assert len(_ops(graph, MatMulUpdateOp)) == 2
    f([xs])
    np.testing.assert_allclose(K.get_value(w), want[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(K.get_value(u), want[2], rtol=1e-12, atol=1e-12)
