"""The bad-input catalogue of the K API: one misuse per entry, each expected to raise a
ValueError or TypeError whose message names the function and the kind of mistake.

An entry is (function name, the misuse, words of which the message must contain one).
The message must start with "K.<name>:". The callables build fresh placeholders, so each
entry stands alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from aotk import backend as K


def x2() -> Any:
    return K.placeholder((None, 4), name="x2")


def x3() -> Any:
    return K.placeholder((None, 5, 4), name="x3")


def x4() -> Any:
    return K.placeholder((None, 6, 6, 3), name="x4")


def x5() -> Any:
    return K.placeholder((None, 4, 4, 4, 2), name="x5")


def i2() -> Any:
    return K.placeholder((None, 4), dtype="int32", name="i2")


def w(*shape: int) -> Any:
    return K.variable(np.ones(shape, np.float32))


Misuse = tuple[str, Callable[[], Any], tuple[str, ...]]


def _expecting(words: tuple[str, ...], entries: list[tuple[str, Callable[[], Any]]]):
    """The entries (function name, misuse), each expecting one of `words`."""
    return [(name, misuse, words) for name, misuse in entries]


AXIS: list[Misuse] = [
    (name, (lambda f=f: f(x2())), ("axis",))
    for name, f in [
        ("sum", lambda t: K.sum(t, axis=2)),
        ("prod", lambda t: K.prod(t, axis=-3)),
        ("max", lambda t: K.max(t, axis=7)),
        ("min", lambda t: K.min(t, axis=(0, 2))),
        ("mean", lambda t: K.mean(t, axis=2)),
        ("std", lambda t: K.std(t, axis=2)),
        ("var", lambda t: K.var(t, axis=2)),
        ("any", lambda t: K.any(t, axis=2)),
        ("all", lambda t: K.all(t, axis=2)),
        ("argmax", lambda t: K.argmax(t, axis=2)),
        ("argmin", lambda t: K.argmin(t, axis=-3)),
        ("cumsum", lambda t: K.cumsum(t, axis=2)),
        ("cumprod", lambda t: K.cumprod(t, axis=2)),
        ("logsumexp", lambda t: K.logsumexp(t, axis=2)),
        ("softmax", lambda t: K.softmax(t, axis=2)),
        ("l2_normalize", lambda t: K.l2_normalize(t, axis=2)),
        ("concatenate", lambda t: K.concatenate([t, t], axis=2)),
        ("stack", lambda t: K.stack([t, t], axis=4)),
        ("squeeze", lambda t: K.squeeze(t, axis=5)),
        ("expand_dims", lambda t: K.expand_dims(t, axis=4)),
        ("repeat_elements", lambda t: K.repeat_elements(t, 2, axis=2)),
        ("reverse", lambda t: K.reverse(t, axes=2)),
        ("categorical_crossentropy", lambda t: K.categorical_crossentropy(t, t, axis=2)),
        (
            "sparse_categorical_crossentropy",
            lambda t: K.sparse_categorical_crossentropy(K.placeholder((None,)), t, axis=3),
        ),
        ("sum", lambda t: K.sum(t, axis=1.5)),
    ]
] + [("permute_dimensions", lambda: K.permute_dimensions(x2(), (0, 2)), ("perm", "axes"))]

DATA_FORMAT: list[Misuse] = _expecting(
    ("data_format",),
    [
        ("conv1d", lambda: K.conv1d(x3(), w(3, 4, 2), data_format="channels_middle")),
        ("conv2d", lambda: K.conv2d(x4(), w(3, 3, 3, 2), data_format="NHWC")),
        ("conv3d", lambda: K.conv3d(x5(), w(3, 3, 3, 2, 2), data_format="bogus")),
        (
            "conv2d_transpose",
            lambda: K.conv2d_transpose(x4(), w(3, 3, 2, 3), (1, 6, 6, 2), data_format="bogus"),
        ),
        (
            "separable_conv2d",
            lambda: K.separable_conv2d(x4(), w(3, 3, 3, 1), w(1, 1, 3, 2), data_format="bogus"),
        ),
        ("depthwise_conv2d", lambda: K.depthwise_conv2d(x4(), w(3, 3, 3, 1), data_format="x")),
        ("pool2d", lambda: K.pool2d(x4(), (2, 2), data_format="bogus")),
        ("pool3d", lambda: K.pool3d(x5(), (2, 2, 2), data_format="bogus")),
        ("bias_add", lambda: K.bias_add(x4(), w(3), data_format="bogus")),
        ("resize_images", lambda: K.resize_images(x4(), 2, 2, "bogus")),
        ("resize_volumes", lambda: K.resize_volumes(x5(), 2, 2, 2, "bogus")),
        ("spatial_2d_padding", lambda: K.spatial_2d_padding(x4(), data_format="bogus")),
        ("spatial_3d_padding", lambda: K.spatial_3d_padding(x5(), data_format="bogus")),
        (
            "local_conv2d",
            lambda: K.local_conv2d(
                x4(), w(16, 9 * 3, 2), (3, 3), (1, 1), (4, 4), data_format="bogus"
            ),
        ),
    ],
)

PADDING: list[Misuse] = _expecting(
    ("padding",),
    [
        ("conv1d", lambda: K.conv1d(x3(), w(3, 4, 2), padding="sometimes")),
        ("conv2d", lambda: K.conv2d(x4(), w(3, 3, 3, 2), padding="full")),
        ("conv3d", lambda: K.conv3d(x5(), w(3, 3, 3, 2, 2), padding="bogus")),
        ("pool2d", lambda: K.pool2d(x4(), (2, 2), padding="bogus")),
        ("pool3d", lambda: K.pool3d(x5(), (2, 2, 2), padding="bogus")),
        (
            "separable_conv1d",
            lambda: K.separable_conv1d(x3(), w(3, 4, 1), w(1, 4, 2), padding="bogus"),
        ),
        ("depthwise_conv2d", lambda: K.depthwise_conv2d(x4(), w(3, 3, 3, 1), padding="x")),
        ("temporal_padding", lambda: K.temporal_padding(x3(), padding=(1, 2, 3))),
        ("spatial_2d_padding", lambda: K.spatial_2d_padding(x4(), padding=((1, 1),))),
    ],
)

RANK: list[Misuse] = _expecting(
    ("rank", "d tensor", "at least", "must be (", "scalar"),
    [
        ("conv2d", lambda: K.conv2d(x3(), w(3, 3, 3, 2))),
        ("conv2d", lambda: K.conv2d(x4(), w(3, 3, 3))),
        ("conv1d", lambda: K.conv1d(x4(), w(3, 4, 2))),
        ("conv3d", lambda: K.conv3d(x4(), w(3, 3, 3, 2, 2))),
        ("pool2d", lambda: K.pool2d(x3(), (2, 2))),
        ("pool3d", lambda: K.pool3d(x4(), (2, 2, 2))),
        ("batch_dot", lambda: K.batch_dot(K.placeholder((4,)), K.placeholder((4,)))),
        ("bias_add", lambda: K.bias_add(x4(), w(3, 1, 1, 1))),
        ("resize_images", lambda: K.resize_images(x3(), 2, 2, "channels_last")),
        ("spatial_2d_padding", lambda: K.spatial_2d_padding(x3())),
        ("temporal_padding", lambda: K.temporal_padding(x2())),
        ("rnn", lambda: K.rnn(lambda i, s: (i, s), x2(), [K.zeros((1, 4))])),
        (
            "ctc_batch_cost",
            lambda: K.ctc_batch_cost(
                K.placeholder((None, 3), dtype="int32"),
                x2(),
                K.placeholder((None, 1), dtype="int32"),
                K.placeholder((None, 1), dtype="int32"),
            ),
        ),
        ("l2_normalize", lambda: K.l2_normalize(K.constant(1.0), axis=0)),
        ("batch_flatten", lambda: K.batch_flatten(K.constant(1.0))),
        ("gather", lambda: K.gather(K.constant(1.0), K.constant([0], dtype="int32"))),
        ("squeeze", lambda: K.squeeze(K.constant(1.0), 0)),
        ("bias_add", lambda: K.bias_add(K.constant(1.0), w(2))),
        ("foldl", lambda: K.foldl(lambda acc, x: acc + x, K.constant(1.0))),
        ("foldr", lambda: K.foldr(lambda acc, x: acc + x, 5)),
        ("map_fn", lambda: K.map_fn(lambda x: x, K.constant(1.0))),
    ],
)

SHAPE: list[Misuse] = _expecting(
    ("shape", "channels", "broadcast", "size", "cannot contract"),
    [
        ("dot", lambda: K.dot(x2(), w(5, 3))),
        ("batch_dot", lambda: K.batch_dot(x3(), K.placeholder((None, 5, 4)), axes=(2, 1))),
        ("concatenate", lambda: K.concatenate([x2(), K.placeholder((None, 4, 1))])),
        ("reshape", lambda: K.reshape(w(4, 6), (5, 5))),
        ("reshape", lambda: K.reshape(x2(), (-1, -1))),
        ("conv2d", lambda: K.conv2d(x4(), w(3, 3, 5, 2))),
        ("bias_add", lambda: K.bias_add(x4(), w(4))),
        ("categorical_crossentropy", lambda: K.categorical_crossentropy(x2(), w(3, 5))),
        ("binary_crossentropy", lambda: K.binary_crossentropy(w(2, 3), w(3, 2))),
        ("batch_normalization", lambda: K.batch_normalization(x2(), w(4), w(4), w(3), w(4))),
        ("stack", lambda: K.stack([x2(), x3()])),
        ("in_top_k", lambda: K.in_top_k(x2(), K.placeholder((None, 2), dtype="int32"), 1)),
        ("local_conv1d", lambda: K.local_conv1d(x3(), w(3, 6, 2), (3,), (1,))),
        ("random_normal_variable", lambda: K.random_normal_variable((2, -1), 0, 1)),
        ("set_value", lambda: K.set_value(w(2, 3), np.ones((3, 2), np.float32))),
        ("update", lambda: K.update(w(2, 3), K.zeros((3, 2)))),
        ("update_add", lambda: K.update_add(w(2, 3), K.zeros((4,)))),
        ("switch", lambda: K.switch(K.placeholder((None, 3), dtype="bool"), x2(), x2())),
        ("maximum", lambda: K.maximum(w(2, 3), w(3, 2))),
        ("equal", lambda: K.equal(w(2, 3), w(4, 3))),
        ("slice", lambda: K.slice(x2(), (0, 1), (1,))),
        ("ones", lambda: K.ones((2, -3))),
        ("random_normal", lambda: K.random_normal((2, -1))),
        ("placeholder", lambda: K.placeholder(shape=(None, -4))),
        ("ctc_decode", lambda: K.ctc_decode(x3(), K.placeholder((None, 2), dtype="int32"))),
    ],
)

DTYPE: list[Misuse] = _expecting(
    ("dtype", "integer tensor", "float"),
    [
        ("cast", lambda: K.cast(x2(), "float17")),
        ("placeholder", lambda: K.placeholder((2,), dtype="complex64")),
        ("variable", lambda: K.variable(np.ones(2), dtype="string")),
        ("zeros", lambda: K.zeros((2,), dtype="float8")),
        ("ones_like", lambda: K.ones_like(x2(), dtype="float9")),
        ("gather", lambda: K.gather(w(4, 2), K.placeholder((None,)))),
        ("one_hot", lambda: K.one_hot(x2(), 3)),
        ("in_top_k", lambda: K.in_top_k(x2(), K.placeholder((None,)), 1)),
        ("conv2d", lambda: K.conv2d(K.placeholder((None, 6, 6, 3), dtype="int32"), w(3, 3, 3, 2))),
        ("set_value", lambda: K.set_value(w(2), np.array(["a", "b"]))),
        ("random_uniform", lambda: K.random_uniform((2,), dtype="int32")),
        ("arange", lambda: K.arange(5, dtype="bool")),
        ("update", lambda: K.update(w(2), K.placeholder((2,), dtype="int32"))),
    ],
)

VALUE: list[Misuse] = [
    ("arange", lambda: K.arange(0, 10, 0), ("step",)),
    ("eye", lambda: K.eye(-1), ("dim",)),
    ("one_hot", lambda: K.one_hot(i2(), -1), ("num_classes",)),
    ("one_hot", lambda: K.one_hot(i2(), 2.5), ("num_classes",)),
    ("tile", lambda: K.tile(x2(), (1, -2)), ("n",)),
    ("repeat_elements", lambda: K.repeat_elements(x2(), -1, 1), ("rep",)),
    ("repeat", lambda: K.repeat(x2(), -3), ("n",)),
    ("dropout", lambda: K.dropout(x2(), 1.5), ("level",)),
    ("resize_images", lambda: K.resize_images(x4(), 0, 2, "channels_last"), ("factor",)),
    ("pool2d", lambda: K.pool2d(x4(), (0, 2)), ("pool_size",)),
    ("pool2d", lambda: K.pool2d(x4(), (2, 2), strides=(0, 1)), ("strides",)),
    ("pool2d", lambda: K.pool2d(x4(), (2, 2), pool_mode="median"), ("pool_mode",)),
    ("conv2d", lambda: K.conv2d(x4(), w(3, 3, 3, 2), strides=(0, 1)), ("strides",)),
    ("conv2d", lambda: K.conv2d(x4(), w(3, 3, 3, 2), dilation_rate=(0, 1)), ("dilation",)),
    (
        "in_top_k",
        lambda: K.in_top_k(x2(), K.placeholder((None,), dtype="int32"), 1.5),
        ("k must",),
    ),
    ("random_binomial", lambda: K.random_binomial((3,), p=1.5), ("p",)),
    ("function", lambda: K.function([w(2)], [K.constant(1.0)]), ("input",)),
    ("function", lambda: K.function([x2()], [3.0]), ("output",)),
    ("function", lambda: K.function(K.placeholder((2, 4)), x2()), ("list of placeholders",)),
    ("function", lambda: K.function([x2()], 3.0), ("tensor or a list",)),
    ("function", lambda: K.function([x2()], x2(), updates=w(2)), ("updates must be",)),
    ("gradients", lambda: K.gradients(K.sum(x2()), [np.ones(2)]), ("variables",)),
    ("set_learning_phase", lambda: K.set_learning_phase(2), ("phase",)),
    ("set_floatx", lambda: K.set_floatx("float128"), ("floatx",)),
    ("set_image_data_format", lambda: K.set_image_data_format("nchw"), ("data_format",)),
    ("foldl", lambda: K.foldl(lambda acc, x: acc + x, K.placeholder((0, 3))), ("empty",)),
    ("update_add", lambda: K.update_add(5, x2()), ("variable",)),
    ("update_sub", lambda: K.update_sub(x2(), 1.0), ("variable",)),
    ("moving_average_update", lambda: K.moving_average_update(1.5, x2(), 0.9), ("variable",)),
]

CATALOGUE: list[Misuse] = [*AXIS, *DATA_FORMAT, *PADDING, *RANK, *SHAPE, *DTYPE, *VALUE]
