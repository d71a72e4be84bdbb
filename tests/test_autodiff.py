"""K.gradients against central finite differences (float64), compiled against interpreted."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from aotk import backend as K
from aotk import interp
from aotk.dialect import REGISTRY, Kind, linalg, trace
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import reduce as rd
from aotk.dialect import shape as sh
from aotk.dialect import unary as un
from aotk.dialect.identity import StopGradientOp

pytestmark = pytest.mark.usefixtures("float64")  # see conftest.py


def _emit(op, *xs, **attrs):
    return trace.emit(op, *xs, where="test", **attrs)


def _numeric_grad(
    f: Callable[[list[np.ndarray]], float], xs: list[np.ndarray], i: int
) -> np.ndarray:
    g = np.zeros_like(xs[i])
    h = 1e-6
    for idx in np.ndindex(xs[i].shape):
        plus = [x.copy() for x in xs]
        minus = [x.copy() for x in xs]
        plus[i][idx] += h
        minus[i][idx] -= h
        g[idx] = (f(plus) - f(minus)) / (2 * h)
    return g


def check_gradients(
    build: Callable[..., trace.KTensor], arrays: list[np.ndarray], rtol: float = 1e-6
) -> None:
    """Gradients of sum(build(*xs) * weights) by finite differences, interpreted and compiled."""
    xs = [K.placeholder(shape=a.shape) for a in arrays]
    y = build(*xs)
    weights = np.random.default_rng(1).uniform(0.5, 1.5, size=y.shape)
    loss = K.sum(y * K.constant(weights))
    grads = K.gradients(loss, xs)
    assert all(g is not None for g in grads)
    module, captures = trace.extract(xs, [loss])

    def f(values: list[np.ndarray]) -> float:
        return float(interp.run_module(module, values + [c.storage for c in captures])[0])

    grad_module, grad_captures = trace.extract(xs, grads)
    interpreted = interp.run_module(grad_module, arrays + [c.storage for c in grad_captures])
    compiled = K.function(xs, grads)(arrays)
    for i, (gi, gc) in enumerate(zip(interpreted, compiled, strict=True)):
        numeric = _numeric_grad(f, arrays, i)
        np.testing.assert_allclose(gi, numeric, rtol=rtol, atol=1e-7, err_msg=f"input {i}")
        np.testing.assert_allclose(gc, gi, rtol=1e-12, atol=1e-12, err_msg=f"input {i}")


RNG = np.random.default_rng(0)


def _a(*shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return RNG.uniform(lo, hi, size=shape)


UNARY = [
    ("neg", un.NegOp, "any"),
    ("abs", un.AbsOp, "any"),
    ("sqrt", un.SqrtOp, "positive"),
    ("exp", un.ExpOp, "any"),
    ("log", un.LogOp, "positive"),
    ("tanh", un.TanhOp, "any"),
    ("sigmoid", un.SigmoidOp, "any"),
    ("sin", un.SinOp, "any"),
    ("cos", un.CosOp, "any"),
    ("log1p", un.Log1pOp, "positive"),
    ("expm1", un.Expm1Op, "any"),
]


@pytest.mark.parametrize(("name", "op", "domain"), UNARY, ids=[u[0] for u in UNARY])
def test_unary(name, op, domain):
    x = _a(3, 4, lo=0.5, hi=3.0) if domain == "positive" else _a(3, 4)
    check_gradients(lambda t: _emit(op, t), [x])


BINARY = [
    ("add", ar.AddOp),
    ("sub", ar.SubOp),
    ("mul", ar.MulOp),
    ("div", ar.DivOp),
    ("maximum", ar.MaximumOp),
    ("minimum", ar.MinimumOp),
]


@pytest.mark.parametrize(("name", "op"), BINARY, ids=[b[0] for b in BINARY])
def test_binary_with_broadcasting(name, op):
    a, b = _a(3, 4), _a(4, lo=0.5, hi=2.0)
    check_gradients(lambda s, t: _emit(op, s, t), [a, b])
    check_gradients(lambda s, t: _emit(op, s, t), [_a(2, 1, 3), _a(4, 1, lo=0.5)])


# checked by their own tests below (pow's base must be positive; cast, select and
# stop_gradient pass or block cotangents exactly)
OWN_TESTS = {ar.PowOp, ew.CastOp, cmp.SelectOp, StopGradientOp}


def test_every_elementwise_gradient_rule_is_checked_by_finite_differences():
    """A new elementwise op's gradient must join UNARY, BINARY or OWN_TESTS."""
    checked = {op for _, op, _ in UNARY} | {op for _, op in BINARY} | OWN_TESTS
    with_rules = {
        op
        for op, opdef in REGISTRY.items()
        if opdef.kind is Kind.ELEMENTWISE and opdef.grad not in (None, ew.zero_grad, ew.no_grad)
    }
    assert sorted(op.name for op in with_rules - checked) == []


def test_pow_positive_base():
    check_gradients(lambda s, t: _emit(ar.PowOp, s, t), [_a(3, 2, lo=0.5, hi=2.0), _a(3, 2)])


def test_select():
    cond = K.constant(np.array([True, False, True]), dtype="bool")
    check_gradients(lambda s, t: _emit(cmp.SelectOp, cond, s, t), [_a(2, 3), _a(3)])


def test_cast_passes_float_gradients_and_blocks_int_ones():
    # finite differences cannot see through float32 rounding, so check the rule exactly
    x = K.placeholder(shape=(4,))
    w = np.array([0.5, -1.25, 2.0, 3.0], dtype=np.float32)
    loss = K.sum(K.cast(x, "float32") * K.constant(w, dtype="float32"))
    (g,) = K.gradients(loss, [x])
    out = K.function([x], [g])([np.zeros(4)])[0]
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, w.astype(np.float64))
    (g_int,) = K.gradients(K.sum(K.cast(K.cast(x, "int32"), "float64")), [x])
    assert g_int is None


@pytest.mark.parametrize("lhs_shape", [(3, 4), (2, 3, 4), (4,)])
def test_matmul(lhs_shape):
    check_gradients(lambda s, t: _emit(linalg.MatMulOp, s, t), [_a(*lhs_shape), _a(4, 5)])


@pytest.mark.parametrize("op", [rd.ReduceSumOp, rd.ReduceProdOp, rd.ReduceMaxOp, rd.ReduceMinOp])
@pytest.mark.parametrize(("axes", "keepdims"), [((1,), False), ((0, 2), True), ((0, 1, 2), False)])
def test_reductions(op, axes, keepdims):
    x = _a(2, 3, 4, lo=0.5, hi=2.0)
    check_gradients(lambda s: _emit(op, s, axes=axes, keepdims=keepdims), [x])


def test_shape_ops():
    x = _a(2, 3, 4)
    check_gradients(lambda s: _emit(sh.ReshapeOp, s, shape=(4, -1)), [x])
    check_gradients(lambda s: _emit(sh.TransposeOp, s, perm=(2, 0, 1)), [x])
    # read back to front: g transposed back and reversed along the axes that map there
    check_gradients(lambda s: _emit(sh.TransposeOp, s, perm=(2, 0, 1), reverse=(0, 2)), [x])
    check_gradients(lambda s, t: _emit(sh.ConcatOp, s, t, axis=1), [x, _a(2, 2, 4)])
    check_gradients(lambda s: s[1:, ::1, 1:3], [x])
    check_gradients(lambda s: s[0, -1], [x])


def test_compositions():
    check_gradients(lambda s: K.softmax(s), [_a(3, 5)])  # aotk.softmax
    check_gradients(lambda s: K.softmax(s, axis=0), [_a(3, 5)])  # the composition
    check_gradients(lambda s: K.logsumexp(s, axis=-1), [_a(3, 5)])  # aotk.logsumexp
    check_gradients(lambda s: K.logsumexp(s, axis=2, keepdims=True), [_a(2, 4, 3)])
    check_gradients(lambda s: K.sigmoid(s) * K.softplus(s), [_a(3, 5)])
    check_gradients(lambda s: K.relu(s, alpha=0.1, max_value=1.5), [_a(3, 5)])
    check_gradients(lambda s: K.mean(K.square(s), axis=0), [_a(3, 5)])


def test_gradient_of_unrelated_variable_is_none_and_loss_is_summed():
    x = K.placeholder(shape=(None, 3))
    w = K.variable(np.ones(3))
    unused = K.variable(np.ones(3))
    gw, gu, gx = K.gradients(x * w, [w, unused, x])  # non-scalar loss: summed
    assert gu is None
    out = K.function([x], [gw, gx])([np.arange(6.0).reshape(2, 3)])
    np.testing.assert_allclose(out[0], [3, 5, 7])
    np.testing.assert_allclose(out[1], np.ones((2, 3)))


def test_stop_gradient_blocks_the_path():
    x = K.placeholder(shape=(3,))
    y = K.sum(x * K.stop_gradient(x))
    (g,) = K.gradients(y, [x])
    np.testing.assert_allclose(K.function([x], [g])([np.array([1.0, 2.0, 3.0])])[0], [1, 2, 3])
    both = K.stop_gradient([x, x])
    assert isinstance(both, list) and len(both) == 2


def test_gradients_errors():
    x = K.placeholder(shape=(3,))
    with pytest.raises(TypeError, match=r"K\.gradients: the loss must be a float tensor"):
        K.gradients(K.cast(x, "int32"), [x])
    with pytest.raises(TypeError, match=r"K.gradients: variables\[0\] must be a tensor"):
        K.gradients(K.sum(x), [np.ones(3)])


FAMILY = {
    "sin_cos": (lambda s: K.sin(s) * K.cos(s), [(3, 4)]),
    "elu_softsign": (lambda s: K.elu(s) + K.softsign(s), [(3, 4)]),
    "logsumexp": (lambda s: K.logsumexp(s, axis=1), [(3, 4)]),
    "var_std": (lambda s: K.var(s, axis=0) + K.std(s, axis=1, keepdims=True), [(3, 4)]),
    "cumsum_cumprod": (lambda s: K.cumsum(s, axis=1) + K.cumprod(s, axis=1), [(3, 4)]),
    "batch_dot": (lambda s, t: K.batch_dot(s, t, axes=(2, 1)), [(2, 3, 4), (2, 4, 5)]),
    "batch_dot_2d": (lambda s, t: K.batch_dot(s, t, axes=1), [(3, 4), (3, 4)]),
    "batch_dot_scores": (lambda s, t: K.batch_dot(s, t, axes=(2, 2)), [(2, 3, 4), (2, 5, 4)]),
    "batch_dot_transposed": (lambda s, t: K.batch_dot(s, t, axes=(1, 2)), [(2, 4, 3), (2, 5, 4)]),
    "padding": (lambda s: K.spatial_2d_padding(s, ((1, 0), (2, 1))), [(2, 3, 2, 2)]),
    "tile": (lambda s: K.tile(s, (2, 1)), [(2, 3)]),
    "repeat_elements": (lambda s: K.repeat_elements(s, 2, 1), [(2, 3)]),
    "categorical_xent": (
        lambda s: K.categorical_crossentropy(K.constant(np.eye(3)[[0, 2]]), K.softmax(s)),
        [(2, 3)],
    ),
    "binary_xent_logits": (
        lambda s: K.binary_crossentropy(
            K.constant(np.array([[0.0, 1.0], [1.0, 0.0]])), s, from_logits=True
        ),
        [(2, 2)],
    ),
    "pool2d_max_same": (
        lambda s: K.pool2d(s, (2, 2), strides=(2, 1), padding="same", pool_mode="max"),
        [(2, 5, 4, 3)],
    ),
    "pool2d_avg_same": (
        lambda s: K.pool2d(s, (3, 2), strides=(2, 2), padding="same", pool_mode="avg"),
        [(2, 5, 4, 3)],
    ),
    "pool2d_max_valid_first": (
        lambda s: K.pool2d(s, (2, 2), padding="valid", data_format="channels_first"),
        [(1, 3, 4, 5)],
    ),
    "conv2d_same_strided": (
        lambda s, t: K.conv2d(s, t, strides=(2, 1), padding="same"),
        [(2, 5, 4, 3), (3, 2, 3, 4)],
    ),
    "conv2d_dilated_first": (
        lambda s, t: K.conv2d(
            s, t, padding="valid", dilation_rate=(2, 1), data_format="channels_first"
        ),
        [(1, 2, 6, 4), (2, 2, 2, 3)],
    ),
    "conv1d_causal": (lambda s, t: K.conv1d(s, t, padding="causal"), [(2, 6, 3), (3, 3, 2)]),
    # a vector of output channels or more: the tiled kernel gradient; strides that leave
    # input rows no window reads: the transposed convolution's extra pad
    "conv2d_valid_strided_wide": (
        lambda s, t: K.conv2d(s, t, strides=(2, 2), padding="valid"),
        [(2, 7, 6, 3), (2, 3, 3, 16)],
    ),
    "conv3d_same_wide": (
        lambda s, t: K.conv3d(s, t, strides=(1, 2, 1), padding="same"),
        [(1, 3, 4, 3, 2), (2, 2, 2, 2, 9)],
    ),
    "depthwise_conv2d": (
        lambda s, t: K.depthwise_conv2d(s, t, padding="same"),
        [(1, 4, 4, 2), (3, 3, 2, 2)],
    ),
    "conv2d_transpose": (
        lambda s, t: K.conv2d_transpose(s, t, (1, 6, 4, 2), strides=(2, 2), padding="same"),
        [(1, 3, 2, 3), (3, 3, 2, 3)],
    ),
    "l2_normalize": (lambda s: K.l2_normalize(s, axis=-1), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(FAMILY))
def test_family_gradients(name):
    build, shapes = FAMILY[name]
    lo = 0.5 if name in ("cumsum_cumprod", "l2_normalize") else -2.0
    check_gradients(build, [_a(*shape, lo=lo) for shape in shapes])


def test_gather_gradient_sums_rows_and_follows_the_index_policy():
    emb = K.variable(np.arange(12.0).reshape(4, 3))
    idx = K.placeholder(shape=(None, 2), dtype="int32")
    w = K.placeholder(shape=(None, 2, 3))
    (g,) = K.gradients(K.sum(K.gather(emb, idx) * w), [emb])
    ids = np.array([[0, 2], [-1, 2], [7, 1]], np.int32)  # -1 wraps, 7 is out of range
    ws = RNG.standard_normal((3, 2, 3))
    want = np.zeros((4, 3))
    for i, j in np.ndindex(ids.shape):
        if -4 <= ids[i, j] < 4:
            want[ids[i, j]] += ws[i, j]
    np.testing.assert_allclose(K.function([idx, w], [g])([ids, ws])[0], want, rtol=1e-12)
