"""K's neural-network functions against NumPy written here from the Keras reference.

Each test compiles one K.function with many outputs (compilation dominates the run time)
and calls it on several inputs; placeholders with None dims are called with two sizes.
Where the reference's NumPy formula overflows (softplus(1e4) = inf, elu(1e4) = inf * 0 =
NaN), the expectation is the mathematically exact value, which TensorFlow's Keras returns.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from conftest import assert_close

from aotk import backend as K

EPS = 1e-7


def _fn(inputs, outputs) -> Callable[..., list[np.ndarray]]:
    f = K.function(inputs, outputs)
    return lambda *arrays: f(list(arrays))


def _close(got, want, dtype, rscale: float = 1.0, scale: float = 1.0, msg: str = "") -> None:
    with np.errstate(all="ignore"):
        want = np.asarray(want).astype(dtype)
    assert_close(got, want, scale=scale, rscale=rscale, msg=msg)


def _f64(*arrays, dtype="float32"):
    """The arrays as the kernel sees them (rounded to dtype), widened for the reference."""
    return [np.asarray(a).astype(dtype).astype(np.float64) for a in arrays]


def ref_relu(x, alpha=0.0, max_value=None, threshold=0.0):
    max_value = np.inf if max_value is None else max_value
    above = np.clip(x * (x >= threshold), 0.0, max_value)
    return alpha * (x - threshold) * (x < threshold) + above


def ref_softmax(x, axis=-1):
    y = np.exp(x - np.max(x, axis, keepdims=True))
    return y / np.sum(y, axis, keepdims=True)


def ref_log_softmax(z, axis=-1):
    s = z - np.max(z, axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis, keepdims=True))


def ref_elu(x, alpha=1.0):
    return x * (x > 0) + alpha * (np.exp(x) - 1.0) * (x < 0)


NEW = {
    "elu": (K.elu, ref_elu),
    "elu_0.5": (lambda x: K.elu(x, 0.5), lambda x: ref_elu(x, 0.5)),
    "softsign": (K.softsign, lambda x: x / (1 + np.abs(x))),
    "hard_sigmoid": (K.hard_sigmoid, lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "round": (K.round, np.round),
}
TRIG = {"sin": (K.sin, np.sin), "cos": (K.cos, np.cos)}
EXISTING = {
    "relu": (K.relu, ref_relu),
    "relu_alpha": (lambda x: K.relu(x, alpha=0.3), lambda x: ref_relu(x, 0.3)),
    "relu_max": (lambda x: K.relu(x, max_value=1.5), lambda x: ref_relu(x, 0.0, 1.5)),
    "relu_all": (
        lambda x: K.relu(x, alpha=0.2, max_value=2.0, threshold=0.5),
        lambda x: ref_relu(x, 0.2, 2.0, 0.5),
    ),
    "relu_threshold": (lambda x: K.relu(x, threshold=-1.0), lambda x: ref_relu(x, 0.0, None, -1)),
    "sigmoid": (K.sigmoid, lambda x: 1.0 / (1.0 + np.exp(-x))),
    "softplus": (K.softplus, lambda x: np.log(1.0 + np.exp(x))),
    "tanh": (K.tanh, np.tanh),
    "softmax": (K.softmax, ref_softmax),
    "softmax_axis0": (lambda x: K.softmax(x, axis=0), lambda x: ref_softmax(x, 0)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_activations_match_the_reference(dtype: str) -> None:
    table = {**NEW, **TRIG, **EXISTING} if dtype == "float32" else {**NEW, **TRIG}
    x = K.placeholder((None, 7), dtype=dtype)
    f = _fn([x], [fn(x) for fn, _ in table.values()])
    rng = np.random.default_rng(0)
    for rows in (1, 6):
        xv = rng.uniform(-4, 4, (rows, 7)).astype(dtype)
        xv[0, :4] = [0.5, -2.5, 0.0, 1.5]  # rounding ties
        for got, (name, (_, ref)) in zip(f(xv), table.items(), strict=True):
            _close(got, ref(xv.astype(np.float64)), dtype, rscale=4, msg=f"{name} {dtype}")


EXTREME = [1e4, -1e4, np.nan, 0.0, -0.0, 88.0, -88.0, 30.0, -30.0, 1e-30, -1e-30, np.inf, -np.inf]
INFINITE = {  # (f(inf), f(-inf)) where the reference's formula gives inf * 0 = NaN
    "elu": (np.inf, -1.0),
    "elu_0.5": (np.inf, -0.5),
    "relu": (np.inf, 0.0),
    "relu_alpha": (np.inf, -np.inf),
    "relu_max": (1.5, 0.0),
    "relu_threshold": (np.inf, 0.0),
    "relu_all": (2.0, -np.inf),
    "softplus": (np.inf, 0.0),
}


def _exact(name: str, ref: Callable, x: np.ndarray) -> np.ndarray:
    """The reference, except where its formula overflows."""
    with np.errstate(all="ignore"):
        if name.startswith("elu"):
            want = np.where(x > 0, x, (0.5 if name == "elu_0.5" else 1.0) * np.expm1(x))
        else:
            want = np.logaddexp(0.0, x) if name == "softplus" else ref(x)
    if name in INFINITE:
        want[-2:] = np.array(INFINITE[name]).reshape(want[-2:].shape)
    return want


def test_activations_on_extreme_inputs() -> None:
    table = {k: v for k, v in {**NEW, **EXISTING}.items() if k != "softmax_axis0"}
    x = K.placeholder((len(EXTREME), 1))
    f = _fn([x], [fn(x) for fn, _ in table.values()])
    xv = np.array(EXTREME, np.float32).reshape(-1, 1)
    for got, (name, (_, ref)) in zip(f(xv), table.items(), strict=True):
        _close(got, _exact(name, ref, xv.astype(np.float64)), "float32", msg=name)


def test_softmax_rows_with_extreme_and_nan_values() -> None:
    x = K.placeholder((None, 3))
    f = _fn([x], [K.softmax(x), K.softmax(x, axis=0)])
    xv = np.array([[1e4, -1e4, 0.0], [np.nan, 1.0, 2.0], [-1e4, -1e4, -1e4]], np.float32)
    got = f(xv)
    _close(got[0], [[1, 0, 0], [np.nan] * 3, [1 / 3] * 3], "float32", msg="softmax rows")
    _close(got[1][:, 2], ref_softmax(xv[:, 2].astype(np.float64)), "float32", msg="axis 0")
    assert np.isnan(got[1][:, 0]).all() and not np.isnan(got[1][:, 2]).any()


def test_long_rows_with_nan_and_inf_in_softmax_and_logsumexp() -> None:
    # rows long enough for the vectorized passes, the special value mid-vector
    x = K.placeholder((None, 70))
    f = _fn([x], [K.softmax(x), K.logsumexp(x, axis=1)])
    xv = np.random.default_rng(5).normal(size=(4, 70)).astype(np.float32)
    xv[0, 37] = np.nan
    xv[1, 37] = np.inf
    xv[2, :] = -np.inf
    xv[3, 37] = 30.0  # a plain row with one large entry
    soft, lse = f(xv)
    assert np.isnan(soft[:3]).all() and np.isnan(lse[0])
    assert lse[1] == np.inf and lse[2] == -np.inf
    _close(soft[3], ref_softmax(xv[3].astype(np.float64)), "float32", msg="plain row")
    want = 30.0 + np.log(np.exp(xv[3].astype(np.float64) - 30.0).sum())
    _close(lse[3], want, "float32", msg="logsumexp")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_and_logsumexp_rows_of_any_dynamic_width(dtype: str) -> None:
    # widths around the row maximum's step of four vectors, and below one vector
    x = K.placeholder((None, None), dtype=dtype)
    f = _fn([x], [K.softmax(x), K.logsumexp(x, axis=1)])
    for width in (1, 5, 31, 32, 33, 64, 100):
        xv = 5 * np.random.default_rng(width).normal(size=(3, width)).astype(dtype)
        xv[0, -1] = 1000.0  # exp overflows unless the maximum saw the row's last element
        soft, lse = f(xv)
        x64 = xv.astype(np.float64)
        peak = x64.max(axis=1)
        _close(soft, ref_softmax(x64), dtype, msg=f"softmax, width {width}")
        want = peak + np.log(np.exp(x64 - peak[:, None]).sum(axis=1))
        _close(lse, want, dtype, msg=f"logsumexp, width {width}")


def test_round_is_half_to_even_and_keeps_integers() -> None:
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, 1e8, 3.7, -3.7, np.nan, np.inf])
    want = [0, 2, 2, -0.0, -2, -2, 2, 1e8, 4, -4, np.nan, np.inf]
    xs = [K.placeholder((None,), dtype=d) for d in ("float32", "float64", "int32", "uint8")]
    f = _fn(xs, [K.round(x) for x in xs])
    got = f(ties.astype("float32"), ties, np.array([-3, 7], "int32"), np.array([255], "uint8"))
    _close(got[0], want, "float32", msg="float32")
    _close(got[1], want, "float64", msg="float64")
    np.testing.assert_array_equal(got[2], np.array([-3, 7], "int32"), strict=True)
    np.testing.assert_array_equal(got[3], np.array([255], "uint8"), strict=True)
    assert np.signbit(got[0][3]) and np.signbit(got[1][3])
    with pytest.raises(TypeError, match=r"K\.round: expected a numeric tensor, got bool"):
        K.round(K.placeholder((2,), dtype="bool"))


def test_trig_of_large_arguments_and_integer_inputs() -> None:
    x, n = K.placeholder((None,)), K.placeholder((None,), dtype="int32")
    f = _fn([x, n], [K.sin(x), K.cos(x), K.sin(n), K.cos(n)])
    xv = np.array([1e4, -3e5, 1e9, 1e20, 3.4e38, np.pi, 1e-20, np.nan, np.inf], np.float32)
    nv = np.array([0, 1, -7, 100000], np.int32)
    got = f(xv, nv)
    with np.errstate(invalid="ignore"):
        want = [np.sin(xv.astype(np.float64)), np.cos(xv.astype(np.float64))]
    _close(got[0], want[0], "float32", msg="sin")
    _close(got[1], want[1], "float32", msg="cos")
    _close(got[2], np.sin(nv.astype(np.float64)), "float32", msg="sin of int32 (as floatx)")
    _close(got[3], np.cos(nv.astype(np.float64)), "float32", msg="cos of int32 (as floatx)")


def ref_l2_normalize(x, axis):
    y = np.max(np.sum(x**2, axis, keepdims=True), axis, keepdims=True)
    return x / np.sqrt(y)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_l2_normalize(dtype: str) -> None:
    axes = [None, 0, -1, (0, 2), [1, 2]] if dtype == "float32" else [None, 1]
    x, v = K.placeholder((None, 3, 4), dtype=dtype), K.placeholder((5,), dtype=dtype)
    f = _fn([x, v], [K.l2_normalize(x, a) for a in axes] + [K.l2_normalize(v)])
    rng = np.random.default_rng(1)
    for batch in (2, 5):
        xv, vv = rng.normal(size=(batch, 3, 4)).astype(dtype), rng.normal(size=5).astype(dtype)
        vv[:] = 0.0 if batch == 5 else vv  # a zero vector gives NaN, as in the reference
        *got, got_v = f(xv, vv)
        for g, a in zip(got, axes, strict=True):
            ax = tuple(a) if isinstance(a, list) else a
            _close(g, ref_l2_normalize(xv.astype(np.float64), ax), dtype, 4, msg=f"axis {a}")
        with np.errstate(invalid="ignore"):
            _close(got_v, ref_l2_normalize(vv.astype(np.float64), None), dtype, 4, msg="vector")
    with pytest.raises(ValueError, match=r"K\.l2_normalize: .*axis 3 is out of range"):
        K.l2_normalize(x, 3)


def ref_bn(x, mean, var, beta, gamma, eps):
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_normalization_both_formats_and_broadcast_params(dtype: str) -> None:
    rng = np.random.default_rng(2)
    nhwc = K.placeholder((None, 3, 2, 4), dtype=dtype)
    nchw = K.placeholder((None, 4, 3, 2), dtype=dtype)
    x2 = K.placeholder((None, 4), dtype=dtype)
    vec = _f64(*(rng.uniform(0.5, 2, 4) for _ in range(4)), dtype=dtype)  # mean var beta gamma
    full = [v.reshape(1, 4, 1, 1) for v in vec]
    pv = [K.constant(v, dtype=dtype) for v in vec]
    cases = [  # (output, input index, reference params, epsilon)
        (K.batch_normalization(nhwc, *pv, axis=-1), 0, vec, 1e-3),  # channels_last
        (K.batch_normalization(nchw, *pv, axis=1, epsilon=0.01), 1, full, 0.01),  # first
        (K.batch_normalization(x2, vec[0], vec[1], 0.5, 2.0), 2, [*vec[:2], 0.5, 2.0], 1e-3),
    ]
    if dtype == "float32":
        pf = [K.constant(v) for v in full]
        cases += [
            (K.batch_normalization(nchw, *pf, axis=1), 1, full, 1e-3),  # shape (1, C, 1, 1)
            (K.batch_normalization(x2, pv[0], pv[1], None, None), 2, [*vec[:2], 0, 1], 1e-3),
            (K.batch_normalization(nchw, *pv, axis=-3), 1, full, 1e-3),
        ]
    f = _fn([nhwc, nchw, x2], [c[0] for c in cases])
    for batch in (1, 3):
        xs = [rng.normal(size=s) for s in [(batch, 3, 2, 4), (batch, 4, 3, 2), (batch, 4)]]
        got = f(*(a.astype(dtype) for a in xs))
        xs = _f64(*xs, dtype=dtype)
        for i, (g, (_, j, params, eps)) in enumerate(zip(got, cases, strict=True)):
            _close(g, ref_bn(xs[j], *params, eps=eps), dtype, 4, 4, msg=f"case {i} batch {batch}")


def test_batch_normalization_errors() -> None:
    x = K.placeholder((None, 4, 3))
    v4, v3 = K.constant(np.ones(4)), K.constant(np.ones(3))
    with pytest.raises(
        ValueError, match=r"K\.batch_normalization: mean has 3 elements, expected 4"
    ):
        K.batch_normalization(x, v3, v4, v4, v4, axis=1)
    with pytest.raises(ValueError, match=r"K\.batch_normalization: gamma of shape \(2, 3\) does"):
        K.batch_normalization(x, v3, v3, v3, K.constant(np.ones((2, 3))))
    with pytest.raises(ValueError, match=r"K\.batch_normalization: axis 3 is out of range"):
        K.batch_normalization(x, v3, v3, v3, v3, axis=3)
    with pytest.raises(TypeError, match=r"K\.batch_normalization: var has dtype float64"):
        K.batch_normalization(x, v3, K.constant(np.ones(3), dtype="float64"), None, None)


def ref_moments(x, axes, gamma, beta, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    normed = (x - mean) / np.sqrt(var + eps) * gamma + beta
    return normed, mean.squeeze(axis=axes), var.squeeze(axis=axes)


def test_normalize_batch_in_training() -> None:
    rng = np.random.default_rng(3)
    nhwc, nchw = K.placeholder((None, 3, 2, 4)), K.placeholder((None, 4, 3, 2))
    x2, x3 = K.placeholder((None, 5)), K.placeholder((2, None, 3))
    g4, b4 = _f64(rng.uniform(0.5, 2, 4), rng.normal(size=4))
    (g23,) = _f64(rng.uniform(0.5, 2, (2, 3)))
    cases = [  # input, axes, gamma, beta, reference gamma and beta, epsilon
        (nhwc, [0, 1, 2], g4, b4, g4.reshape(1, 1, 1, 4), b4.reshape(1, 1, 1, 4), 1e-3),
        (nchw, [0, 2, 3], g4, None, g4.reshape(1, 4, 1, 1), 0.0, 1e-3),
        (x2, (0,), None, None, 1.0, 0.0, 0.1),
        (x3, [1], g23, b4[:3].reshape(1, 1, 3), g23.reshape(2, 1, 3), b4[:3], 1e-3),
    ]
    outs = []
    for x, axes, g, b, _, _, eps in cases:
        gt, bt = (None if p is None else K.constant(p) for p in (g, b))
        outs += K.normalize_batch_in_training(x, gt, bt, axes, epsilon=eps)
    f = _fn([nhwc, nchw, x2, x3], outs)
    for n in (2, 5):
        shapes = [(n, 3, 2, 4), (n, 4, 3, 2), (n, 5), (2, n, 3)]
        arrays = [rng.normal(2, 3, s).astype("float32") for s in shapes]
        got = f(*arrays)
        for i, (_, axes, _, _, g, b, eps) in enumerate(cases):
            want = ref_moments(arrays[i].astype(np.float64), tuple(axes), g, b, eps)
            for j, name in enumerate(("normed", "mean", "var")):
                _close(got[3 * i + j], want[j], "float32", 8, 8, msg=f"case {i} {name} n={n}")


def test_normalize_batch_in_training_errors() -> None:
    x = K.placeholder((None, 4))
    with pytest.raises(TypeError, match=r"reduction_axes must be an iterable of ints, got 0"):
        K.normalize_batch_in_training(x, None, None, 0)
    with pytest.raises(ValueError, match=r"K\.normalize_batch_in_training: reduction axis 2 is"):
        K.normalize_batch_in_training(x, None, None, [0, 2])
    with pytest.raises(ValueError, match=r"gamma has 3 elements, expected 4"):
        K.normalize_batch_in_training(x, K.constant(np.ones(3)), None, [0])


def _clip(p, dtype):
    """Clip to [epsilon, 1 - epsilon] with both bounds rounded to dtype, as the kernel does."""
    lo, hi = _f64(EPS, 1 - EPS, dtype=dtype)
    return np.clip(p, lo, hi)


def ref_cce(t, p, dtype, axis=-1):
    return -np.sum(t * np.log(_clip(p / p.sum(axis, keepdims=True), dtype)), axis)


def ref_sparse(labels, p, dtype, axis=-1, from_logits=False):
    z = p if from_logits else np.log(_clip(p, dtype))
    logp = np.moveaxis(ref_log_softmax(z, axis), axis, -1)
    return -np.take_along_axis(logp, labels[..., None].astype(np.int64), -1)[..., 0]


def ref_bce(t, p, dtype):
    p = _clip(p, dtype)
    return -(t * np.log(p) + (1 - t) * np.log(1 - p))


def _probs(rng, shape):
    p = rng.uniform(0, 1, shape)
    p.reshape(-1)[::7] = 0.0  # clipped to epsilon
    return p


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_categorical_crossentropy(dtype: str) -> None:
    rng = np.random.default_rng(4)
    t, p = K.placeholder((None, 5), dtype=dtype), K.placeholder((None, 5), dtype=dtype)
    t3, p3 = K.placeholder((None, 4, 3), dtype=dtype), K.placeholder((None, 4, 3), dtype=dtype)
    cases = [  # (output, reference(t, p, t3, p3))
        (K.categorical_crossentropy(t, p), lambda *a: ref_cce(a[0], a[1], dtype)),
        (K.categorical_crossentropy(t3, p3, axis=1), lambda *a: ref_cce(a[2], a[3], dtype, 1)),
        (
            K.categorical_crossentropy(t3, p3, from_logits=True, axis=1),
            lambda *a: -np.sum(a[2] * ref_log_softmax(a[3], 1), 1),
        ),
    ]
    if dtype == "float32":
        cases += [
            (
                K.categorical_crossentropy(t, p, from_logits=True),
                lambda *a: -np.sum(a[0] * ref_log_softmax(a[1]), -1),
            ),
            (K.categorical_crossentropy(t3, p3, axis=2), lambda *a: ref_cce(a[2], a[3], dtype, 2)),
        ]
    f = _fn([t, p, t3, p3], [c[0] for c in cases])
    for n in (1, 4):
        arrays = [
            np.eye(5)[rng.integers(0, 5, n)] * 0.9 + 0.02,
            _probs(rng, (n, 5)),
            rng.dirichlet(np.ones(4), (n, 3)).transpose(0, 2, 1),
            _probs(rng, (n, 4, 3)),
        ]
        got = f(*(a.astype(dtype) for a in arrays))
        wide = _f64(*arrays, dtype=dtype)
        for i, (g, (_, ref)) in enumerate(zip(got, cases, strict=True)):
            _close(g, ref(*wide), dtype, 8, 8, msg=f"output {i} n={n}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sparse_categorical_crossentropy(dtype: str) -> None:
    rng = np.random.default_rng(5)
    p = K.placeholder((None, 6), dtype=dtype)
    labels, column = K.placeholder((None,), dtype="int32"), K.placeholder((None, 1), dtype="int64")
    floats = K.placeholder((None,), dtype="float32")
    p4, l4 = K.placeholder((None, 3, 2, 2), dtype=dtype), K.placeholder((None, 2, 2), dtype="uint8")
    outs = [
        K.sparse_categorical_crossentropy(labels, p),
        K.sparse_categorical_crossentropy(l4, p4, from_logits=True, axis=1),  # channels first
    ]
    if dtype == "float32":
        outs += [
            K.sparse_categorical_crossentropy(column, p, from_logits=True),
            K.sparse_categorical_crossentropy(floats, p),
            K.sparse_categorical_crossentropy(l4, p4, axis=1),
        ]
    f = _fn([labels, column, floats, p, l4, p4], outs)
    for n in (2, 5):
        lv = rng.integers(0, 6, n).astype("int32")
        lv[0] = 7 if n == 5 else -1  # out of range: NaN
        cv, lv4 = rng.integers(0, 6, (n, 1)), rng.integers(0, 3, (n, 2, 2)).astype("uint8")
        pv, pv4 = _probs(rng, (n, 6)), rng.uniform(0, 3, (n, 3, 2, 2))
        got = f(lv, cv, lv.astype("float32") + 0.5, pv.astype(dtype), lv4, pv4.astype(dtype))
        pv, pv4 = _f64(pv, pv4, dtype=dtype)
        bad = (lv < 0) | (lv >= 6)
        with np.errstate(invalid="ignore"):
            first = np.where(bad, np.nan, ref_sparse(np.where(bad, 0, lv), pv, dtype))
        want = [
            first,
            ref_sparse(lv4, pv4, dtype, axis=1, from_logits=True),
            ref_sparse(cv[:, 0], pv, dtype, from_logits=True),
            np.where(lv < 0, ref_sparse(np.zeros(n, int), pv, dtype), first),  # -0.5 -> 0
            ref_sparse(lv4, pv4, dtype, axis=1),
        ]
        for i, g in enumerate(got):
            _close(g, want[i], dtype, 8, 8, msg=f"output {i} n={n}")


def test_binary_crossentropy() -> None:
    rng = np.random.default_rng(6)
    t, p = K.placeholder((None, 3)), K.placeholder((None, 3))
    t64, p64 = K.placeholder((2, 2), dtype="float64"), K.placeholder((2, 2), dtype="float64")
    outs = [
        K.binary_crossentropy(t, p),
        K.binary_crossentropy(t, p, from_logits=True),
        K.binary_crossentropy(t64, p64),
        K.binary_crossentropy(t64, p64, from_logits=True),
    ]
    f = _fn([t, p, t64, p64], outs)
    for n in (1, 6):
        tv, pv = rng.uniform(0, 1, (n, 3)), _probs(rng, (n, 3))
        pv.reshape(-1)[1::7] = 1.0
        tv64, pv64 = rng.uniform(0, 1, (2, 2)), np.array([[0.0, 1.0], [0.3, -2.5]])
        got = f(tv.astype("float32"), pv.astype("float32"), tv64, pv64)
        tv, pv = _f64(tv, pv)
        _close(got[0], ref_bce(tv, pv, "float32"), "float32", 8, 8, msg=f"probabilities n={n}")
        _close(got[1], np.logaddexp(0, pv) - pv * tv, "float32", 4, 4, msg=f"logits n={n}")
        _close(got[2], ref_bce(tv64, pv64, "float64"), "float64", 1e3, 1e3, msg="float64")
        _close(got[3], np.logaddexp(0, pv64) - pv64 * tv64, "float64", msg="float64 logits")


def test_crossentropies_are_stable_on_extreme_logits() -> None:
    t, z, labels = K.placeholder((3, 3)), K.placeholder((3, 3)), K.placeholder((3,), dtype="int32")
    outs = [
        K.categorical_crossentropy(t, z, from_logits=True),
        K.sparse_categorical_crossentropy(labels, z, from_logits=True),
        K.binary_crossentropy(t, z, from_logits=True),
    ]
    f = _fn([t, z, labels], outs)
    zv = np.array([[1e4, -1e4, 0.0], [-1e4, 0.0, 1e4], [30.0, -30.0, 0.5]], np.float32)
    tv = np.array([[0, 1, 0], [0, 0, 1], [0.5, 0.5, 0]], np.float32)
    cce, sparse, bce = f(tv, zv, np.array([1, 2, 0], np.int32))
    z64 = zv.astype(np.float64)
    _close(cce, [2e4, 0.0, -np.sum(tv[2] * ref_log_softmax(z64[2]))], "float32", msg="cce")
    _close(sparse, [2e4, 0.0, -ref_log_softmax(z64[2])[0]], "float32", msg="sparse")
    _close(bce, np.logaddexp(0.0, z64) - z64 * tv, "float32", msg="bce")


def test_loss_errors() -> None:
    p, t = K.placeholder((None, 4)), K.placeholder((None, 4))
    labels = K.placeholder((None,), dtype="int32")
    for fn, target in (
        (K.categorical_crossentropy, t),
        (K.sparse_categorical_crossentropy, labels),
    ):
        name = fn.__name__
        with pytest.raises(ValueError, match=rf"K\.{name}: unexpected channels axis -2; expected"):
            fn(target, p, axis=-2)
        with pytest.raises(ValueError, match=rf"K\.{name}: unexpected channels axis 2"):
            fn(target, p, axis=2)
    with pytest.raises(ValueError, match=r"K\.categorical_crossentropy: target of shape \(3,\)"):
        K.categorical_crossentropy(K.placeholder((3,)), p)
    with pytest.raises(ValueError, match=r"target of shape \(None, 2\) does not match output"):
        K.sparse_categorical_crossentropy(K.placeholder((None, 2), dtype="int32"), p)
    with pytest.raises(ValueError, match=r"the class axis 1 of output must have a static size"):
        K.sparse_categorical_crossentropy(labels, K.placeholder((2, None)))
    with pytest.raises(ValueError, match=r"K\.binary_crossentropy: target of shape \(None, 3\)"):
        K.binary_crossentropy(K.placeholder((None, 3)), p)
