"""Training steps: K.gradients + updates in one compiled function, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

from aotk import backend as K


def _data(n: int = 48, d: int = 6, classes: int = 3):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d))
    y = np.eye(classes)[rng.integers(0, classes, n)]
    return x, y


def _softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_softmax_regression_matches_numpy(float64):
    xs, ys = _data()
    x, y = K.placeholder(shape=(None, 6)), K.placeholder(shape=(None, 3))
    w, b = K.variable(np.zeros((6, 3))), K.variable(np.zeros(3))
    loss = -K.mean(K.sum(y * K.log(K.softmax(K.dot(x, w) + b)), axis=-1))
    gw, gb = K.gradients(loss, [w, b])
    step = K.function(
        [x, y], [loss], updates=[K.update_sub(w, 0.5 * gw), K.update_sub(b, 0.5 * gb)]
    )
    wn, bn = np.zeros((6, 3)), np.zeros(3)
    losses = []
    for _ in range(6):
        p = _softmax(xs @ wn + bn)
        expected = -np.mean(np.sum(ys * np.log(p), axis=1))
        g = (p - ys) / len(xs)
        got = step([xs, ys])[0]
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        wn, bn = wn - 0.5 * xs.T @ g, bn - 0.5 * g.sum(axis=0)
        np.testing.assert_allclose(K.get_value(w), wn, rtol=1e-11, atol=1e-13)
        losses.append(float(got))
    assert losses[-1] < losses[0]


def test_mlp_sgd_matches_numpy_and_loss_falls(float64):
    xs, ys = _data(64, 5, 4)
    rng = np.random.default_rng(1)
    w1v, w2v = rng.standard_normal((5, 16)) * 0.5, rng.standard_normal((16, 4)) * 0.5
    x, y = K.placeholder(shape=(None, 5)), K.placeholder(shape=(None, 4))
    w1, b1, w2, b2 = (
        K.variable(w1v),
        K.variable(np.zeros(16)),
        K.variable(w2v),
        K.variable(np.zeros(4)),
    )
    h = K.relu(K.bias_add(K.dot(x, w1), b1))
    p = K.softmax(K.bias_add(K.dot(h, w2), b2))
    loss = -K.mean(K.sum(y * K.log(p), axis=-1))
    params = [w1, b1, w2, b2]
    grads = K.gradients(loss, params)
    step = K.function(
        [x, y], [loss], updates=[(v, v - 0.3 * g) for v, g in zip(params, grads, strict=True)]
    )
    n1, nb1, n2, nb2 = w1v.copy(), np.zeros(16), w2v.copy(), np.zeros(4)
    losses = []
    for _ in range(20):
        a = xs @ n1 + nb1
        hn = np.maximum(a, 0)
        pn = _softmax(hn @ n2 + nb2)
        expected = -np.mean(np.sum(ys * np.log(pn), axis=1))
        dz = (pn - ys) / len(xs)
        dh = dz @ n2.T * (a > 0)
        got = float(step([xs, ys])[0])
        assert got == pytest.approx(expected, rel=1e-10)
        n1, nb1 = n1 - 0.3 * xs.T @ dh, nb1 - 0.3 * dh.sum(0)
        n2, nb2 = n2 - 0.3 * hn.T @ dz, nb2 - 0.3 * dz.sum(0)
        losses.append(got)
    np.testing.assert_allclose(K.get_value(w2), n2, rtol=1e-9, atol=1e-12)
    assert losses[-1] < 0.8 * losses[0]


def test_updates_are_simultaneous_and_outputs_see_old_values():
    a, b = K.variable([1.0, 2.0]), K.variable([10.0, 20.0])
    dummy = K.placeholder(shape=(1,))
    swap = K.function([dummy], [a + b + dummy], updates=[K.update(a, b), K.update(b, a)])
    out = swap([np.zeros(1, np.float32)])[0]
    np.testing.assert_array_equal(out, [11.0, 22.0])
    np.testing.assert_array_equal(K.get_value(a), [10.0, 20.0])
    np.testing.assert_array_equal(K.get_value(b), [1.0, 2.0])


def test_update_helpers_and_native_buffers():
    v = K.variable(np.ones(3))
    m = K.variable(np.zeros(3))
    storage = v.storage.ctypes.data
    x = K.placeholder(shape=(3,))
    f = K.function(
        [x],
        [v * 1.0],
        updates=[K.update_add(v, x), K.moving_average_update(m, x, 0.9)],
    )
    f([np.array([1.0, 2.0, 3.0])])
    f([np.array([1.0, 2.0, 3.0])])
    np.testing.assert_allclose(K.get_value(v), [3.0, 5.0, 7.0])
    np.testing.assert_allclose(K.get_value(m), 0.1 * np.array([1, 2, 3]) * (1 + 0.9), rtol=1e-6)
    assert v.storage.ctypes.data == storage  # updated in place
    g = K.function([x], [], updates=[K.update_sub(v, x)])
    assert g([np.array([3.0, 5.0, 7.0])]) == []
    np.testing.assert_allclose(K.get_value(v), 0.0)


def test_update_errors():
    v = K.variable(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"K.update: variable '.*' has shape \(2, 3\)"):
        K.update(v, K.placeholder(shape=(3, 2)))
    with pytest.raises(TypeError, match=r"K\.update: the target must be a variable"):
        K.update(K.placeholder(shape=(2, 3)), v)
    with pytest.raises(ValueError, match="updated twice, to different values"):
        K.function([], [v * 1.0], updates=[K.update(v, v * 2.0), K.update(v, v * 3.0)])
    with pytest.raises(TypeError, match=r"updates\[0\] must be"):
        K.function([], [v * 1.0], updates=[v])
    x = K.placeholder(shape=(None, 3))
    f = K.function([x], [x * 1.0], updates=[K.update(v, x)])
    with pytest.raises(ValueError, match="update of variable"):
        f([np.zeros((5, 3), np.float32)])


def test_small_cnn_trains(float64):
    """conv2d, relu, max pool, dense, softmax cross-entropy, SGD: the loss falls."""
    rng = np.random.default_rng(2)
    labels = rng.integers(0, 2, 32)
    images = rng.standard_normal((32, 8, 8, 1)) * 0.3
    images[labels == 1, 2:6, 2:6, 0] += 1.0  # class 1 has a bright square
    targets = np.eye(2)[labels]
    x, y = K.placeholder(shape=(None, 8, 8, 1)), K.placeholder(shape=(None, 2))
    kernel = K.variable(rng.standard_normal((3, 3, 1, 4)) * 0.3)
    w = K.variable(rng.standard_normal((4 * 4 * 4, 2)) * 0.1)
    b = K.variable(np.zeros(2))
    h = K.pool2d(K.relu(K.conv2d(x, kernel, padding="same")), (2, 2), strides=(2, 2))
    p = K.softmax(K.dot(K.batch_flatten(h), w) + b)
    loss = K.mean(K.categorical_crossentropy(y, p))
    params = [kernel, w, b]
    updates = [
        K.update_sub(v, 0.5 * g) for v, g in zip(params, K.gradients(loss, params), strict=True)
    ]
    step = K.function([x, y], [loss], updates=updates)
    losses = [float(step([images, targets])[0]) for _ in range(25)]
    assert losses[-1] < 0.5 * losses[0]
