"""Variable updates written in place (`update_in_place`): chosen only when safe, and the
step's values are those of updates applied after everything else, as Keras defines."""

from __future__ import annotations

from typing import Any

import numpy as np

from aotk import backend as K
from aotk.dialect import metadata
from aotk.dialect.update_in_place import in_place_updates, variable_updates
from aotk.lowering import pipeline


def _in_place(f: Any) -> set[str]:
    """Names of the variables `f` updates in place."""
    module = pipeline.lower(f.module.clone(), "graph")
    fn = next(iter(module.ops))
    chosen = in_place_updates(fn, variable_updates(fn))
    names = metadata.ints(fn, metadata.UPDATES)[::2]
    return {f._updated[names.index(out)].name for out in chosen}


def _var(value: np.ndarray, name: str) -> Any:
    return K.variable(value.astype(np.float32), name=name)


def test_an_sgd_step_updates_every_weight_in_place() -> None:
    rng = np.random.default_rng(0)
    w0, b0 = rng.standard_normal((5, 3)), rng.standard_normal(3)
    x0 = rng.standard_normal((4, 5)).astype(np.float32)
    w, b, x = _var(w0, "w"), _var(b0, "b"), K.placeholder((None, 5))
    loss = K.sum(K.square(K.dot(x, w) + b))
    gw, gb = K.gradients(loss, [w, b])
    f = K.function([x], [loss], [K.update_sub(w, 0.1 * gw), K.update_sub(b, 0.1 * gb)])
    assert _in_place(f) == {"w", "b"}
    f([x0])
    y = x0 @ w0.astype(np.float32) + b0.astype(np.float32)
    np.testing.assert_allclose(K.get_value(w), w0 - 0.1 * x0.T @ (2 * y), rtol=1e-5)
    np.testing.assert_allclose(K.get_value(b), b0 - 0.1 * (2 * y).sum(0), rtol=1e-5)


def test_momentum_and_weight_written_in_place_by_one_fused_loop() -> None:
    """SGD with momentum, Keras's way: v = 0.9 m - lr g, m <- v, w <- w + v. The two new
    values are one elementwise loop's two results; each element of m and w is read
    before it is written, so both are written in place (they were computed aside and
    copied at the end). Two steps, against NumPy."""
    rng = np.random.default_rng(3)
    w0, m0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    xs = rng.standard_normal((3, 4)).astype(np.float32)
    w, m, x = _var(w0, "w"), _var(m0, "m"), K.placeholder((3, 4))
    (g,) = K.gradients(K.sum(K.square(w * x)), [w])
    v = 0.9 * m - 0.1 * g
    f = K.function([x], [], [K.update(m, v), K.update(w, w + v)])
    assert _in_place(f) == {"w", "m"}
    want_w, want_m = w0.astype(np.float32), m0.astype(np.float32)
    for _ in range(2):
        f([xs])
        want_m = 0.9 * want_m - 0.1 * (2 * want_w * xs * xs)
        want_w = want_w + want_m
    np.testing.assert_allclose(K.get_value(m), want_m, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(K.get_value(w), want_w, rtol=1e-5, atol=1e-6)


def test_a_returned_old_value_stays_the_old_value() -> None:
    a0 = np.arange(6.0).reshape(2, 3)
    a = _var(a0, "a")
    f = K.function([], [a + 0.0, K.identity(a)], [K.update(a, a - 1.0)])
    assert _in_place(f) == set()
    old, same = f([])
    np.testing.assert_array_equal(old, a0)
    np.testing.assert_array_equal(same, a0)
    np.testing.assert_array_equal(K.get_value(a), a0 - 1)


def test_a_copy_of_the_old_value_made_before_the_update_lets_it_be_in_place() -> None:
    """a <- a + a[0:1, :] + a^T: the slice and the transpose are copies, made first."""
    a0 = np.arange(16.0).reshape(4, 4)
    a = _var(a0, "a")
    f = K.function([], [], [K.update(a, a[0:1, :] + a + K.transpose(a))])
    assert _in_place(f) == {"a"}
    f([])
    np.testing.assert_array_equal(K.get_value(a), a0 + a0[0:1, :] + a0.T)


def test_a_new_value_not_elementwise_in_the_old_one_is_not_in_place() -> None:
    a0 = np.arange(16.0).reshape(4, 4) / 10
    a = _var(a0, "a")
    f = K.function([], [], [K.update(a, K.dot(a, a))])
    assert _in_place(f) == set()
    f([])
    np.testing.assert_allclose(K.get_value(a), a0 @ a0, rtol=1e-6)


def test_swapped_variables_swap() -> None:
    a0, b0 = np.zeros(3), np.ones(3)
    a, b = _var(a0, "a"), _var(b0, "b")
    f = K.function([], [], [K.update(a, b * 1.0), K.update(b, a * 1.0)])
    f([])
    np.testing.assert_array_equal(K.get_value(a), b0)
    np.testing.assert_array_equal(K.get_value(b), a0)
