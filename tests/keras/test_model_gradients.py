"""A whole Keras model's loss and weight gradients: compiled against the NumPy interpreter,
and against finite differences, in float64.

The model is a small MobileNetV2 (inverted residual blocks: 1x1 expansion, depthwise 3x3
at strides 1 and 2, 1x1 projection, batch normalization on batch statistics, ReLU6, a
residual add), so fusion, in-place updates and the conv kernels meet as in a real model.
"""

from __future__ import annotations

import numpy as np
import pytest
from keras import backend as KB
from keras import layers, models

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace


def _block(x, expand: int, out: int, stride: int):
    y = layers.Conv2D(expand, 1, use_bias=False)(x)
    y = layers.ReLU(6.0)(layers.BatchNormalization()(y))
    if stride == 2:
        y = layers.ZeroPadding2D(((0, 1), (0, 1)))(y)
    y = layers.DepthwiseConv2D(3, strides=stride, padding="same" if stride == 1 else "valid")(y)
    y = layers.ReLU(6.0)(layers.BatchNormalization()(y))
    y = layers.BatchNormalization()(layers.Conv2D(out, 1, use_bias=False)(y))
    return layers.Add()([x, y]) if stride == 1 and x.shape[-1] == out else y


@pytest.fixture
def float64_training():
    KB.set_floatx("float64")
    K.set_learning_phase(1)  # batch normalization on the batch's statistics
    yield
    KB.set_floatx("float32")
    K.clear_session()


@pytest.mark.slow
def test_a_mobilenet_v2_block_stack_has_the_interpreters_gradients(float64_training):
    inputs = layers.Input((8, 8, 3))
    x = layers.Conv2D(8, 3, padding="same")(inputs)
    x = _block(_block(_block(x, 16, 8, 1), 16, 12, 2), 24, 12, 1)
    x = layers.Dense(5, activation="softmax")(layers.GlobalAveragePooling2D()(x))
    model = models.Model(inputs, x)
    rng = np.random.default_rng(3)
    images = rng.standard_normal((4, 8, 8, 3))
    targets = K.constant(rng.uniform(0.5, 1.5, (4, 5)))
    loss = K.sum(K.log(model.output) * targets)
    weights = model.trainable_weights
    compiled = K.function([model.input], [loss, *K.gradients(loss, weights)])
    got = compiled([images])
    module, captures = trace.extract([model.input], [loss, *K.gradients(loss, weights)])
    want = interp.run_module(module, [images, *(c.storage for c in captures)])
    scale = float(np.median([np.linalg.norm(w) for w in want[1:]]))
    for value, expected in zip(got, want, strict=True):
        # a BN's beta has a zero gradient when another BN follows: relative to the median
        np.testing.assert_allclose(value, expected, rtol=1e-9, atol=1e-12 * scale)

    value_of = K.function([model.input], [loss])
    for i in rng.choice(len(weights), 6, replace=False):
        w = weights[i]
        base = K.get_value(w)
        at = tuple(int(rng.integers(d)) for d in base.shape)
        h, moved = 1e-6, base.copy()
        moved[at] += h
        K.set_value(w, moved)
        plus = value_of([images])[0]
        moved[at] -= 2 * h
        K.set_value(w, moved)
        minus = value_of([images])[0]
        K.set_value(w, base)
        assert (plus - minus) / (2 * h) == pytest.approx(got[1 + i][at], rel=1e-5, abs=1e-7)
