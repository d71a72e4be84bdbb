"""K.random_uniform/normal/binomial, K.truncated_normal, K.dropout and the random variables.

Distributions are checked statistically (moments within a few standard errors of 1e5
samples, exact ranges, Kolmogorov-Smirnov distances); the generator against Random123's
Philox-4x32-10 known answer, with the bits-to-float maps written out here; seeds for
reproducibility across traced functions, and unseeded functions for fresh numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from aotk import backend as K
from aotk import function as aotk_function
from aotk.backend import config

N = 100_000
FLOATS = ("float16", "float32", "float64")
# Random123 kat_vectors: philox4x32 10 rounds, counter 0 and key 0
KAT_ZERO = (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)


@pytest.fixture(autouse=True)
def keep_floatx():
    saved = config.floatx()
    yield
    config.set_floatx(saved)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _ks(samples: np.ndarray, cdf: Callable[[np.ndarray], np.ndarray]) -> float:
    """The Kolmogorov-Smirnov distance between the samples and a continuous CDF."""
    x = np.sort(samples.astype(np.float64))
    c, n = cdf(x), len(x)
    return float(max(np.max(np.arange(1, n + 1) / n - c), np.max(c - np.arange(n) / n)))


KS_LIMIT = 1.95 / math.sqrt(N)  # rejects a right distribution with chance 0.1%


def _check_moments(x: np.ndarray, mean: float, std: float, what: str) -> None:
    x = x.astype(np.float64)
    assert abs(x.mean() - mean) < 5 * std / math.sqrt(N), f"{what}: mean {x.mean()}"
    assert abs(x.std() / std - 1) < 0.03, f"{what}: std {x.std()} vs {std}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_distributions_have_their_moments_ranges_and_shapes(dtype):
    outs = [
        K.random_uniform((N,), -2.0, 3.0, dtype, seed=1),
        K.random_normal((N,), 1.5, 2.0, dtype, seed=2),
        K.truncated_normal((N,), -1.0, 0.5, dtype, seed=3),
        K.random_binomial((N,), 0.3, dtype, seed=4),
        K.random_binomial((20, 50), 0.0, dtype, seed=5),
        K.random_binomial((20, 50), 1.0, dtype, seed=6),
    ]
    uniform, normal, truncated, binomial, zeros, ones = K.function([], outs)([])
    for out in (uniform, normal, truncated, binomial, zeros, ones):
        assert out.dtype == np.dtype(dtype)
    assert uniform.min() >= -2.0 and uniform.max() < 3.0
    _check_moments(uniform, 0.5, 5 / math.sqrt(12), "uniform")
    assert _ks(uniform, lambda v: (v + 2) / 5) < KS_LIMIT
    _check_moments(normal, 1.5, 2.0, "normal")
    assert _ks(normal, lambda v: _normal_cdf((v - 1.5) / 2)) < KS_LIMIT
    # truncated at 2 stddev: everything in [-2, 0], stddev shrinks by 0.87962
    assert truncated.min() >= -2.0 and truncated.max() <= 0.0
    _check_moments(truncated, -1.0, 0.5 * 0.87962, "truncated")
    phi2 = _normal_cdf(np.array([-2.0, 2.0]))
    tcdf = lambda v: (_normal_cdf((v + 1) / 0.5) - phi2[0]) / (phi2[1] - phi2[0])  # noqa: E731
    assert _ks(truncated, tcdf) < KS_LIMIT
    assert set(np.unique(binomial)) == {0.0, 1.0}
    assert abs(binomial.astype(np.float64).mean() - 0.3) < 5 * math.sqrt(0.21 / N)
    assert zeros.shape == (20, 50) and not zeros.any() and (ones == 1).all()


def _unit23(word: int) -> float:
    return (word & 0x7FFFFF) / 2.0**23


def test_the_generator_is_philox_4x32_10_with_the_documented_bit_maps():
    """Seed 0, first call: block 0 is Philox's counter-0 key-0 known answer."""
    f32 = K.random_uniform((4,), dtype="float32", seed=0)
    f64 = K.random_uniform((2,), dtype="float64", seed=0)
    f16 = K.random_uniform((4,), dtype="float16", seed=0)
    n32 = K.random_normal((4,), dtype="float32", seed=0)
    got = K.function([], [f32, f64, f16, n32])([])
    w = KAT_ZERO
    np.testing.assert_array_equal(got[0], np.array([_unit23(x) for x in w], np.float32))
    mant = [((w[0] << 32 | w[1]) & (2**52 - 1)), ((w[2] << 32 | w[3]) & (2**52 - 1))]
    np.testing.assert_array_equal(got[1], np.array([m / 2.0**52 for m in mant]))
    np.testing.assert_array_equal(got[2], np.array([(x & 0x3FF) / 1024 for x in w], np.float16))
    u = [_unit23(x) for x in w]
    want = []
    for u1, u2 in ((u[0], u[1]), (u[2], u[3])):
        r = math.sqrt(-2 * math.log(1 - u1))
        want += [r * math.cos(2 * math.pi * u2), r * math.sin(2 * math.pi * u2)]
    np.testing.assert_allclose(got[3], np.array(want, np.float32), rtol=1e-5, atol=1e-6)


def test_a_seed_reproduces_across_traced_functions_and_calls_advance():
    def traced() -> aotk_function.Function:
        return K.function([], [K.random_normal((1000,), seed=7), K.random_uniform((3,), seed=7)])

    f, g = traced(), traced()
    first_f, first_g = f([]), g([])
    for a, b in zip(first_f, first_g, strict=True):
        np.testing.assert_array_equal(a, b)
    second_f = f([])
    assert not np.array_equal(second_f[0], first_f[0])
    np.testing.assert_array_equal(g([])[0], second_f[0])
    # two calls with one seed are one stream (TF's graph and op seeds); a new seed is not
    same, other = K.random_normal((1000,), seed=7), K.random_normal((1000,), seed=8)
    a, b = K.function([], [same, other])([])
    np.testing.assert_array_equal(a, first_f[0])
    assert not np.array_equal(a, b)


def test_without_a_seed_every_call_and_every_trace_is_fresh():
    x = K.random_uniform((500,))
    f = K.function([], [x, x * 2])
    a, twice = f([])
    np.testing.assert_array_equal(twice, a * 2)  # one op, one draw per call
    b, _ = f([])
    assert not np.array_equal(a, b)
    c, _ = K.function([], [K.random_uniform((500,)), K.random_uniform((500,)) * 2])([])
    assert not np.array_equal(c, a) and not np.array_equal(c, b)
    np.random.seed(3)  # as in Keras, NumPy's global seed picks the missing seeds
    d = K.eval(K.random_uniform((500,)))
    np.random.seed(3)
    np.testing.assert_array_equal(K.eval(K.random_uniform((500,))), d)


def test_dynamic_shapes_come_from_tensor_dims():
    x = K.placeholder((None, 3))
    y = K.placeholder((2, None, 4))
    outs = [
        K.random_normal(K.shape(x), seed=11),
        K.random_uniform((K.shape(x)[0], 5), 1.0, 2.0, seed=12),
        K.truncated_normal((K.shape(y)[-1], K.shape(y)[1], 2), seed=13),
        K.random_binomial((K.shape(y)[0], K.shape(y)[1]), 0.5, seed=14),
    ]
    f = K.function([x, y], outs)
    for n, m in ((4, 2), (1, 7)):
        a, b, c, d = f([np.zeros((n, 3), np.float32), np.zeros((2, m, 4), np.float32)])
        assert a.shape == (n, 3) and b.shape == (n, 5) and c.shape == (4, m, 2)
        assert d.shape == (2, m)
        assert 1.0 <= b.min() and b.max() < 2.0 and np.abs(c).max() <= 2.0
        assert set(np.unique(d)) <= {0.0, 1.0}
    # element i's value depends on i and the call only: a fresh trace at another size agrees
    g = K.function([x], [K.random_normal(K.shape(x), seed=11)])
    small = g([np.zeros((2, 3), np.float32)])[0]
    h = K.function([x], [K.random_normal(K.shape(x), seed=11)])
    np.testing.assert_array_equal(h([np.zeros((5, 3), np.float32)])[0][:2], small)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_dropout_drops_at_the_rate_and_scales_the_rest(dtype):
    x = K.placeholder((None, 400), dtype=dtype)
    outs = [
        K.dropout(x, 0.3, seed=1),
        K.dropout(x, 0.5, noise_shape=(None, 1), seed=2),
        K.dropout(x, 0.25, noise_shape=(1, 400), seed=3),
        K.dropout(x, 0.0),
    ]
    f = K.function([x], outs)
    for rows in (250, 3):
        value = np.random.default_rng(rows).uniform(1, 2, (rows, 400)).astype(dtype)
        out, rows_out, cols_out, none = f([value])
        for got, level in ((out, 0.3), (rows_out, 0.5), (cols_out, 0.25)):
            assert got.dtype == np.dtype(dtype) and got.shape == value.shape
            kept = got != 0
            want = value.astype(np.float64) / (1 - level)
            # float16 kernels compute in float32 and round once
            rtol = 2 * float(np.finfo(dtype).eps)
            np.testing.assert_allclose(got[kept].astype(np.float64), want[kept], rtol=rtol)
        assert (rows_out == 0).all(axis=1).sum() + (rows_out != 0).all(axis=1).sum() == rows
        assert ((cols_out == 0).all(axis=0) | (cols_out != 0).all(axis=0)).all()
        np.testing.assert_array_equal(none, value)
    assert abs((out != 0).mean() - 0.7) < 5 * math.sqrt(0.21 / out.size)


def test_random_variables_are_filled_by_compiled_code():
    u = K.random_uniform_variable((20, 30), -1.0, 1.0, seed=3, name="u")
    n = K.random_normal_variable((20, 30), 2.0, 0.1, dtype="float64", seed=4)
    assert K.dtype(u) == config.floatx() and K.dtype(n) == "float64" and u.name == "u"
    uv, nv = K.get_value(u), K.get_value(n)
    assert uv.shape == (20, 30) and -1.0 <= uv.min() and uv.max() < 1.0
    assert abs(nv.mean() - 2.0) < 5 * 0.1 / math.sqrt(600)
    again = K.random_uniform_variable((20, 30), -1.0, 1.0, seed=3)
    np.testing.assert_array_equal(K.get_value(again), uv)
    assert not np.array_equal(K.get_value(K.random_uniform_variable((20, 30), -1, 1)), uv)


@pytest.mark.parametrize(
    "make",
    [
        lambda: K.random_uniform((64, 33), -0.3, 0.3, seed=5),
        lambda: K.random_normal((16, 7), 1.0, 0.05, seed=3, dtype="float16"),
        lambda: K.truncated_normal((40, 21), 0.0, 0.1, seed=9, dtype="float64"),
        lambda: K.random_uniform((0, 3), seed=1),
    ],
)
def test_eval_draws_what_compiled_code_draws_without_compiling(make, monkeypatch):
    """K.eval of a random op (Keras's initial weights) calls its micro-kernel directly: the
    numbers and the state it leaves are the compiled function's, and nothing is compiled."""
    drawn_first = make()
    with monkeypatch.context() as no_functions:
        no_functions.setattr(aotk_function, "Function", None)  # K.eval must not build one
        first = K.eval(drawn_first)
    second = aotk_function.Function([], drawn_first)([])  # the state has advanced once
    compiled_first = make()
    f = aotk_function.Function([], compiled_first)
    np.testing.assert_array_equal(first, f([]))
    np.testing.assert_array_equal(second, K.eval(compiled_first))
    assert first.dtype == second.dtype == np.dtype(K.dtype(drawn_first))
    assert first.size == 0 or not np.array_equal(first, second)


def test_dtype_defaults_to_floatx():
    config.set_floatx("float64")
    assert K.random_normal((2,)).dtype == "float64"
    assert K.random_uniform((2,)).dtype == "float64"
    assert K.random_binomial((2,), 0.5).dtype == "float64"
    assert K.truncated_normal((2,)).dtype == "float64"
    config.set_floatx("float16")
    assert K.dropout(K.placeholder((2,)), 0.5).dtype == "float16"


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: K.random_normal((2, None)), ValueError, r"K\.random_normal: shape .* axis 1"),
        (lambda: K.random_normal((2, -1)), ValueError, r"expected an int >= 0"),
        (lambda: K.random_normal("2"), TypeError, r"shape must be a tuple of ints"),
        (lambda: K.random_normal((2,), dtype="int32"), TypeError, r"got 'int32'"),
        (lambda: K.random_uniform((2,), 1.0, 1.0), ValueError, r"minval must be less"),
        (lambda: K.random_uniform((2,), 0.0, float("inf")), ValueError, r"finite"),
        (lambda: K.random_uniform((2,), seed=1.5), TypeError, r"seed must be an int"),
        (lambda: K.random_normal((2,), mean="0"), TypeError, r"mean must be a number"),
        (lambda: K.truncated_normal((2,), stddev=None), TypeError, r"stddev must be a number"),
        (lambda: K.random_binomial((2,), 1.5), ValueError, r"p must be in \[0, 1\], got 1.5"),
        (lambda: K.dropout(K.placeholder((2,)), 1.0), ValueError, r"level must be in \[0, 1\)"),
        (lambda: K.dropout(K.placeholder((2,)), -0.1), ValueError, r"level"),
        (lambda: K.dropout(K.placeholder((2,), dtype="int32"), 0.5), TypeError, r"float tensor"),
        (
            lambda: K.dropout(K.placeholder((2, 3)), 0.5, noise_shape=(2, 4)),
            ValueError,
            r"noise_shape \(2, 4\) does not broadcast",
        ),
        (
            lambda: K.dropout(K.placeholder((3,)), 0.5, noise_shape=(1, 3)),
            ValueError,
            r"at most 1 dims",
        ),
        (
            lambda: K.random_normal_variable((None, 2), 0, 1),
            ValueError,
            r"K\.random_normal_variable: shape",
        ),
        (lambda: K.random_uniform_variable((2,), 1, 0), ValueError, r"low must be less than high"),
        (lambda: K.random_normal_variable((2,), 0, "1"), TypeError, r"scale must be a number"),
        (lambda: K.random_normal(K.zeros((2,))), TypeError, r"must be K\.shape\(x\)"),
        (
            lambda: K.random_normal(
                (K.shape(K.placeholder((None,)))[0], K.shape(K.placeholder((None,)))[0])
            ),
            ValueError,
            r"one tensor",
        ),
    ],
)
def test_bad_arguments_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_gradients_flow_around_random_samples():
    """The reparametrization trick: d sum(h * eps) / dw = x^T eps, eps ~ N(0, 1)."""
    x = K.placeholder((None, 3))
    w = K.variable(np.arange(6, dtype=np.float32).reshape(3, 2))
    h = K.dot(x, w)
    eps = K.random_normal(K.shape(h), seed=5)
    loss = K.sum(h * eps) + K.sum(K.dropout(h, 0.5, seed=6))
    f = K.function([x], [eps, K.dropout(h, 0.5, seed=6), *K.gradients(loss, [w])])
    xv = np.random.default_rng(0).uniform(-1, 1, (4, 3)).astype(np.float32)
    noise, dropped, grad = f([xv])
    kept = (dropped != 0).astype(np.float32) / 0.5
    np.testing.assert_allclose(grad, xv.T @ (noise + kept), rtol=1e-5, atol=1e-6)
