"""The backend contract real Keras relies on: names, tensor attributes, learning phase."""

from __future__ import annotations

import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from keras import backend as KB
from keras import layers
from keras.models import Sequential

from aotk import backend as K


def test_keras_loads_aotk_and_every_backend_name_it_imports():
    assert KB.backend() == "aotk.backend"
    for name in ("is_variable", "size", "name_scope", "symbolic", "eager",
                 "control_dependencies", "pattern_broadcast", "get_session",
                 "set_session", "get_variable_shape", "learning_phase"):  # fmt: skip
        assert callable(getattr(K, name)), name


def test_in_train_phase_marks_its_result_and_set_learning_phase_fixes_it():
    x = K.placeholder(shape=(None, 3))
    y = K.in_train_phase(x * 2.0, x)
    assert y._uses_learning_phase is True
    assert x._uses_learning_phase is False  # placeholders and variables say so
    assert K.variable(1.0)._uses_learning_phase is False
    # an explicit `training`, or no phase at all: no mark, as on Keras's TF backend
    # (its TimeDistributed asks `hasattr`, and fails on a tensor that has the attribute)
    assert not hasattr(
        K.in_train_phase(x * 2.0, x, training=K.placeholder((), dtype="bool")),
        "_uses_learning_phase",
    )
    assert not hasattr(x * 2.0, "_uses_learning_phase")
    K.set_learning_phase(1)
    assert K.learning_phase() == 1 and isinstance(K.learning_phase(), int)
    assert K.in_train_phase(lambda: x * 2.0, x) is not x


def test_keras_shape_is_settable_and_fills_unknown_dims():
    x = K.placeholder(shape=(None, 4))
    assert x._keras_shape == (None, 4)
    assert K.variable(np.zeros((2, 3)))._keras_shape == (2, 3)
    y = x * 2.0  # as on TF's backend: a raw op's result has none until Keras sets it
    assert not hasattr(y, "_keras_shape") and K.int_shape(y) == (None, 4)
    y._keras_shape = (3, 4)
    assert y._keras_shape == (3, 4) == K.int_shape(y)
    x._keras_shape = (8, 4)
    assert K.int_shape(x) == (8, 4)
    x._keras_shape = (8, 5)  # a contradicting hint never overrides an inferred dim
    assert K.int_shape(x) == (8, 4)


def test_lists_of_scalar_tensors_are_stacked():
    x = K.placeholder(shape=(None, 3, 4))
    n = K.prod([K.shape(x)[0], K.shape(x)[2]])
    f = K.function([x], [n])
    assert f([np.zeros((5, 3, 4), np.float32)])[0] == 20


def test_control_dependencies_make_reads_see_the_update():
    v = K.variable(np.array([1.0, 2.0], np.float32))
    u = K.update_add(v, np.array([10.0, 10.0], np.float32))
    with K.control_dependencies([u]):
        seen = v * 1.0
    before = v * 1.0
    f = K.function([], [seen, before], updates=[u])
    got_seen, got_before = f([])
    np.testing.assert_array_equal(got_seen, [11.0, 12.0])
    np.testing.assert_array_equal(got_before, [1.0, 2.0])
    np.testing.assert_array_equal(K.get_value(v), [11.0, 12.0])


def test_eval_of_an_update_applies_it():
    v = K.variable(np.ones((2, 2), np.float32))
    np.testing.assert_array_equal(K.eval(K.update_sub(v, np.full((2, 2), 0.5))), 0.5)
    np.testing.assert_array_equal(K.get_value(v), 0.5)


def test_name_scope_prefixes_variable_names():
    with K.name_scope("model"), K.name_scope("dense_1") as scope:
        kernel = K.variable(np.zeros(2), name="kernel")
    assert scope == "model/dense_1" and kernel.name == "model/dense_1/kernel"
    assert K.is_variable(kernel) and K.variable(np.zeros(1), name="b").name == "b"
    assert K.get_variable_shape(K.variable(np.zeros((2, 3)))) == (2, 3)


def test_unsupported_session_is_a_clear_error():
    with pytest.raises(ValueError, match=r"K\.set_session: aotk has one session"):
        K.set_session(object())
    x = K.placeholder(shape=(2,))
    assert K.get_session().run(x * 2.0, {x: np.ones(2, np.float32)}).tolist() == [2.0, 2.0]


def test_dropout_drops_during_fit_and_not_during_predict():
    model = Sequential(
        [
            layers.Dropout(0.5, input_shape=(400,)),
            layers.Dense(1, use_bias=False, kernel_initializer="ones", trainable=False),
        ]
    )
    model.compile("sgd", "mse")
    assert model.uses_learning_phase
    x = np.ones((4, 400), np.float32)
    y = np.full((4, 1), 400.0, np.float32)
    np.testing.assert_array_equal(model.predict(x), y)
    assert model.evaluate(x, y, verbose=0) == 0.0
    assert model.train_on_batch(x, y) > 0.0  # kept inputs count twice, dropped ones not


def test_batch_normalization_uses_batch_statistics_while_training():
    eps, momentum = 1e-3, 0.9
    model = Sequential(
        [layers.BatchNormalization(input_shape=(3,), epsilon=eps, momentum=momentum)]
    )
    model.compile(keras.optimizers.SGD(lr=0.0), "mse")
    x = np.random.default_rng(0).normal(2.0, 3.0, (16, 3)).astype(np.float32)
    zeros = np.zeros((16, 3), np.float32)
    mean, var = x.mean(0), x.var(0)
    train_loss = model.train_on_batch(x, zeros)
    np.testing.assert_allclose(train_loss, np.mean((x - mean) ** 2 / (var + eps)), rtol=1e-5)
    n = len(x)
    moving_mean, moving_var = model.layers[0].get_weights()[2:]
    np.testing.assert_allclose(moving_mean, (1 - momentum) * mean, rtol=1e-5)
    unbiased = var * n / (n - (1.0 + eps))  # Keras 2.3.1 normalization.py line 195
    np.testing.assert_allclose(moving_var, momentum + (1 - momentum) * unbiased, rtol=1e-5)
    want = (x - moving_mean) / np.sqrt(moving_var + eps)
    np.testing.assert_allclose(model.predict(x), want, rtol=1e-4, atol=1e-5)


def test_reshape_takes_the_batch_as_keras_reshape_passes_it():
    x = K.placeholder(shape=(None, 3, 4))
    flat = K.reshape(x, (K.shape(x)[0], -1))  # keras.layers.Reshape((-1,))
    split = K.reshape(x, (K.shape(x)[0], K.shape(x)[1] * 2, 2))
    assert K.int_shape(flat) == (None, 12) and K.int_shape(split) == (None, 6, 2)
    value = np.arange(60, dtype=np.float32).reshape(5, 3, 4)
    got = K.function([x], [flat, split])([value])
    np.testing.assert_array_equal(got[0], value.reshape(5, 12))
    np.testing.assert_array_equal(got[1], value.reshape(5, 6, 2))
    y = K.placeholder(shape=(None, None, 4))  # the -1 spans an unknown dim, or x's batch
    flat_y, by_x = K.reshape(y, (K.shape(y)[0], -1)), K.reshape(y, (K.shape(x)[0], -1, 4))
    got = K.function([x, y], [flat_y, by_x])([value, value])
    np.testing.assert_array_equal(got[0], value.reshape(5, 12))
    np.testing.assert_array_equal(got[1], value)
    with pytest.raises(TypeError, match=r"K\.reshape: a dim must be an int or a tensor's dim"):
        K.reshape(y, (K.sum(x), -1, 4))


def test_stateful_metrics_include_the_batch_they_are_updated_with():
    model = Sequential([layers.Dense(3, activation="softmax", input_shape=(4,))])
    model.compile("sgd", "categorical_crossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 20)]
    want = np.mean(model.predict(x).argmax(1) == y.argmax(1))  # the weights the step sees
    _, accuracy = model.train_on_batch(x, y)  # Keras resets the metric, then updates it
    np.testing.assert_allclose(accuracy, want, rtol=1e-6)


@pytest.mark.parametrize("unroll", [False, True])
def test_rnn_marks_its_last_output_when_a_step_reads_the_learning_phase(unroll):
    """Keras's RNN layer feeds the phase to a model (its dropout) only when K.rnn says
    the last output uses it."""
    x = K.placeholder(shape=(None, 3, 2))

    def step(dropped):
        def fn(x_t, states):
            h = K.in_train_phase(x_t * 0.5, x_t) if dropped else x_t + states[0]
            return h, [h]

        return fn

    marked = K.rnn(step(True), x, [x[:, 0]], unroll=unroll)[0]
    plain = K.rnn(step(False), x, [x[:, 0]], unroll=unroll)[0]
    assert marked._uses_learning_phase is True
    assert not getattr(plain, "_uses_learning_phase", False)


def test_a_variable_set_as_a_layer_attribute_is_a_trainable_weight():
    """Keras's Layer tracks `K.variable`s set as attributes by their `trainable`, which TF's
    variables have (True); `add_weight`'s own are tracked once, by their flag."""

    class Offset(layers.Layer):
        def build(self, input_shape):
            self.shift = K.variable(np.ones(input_shape[-1], np.float32), name="shift")
            self.frozen = self.add_weight("frozen", shape=(), initializer="zeros", trainable=False)
            super().build(input_shape)

        def call(self, inputs):
            return inputs + self.shift + self.frozen

    layer, x = Offset(), keras.Input((3,))
    y = layer(x)
    (trained,), (frozen,) = layer.trainable_weights, layer.non_trainable_weights
    assert trained is layer.shift and frozen is layer.frozen
    assert K.variable(0.0).trainable is True
    model = keras.Model(x, y)
    model.compile("sgd", "mse")
    before = K.get_value(layer.shift)
    model.train_on_batch(np.zeros((4, 3), np.float32), np.full((4, 3), 2.0, np.float32))
    assert np.all(K.get_value(layer.shift) > before)  # trained: the loss pulls it up to 2


_CLEAR_SESSION = """
import sys
if sys.argv[1] == "aotk first":
    import aotk.backend
from keras import backend as KB, layers
import aotk.backend as K
from aotk.keras_names import KNOWN_BACKENDS_ONLY
print([n for n in KNOWN_BACKENDS_ONLY if getattr(KB, n, None) is not getattr(K, n)])
first = layers.Dense(2).name
KB.clear_session()
print(first, layers.Dense(2).name, layers.Dense(2).name)
"""


@pytest.mark.parametrize("order", ["keras first", "aotk first"])
def test_keras_backend_has_the_session_names_of_its_known_backends(order):
    """Keras 2.3.1 hands `clear_session` and the session functions on from TensorFlow
    only; on aotk they are there too, whichever of the two a program imports first, and
    `keras.backend.clear_session()` starts the layer names again as it does on TF."""
    env = {**os.environ, "KERAS_BACKEND": "aotk.backend"}
    ran = subprocess.run(
        [sys.executable, "-c", _CLEAR_SESSION, order],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines() == ["[]", "dense_1 dense_1 dense_2"]
