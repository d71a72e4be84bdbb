"""Backend calls in the forms Keras 2.3's own layers and losses make (found by running its
layer, loss and model test suites on aotk): a reshape that keeps a dynamic axis and
infers another, a clip bounded on one side, a shared layer's updates listed twice."""

from __future__ import annotations

import numpy as np
import pytest

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.dialect.data import ViewOp
from aotk.dialect.views import ReshapeDimsOp

RNG = np.random.default_rng(11)


def _compiled_and_interpreted(inputs: list, outputs: list, values: list) -> list[list]:
    module, captures = trace.extract(inputs, outputs)
    interpreted = interp.run_module(module, [*values, *(c.storage for c in captures)])
    return [list(K.function(inputs, outputs)(values)), list(interpreted)]


def test_a_reshape_keeps_a_dynamic_axis_and_infers_one_over_the_others() -> None:
    """Keras's Reshape((-1, 1)) on (None, None, 4) passes (K.shape(x)[0], -1, 1): two
    dims unknown while tracing, each a product of x's dims: a view, no copy."""
    x = K.placeholder((None, None, 4))
    b, t = K.shape(x)[0], K.shape(x)[1]
    outs = [
        K.reshape(x, (b, -1, 1)),
        K.reshape(x, (b, t, 2, 2)),
        K.reshape(x, (-1, t)),
        K.reshape(x, (t, -1, 2)),
    ]
    assert [K.int_shape(o) for o in outs] == [
        (None, None, 1),
        (None, None, 2, 2),
        (None, None),
        (None, None, 2),
    ]
    assert all(isinstance(o.value.owner, ViewOp) for o in outs)
    for shape in [(2, 6, 4), (3, 1, 4), (0, 5, 4)]:
        v = RNG.standard_normal(shape).astype(np.float32)
        n, s = shape[:2]
        want = [
            v.reshape(shape) for shape in [(n, 4 * s, 1), (n, s, 2, 2), (4 * n, s), (s, 2 * n, 2)]
        ]
        for got in _compiled_and_interpreted([x], outs, [v]):
            for g, w in zip(got, want, strict=True):
                assert g.shape == w.shape
                np.testing.assert_array_equal(g, w)


def test_the_gradient_flows_back_through_such_a_reshape(float64) -> None:
    x = K.placeholder((None, None, 4))
    w = K.variable(RNG.standard_normal((1, 3)))
    y = K.dot(K.reshape(x, (K.shape(x)[0], -1, 1)), w)  # (n, 4t, 3)
    (grad,) = K.gradients(K.sum(K.tanh(y)), [x])
    v = RNG.standard_normal((2, 3, 4))
    wv = K.get_value(w)
    flat = v.reshape(2, -1, 1)
    want = ((1 - np.tanh(flat @ wv) ** 2) @ wv.T).reshape(v.shape)
    for (got,) in _compiled_and_interpreted([x], [grad], [v]):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_reshape_by_another_tensors_dims_is_read_at_run_time() -> None:
    """Keras's TimeDistributed over sequences of any length: y (batch * steps, 5) back to
    (-1, K.shape(x)[1], 5), a dim of x, not of y. Checked at the call, as TF does."""
    x, y = K.placeholder((None, None, 3)), K.placeholder((None, 5))
    out = K.reshape(y, (-1, K.shape(x)[1], 5))
    assert K.int_shape(out) == (None, None, 5)
    assert isinstance(out.value.owner, ReshapeDimsOp)
    for n, steps in [(2, 4), (1, 1), (0, 3)]:
        xv = np.zeros((n, steps, 3), np.float32)
        yv = RNG.standard_normal((n * steps, 5)).astype(np.float32)
        for (got,) in _compiled_and_interpreted([x, y], [out], [xv, yv]):
            np.testing.assert_array_equal(got, yv.reshape(n, steps, 5))
    f = K.function([x, y], [out])
    with pytest.raises(ValueError, match=r"aotk.reshape_dims: cannot infer the -1 of \(-1, 3, 5\)"):
        f([np.zeros((2, 3, 3), np.float32), np.zeros((8, 5), np.float32)])
    with pytest.raises(ValueError, match=r"40 elements are not a multiple of 0"):
        f([np.zeros((2, 0, 3), np.float32), np.zeros((8, 5), np.float32)])


def test_its_gradient_takes_the_operands_shape(float64) -> None:
    x, y = K.placeholder((None, None, 3)), K.placeholder((None, 5))
    out = K.reshape(y, (-1, K.shape(x)[1], 5))
    (grad,) = K.gradients(K.sum(out * K.constant(np.arange(5.0))), [y])
    xv, yv = np.zeros((2, 4, 3)), RNG.standard_normal((8, 5))
    for (got,) in _compiled_and_interpreted([x, y], [grad], [xv, yv]):
        np.testing.assert_array_equal(got, np.broadcast_to(np.arange(5.0), (8, 5)))


def test_dims_of_x_the_trace_cannot_settle_are_checked_at_the_call() -> None:
    """(K.shape(x)[0], K.shape(x)[0], 4) fits x (n, n, 4) only, (K.shape(x)[0], -1, 3)
    x (n, t, 4) with 4t a multiple of 3: legal shapes, refused where they do not fit."""
    x = K.placeholder((None, None, 4))
    b = K.shape(x)[0]
    square, thirds = K.reshape(x, (b, b, 4)), K.reshape(x, (b, -1, 3))
    v = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(K.function([x], [thirds])([v])[0], v.reshape(2, 4, 3))
    with pytest.raises(ValueError, match=r"cannot reshape \(2, 3, 4\) to \(2, 2, 4\)"):
        K.function([x], [square])([v])
    w = RNG.standard_normal((2, 2, 4)).astype(np.float32)
    np.testing.assert_array_equal(K.function([x], [square])([w])[0], w)
    with pytest.raises(ValueError, match=r"16 elements are not a multiple of 6"):
        K.function([x], [thirds])([w])
    with pytest.raises(ValueError, match=r"K.reshape: shape \(-1, 2, -1\) has more than one -1"):
        K.reshape(x, (-1, 2, -1))
    z = K.placeholder((None, 3, 4))  # every unknown dim kept: the -1 is static
    with pytest.raises(ValueError, match=r"12 elements a row\) do not divide by the shape's \(5\)"):
        K.reshape(z, (K.shape(z)[0], -1, 5))


def test_a_shape_without_a_minus_one_never_takes_other_dims_in() -> None:
    """(K.shape(x)[0], 8) of x (n, t, 4) fits t = 2 only, checked at the call; of x (n, 3, 4)
    it fits no n and is refused while tracing (a plain -1 would give 12n/8 or 12n/5 rows)."""
    x = K.placeholder((None, None, 4))
    rows = K.function([x], [K.reshape(x, (K.shape(x)[0], 8))])
    v = RNG.standard_normal((3, 2, 4)).astype(np.float32)
    np.testing.assert_array_equal(rows([v])[0], v.reshape(3, 8))
    with pytest.raises(ValueError, match=r"cannot reshape \(3, 4, 4\) to \(3, 8\)"):
        rows([np.zeros((3, 4, 4), np.float32)])
    z = K.placeholder((None, 3, 4))
    with pytest.raises(ValueError, match=r"hold 12 elements a row, the shape's 5"):
        K.reshape(z, (K.shape(z)[0], 5))
    w = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    flat = K.function([z], [K.reshape(z, (12, K.shape(z)[0]))])([w])[0]
    np.testing.assert_array_equal(flat, w.reshape(12, 5))


@pytest.mark.parametrize(
    ("low", "high", "expect"),
    [
        (1e-7, None, lambda v: np.maximum(v, 1e-7)),
        (None, 0.5, lambda v: np.minimum(v, 0.5)),
        (None, None, lambda v: v),
        (0.5, -1.0, lambda v: np.full_like(v, 0.5)),  # a max below the min: the min
    ],
)
def test_clip_with_a_bound_of_none_clips_on_the_other_side_only(low, high, expect) -> None:
    """Keras's MSLE and MAPE losses call K.clip(x, K.epsilon(), None)."""
    x = K.placeholder((None, 3))
    v = RNG.standard_normal((4, 3)).astype(np.float32)
    for (got,) in _compiled_and_interpreted([x], [K.clip(x, low, high)], [v]):
        np.testing.assert_array_equal(got, expect(v).astype(np.float32))


def test_an_update_listed_twice_is_applied_once() -> None:
    """A BatchNormalization shared by a model and a model wrapping it lists its moving
    averages' updates once for each: the same variable and the same new value."""
    v = K.variable(np.ones(3, np.float32))
    x = K.placeholder((3,))
    step = K.update(v, v * 2.0 + x)
    f = K.function([x], [v * 1.0], updates=[step, step, (v, step.value)])
    (before,) = f([np.ones(3, np.float32)])
    np.testing.assert_array_equal(before, [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(K.get_value(v), [3.0, 3.0, 3.0])  # 2 * 1 + 1, once


def test_two_different_new_values_for_one_variable_are_refused_by_name() -> None:
    v = K.variable(np.ones(3, np.float32), name="moving_mean")
    with pytest.raises(ValueError, match=r"variable 'moving_mean.*' is updated twice, to diff"):
        K.function([], [v * 1.0], updates=[K.update(v, v * 2.0), K.update(v, v * 3.0)])


def test_squeezing_an_axis_unknown_while_tracing_is_checked_at_the_call() -> None:
    """Keras's sparse_categorical_accuracy squeezes targets of shape (None, None)."""
    x = K.placeholder((None, None))
    y = K.squeeze(x, -1)
    assert K.int_shape(y) == (None,)
    v = RNG.standard_normal((5, 1)).astype(np.float32)
    for (got,) in _compiled_and_interpreted([x], [y], [v]):
        np.testing.assert_array_equal(got, v[:, 0])
    with pytest.raises(ValueError, match=r"cannot reshape \(5, 2\) to \(5,\)"):
        K.function([x], [y])([np.zeros((5, 2), np.float32)])


def test_stack_gives_numbers_the_dtype_of_the_tensors_beside_them() -> None:
    """Keras's confusion-matrix metrics stack [1, K.size(y_pred)] (an int32)."""
    x = K.placeholder((None, 3))
    n = K.stack([1, K.shape(x)[0], 2.0])
    assert n.dtype == "int32"
    (got,) = K.function([x], [n])([np.zeros((4, 3), np.float32)])
    np.testing.assert_array_equal(got, np.array([1, 4, 2], np.int32))


def test_tile_by_counts_known_at_run_time() -> None:
    """Keras's confusion-matrix metrics tile thresholds by K.size(y_pred): a count that
    is a product of dims of a tensor (K.size, K.shape(y)[i]), on any axis of x."""
    y = K.placeholder((None, 2))
    x = K.placeholder((3, 2))
    by_size = K.tile(K.expand_dims(x[:, 0], 1), K.cast(K.stack([1, K.size(y)]), "int32"))
    by_rows = K.tile(x, K.stack([K.shape(y)[0], 2]))
    by_shape = K.tile(x, K.shape(y))  # (rows, 2): rows x 3 by 2 x 2
    assert K.int_shape(by_size) == (3, None) and K.int_shape(by_rows) == (None, 4)
    xv = RNG.standard_normal((3, 2)).astype(np.float32)
    for rows in (4, 1, 0):
        yv = np.zeros((rows, 2), np.float32)
        want = [np.tile(xv[:, :1], (1, 2 * rows)), np.tile(xv, (rows, 2)), np.tile(xv, (rows, 2))]
        for got in _compiled_and_interpreted([x, y], [by_size, by_rows, by_shape], [xv, yv]):
            for g, w in zip(got, want, strict=True):
                assert g.shape == w.shape
                np.testing.assert_array_equal(g, w)


def test_the_gradient_of_such_a_tile_sums_the_copies(float64) -> None:
    y, x = K.placeholder((None, 2)), K.placeholder((3, 2))
    (grad,) = K.gradients(K.sum(K.tile(x, K.stack([K.shape(y)[0], 1])) ** 2), [x])
    xv = RNG.standard_normal((3, 2))
    for (got,) in _compiled_and_interpreted([x, y], [grad], [xv, np.zeros((5, 2))]):
        np.testing.assert_allclose(got, 2 * xv * 5, rtol=1e-12)


def test_a_count_that_is_no_dim_is_refused() -> None:
    x = K.placeholder((3, 2))
    with pytest.raises(TypeError, match=r"K.tile: n must be ints, or a tensor of ints known"):
        K.tile(x, K.cast(K.stack([1, K.sum(x)]), "int32"))
