"""A Keras model exports to a C library that predicts what Keras predicts."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import layers
from keras.models import Sequential

import aotk


@pytest.mark.aot
def test_keras_model_exports_and_the_library_predicts_like_keras(tmp_path):
    rng = np.random.default_rng(0)
    model = Sequential(
        [
            layers.Dense(8, activation="relu", input_shape=(5,)),
            layers.Dropout(0.3),
            layers.BatchNormalization(),
            layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(keras.optimizers.Adam(), "categorical_crossentropy")
    x = rng.normal(size=(32, 5)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 32)]
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    exported = aotk.export(model, tmp_path, "digits")
    header = exported.header.read_text()
    assert "digits_run" in header
    assert "keras_learning_phase" not in header  # a constant 0 in the predict library
    loaded = aotk.load(exported.library)
    for batch in (1, 7, 32):
        got = loaded([x[:batch]])
        got = got[0] if isinstance(got, list) else got
        np.testing.assert_allclose(got, model.predict(x[:batch]), rtol=1e-5, atol=1e-6)


def test_export_refuses_a_training_step_of_an_uncompiled_model(tmp_path):
    model = Sequential([layers.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match=r"aotk\.export: step='train' needs a compiled model"):
        aotk.export(model, tmp_path, "m", step="train")
    with pytest.raises(ValueError, match=r"aotk\.export: step must be 'predict' or 'train'"):
        aotk.export(model, tmp_path, "m", step="fit")


@pytest.mark.aot
@pytest.mark.parametrize(
    "loss, classes",
    [("mse", 3), ("categorical_crossentropy", 3), ("sparse_categorical_crossentropy", 1)],
)
def test_keras_training_step_exports_and_trains_like_keras(tmp_path, loss, classes):
    """Keras's targets are (None, None) placeholders the loss broadcasts, a tie the
    library could not check; Keras itself accepts only the output's shape (its last dim
    1 for sparse labels), so the library takes that shape, and trains as Keras does."""
    rng = np.random.default_rng(2)
    model = Sequential([layers.Dense(8, activation="relu", input_shape=(4,)), layers.Dense(3)])
    model.compile(keras.optimizers.SGD(lr=0.1, momentum=0.9), loss)
    x = rng.normal(size=(16, 4)).astype(np.float32)
    labels = rng.integers(0, 3, 16)
    y = np.eye(3, dtype=np.float32)[labels] if classes == 3 else labels[:, None].astype(np.float32)
    exported = aotk.export(model, tmp_path, "step", step="train")
    assert "const float *dense_2_target, int64_t dense_2_target_dim0, const float" in (
        exported.header.read_text()
    )
    library = aotk.load(exported.library)
    weights = np.ones(16, np.float32)
    for _ in range(3):
        want = model.train_on_batch(x, y)
        (got,) = library([x, y, weights])
        np.testing.assert_allclose(got, want, rtol=1e-5)
    wrong = np.zeros((16, classes + 1), np.float32)
    with pytest.raises(ValueError, match=rf"'dense_2_target' expects shape \(None, {classes}\)"):
        library([x, wrong, weights])


@pytest.mark.aot
@pytest.mark.parametrize("target", ["host", "x86-64-v2"])
def test_an_exported_keras_step_is_never_compiled_for_the_jit(tmp_path, target, monkeypatch):
    """The step is traced again with its phase fixed. For the host's instruction set it
    is lowered to LLVM IR text, optimized for the library and kept, so the next export
    lowers nothing; for another, the library is lowered from the trace. Neither compiles
    code for the JIT: Keras's own predict function, made for the export, compiles only
    when Keras calls it."""
    from aotk import host_code
    from aotk.kernels import heuristics
    from aotk.lowering import pipeline

    if target != "host" and heuristics.host_isa() == "sse":
        pytest.skip("the host's instruction set is the target's")
    # this process's copy of the text serves the second export (the disk's copy, which
    # an earlier test's export of this graph could have left: test_compile_cache)
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")
    lowerings: list[int] = []
    lower = pipeline.lower
    monkeypatch.setattr(pipeline, "lower", lambda *a, **k: lowerings.append(1) or lower(*a, **k))
    rng = np.random.default_rng(3)
    model = Sequential([layers.Dense(4, activation="relu", input_shape=(5,)), layers.Dense(2)])
    model.compile("sgd", "mse")
    x = rng.normal(size=(6, 5)).astype(np.float32)
    host_code.clear_cache()  # the same graph may be compiled already in this process
    before = host_code.COMPILE_COUNT + host_code.DISK_HITS
    cpu = None if target == "host" else target
    exported = aotk.export(model, tmp_path / "first", "net", target_cpu=cpu)
    assert host_code.COMPILE_COUNT + host_code.DISK_HITS == before
    assert len(lowerings) == 1
    aotk.export(model, tmp_path / "second", "net", target_cpu=cpu)
    assert len(lowerings) == 1 + (target != "host")
    want = model.predict(x)
    got = aotk.load(exported.library)([x])
    np.testing.assert_allclose(got[0] if isinstance(got, list) else got, want, rtol=1e-5)


@pytest.mark.aot
def test_a_keras_model_of_three_outputs_exports_its_training_step(tmp_path):
    """Three targets and three sample weights share the inputs' batch dim: seven dims
    found tied at once, as one group. Keras 2.3's per-output losses are stateful means,
    which `train_on_batch` resets after each call and the library keeps (as in an epoch
    of `fit`), so it reports their running means."""
    from keras.layers import Dense, Input
    from keras.models import Model

    rng = np.random.default_rng(4)
    x = Input((5,))
    h = Dense(6, activation="relu")(x)
    outputs = [Dense(2)(h), Dense(3, activation="softmax")(h), Dense(1)(h)]
    model = Model(x, outputs)
    model.compile("sgd", ["mse", "categorical_crossentropy", "mae"])
    exported = aotk.export(model, tmp_path, "three", step="train")
    header = exported.header.read_text()
    assert header.count("equal to input_1 dim 0") == 6
    library = aotk.load(exported.library)
    xs = rng.normal(size=(7, 5)).astype(np.float32)
    ys = [
        rng.normal(size=(7, 2)).astype(np.float32),
        np.eye(3, dtype=np.float32)[rng.integers(0, 3, 7)],
        rng.normal(size=(7, 1)).astype(np.float32),
    ]
    ones = [np.ones(7, np.float32)] * 3
    per_output = []
    for _ in range(3):
        total, *losses = model.train_on_batch(xs, ys)
        got = np.ravel(library([xs, *ys, *ones]))
        per_output.append(losses)
        np.testing.assert_allclose(got[0], total, rtol=1e-5)
        np.testing.assert_allclose(got[1:], np.mean(per_output, axis=0), rtol=1e-5)


@pytest.mark.aot
def test_a_keras_step_with_the_users_own_loss_exports_with_its_target_shape_given(tmp_path):
    """Keras never checks the targets of a loss of the user's own: they stay (None, None),
    broadcast against the predictions, a tie the library cannot check. The export says
    so, naming the input; with `input_shapes` giving the target's shape it exports, and
    the library trains as Keras does and refuses targets of another shape."""
    rng = np.random.default_rng(5)
    model = Sequential([layers.Dense(2, input_shape=(4,))])
    model.compile("sgd", lambda t, p: keras.backend.mean(keras.backend.abs(t - p)))
    target = model.output_names[0] + "_target"
    with pytest.raises(
        ValueError, match=rf"aotk\.export: dynamic dim 1 of input '{target}' is tied.*input_shapes"
    ):
        aotk.export(model, tmp_path / "refused", "step", step="train")
    exported = aotk.export(model, tmp_path, "step", step="train", input_shapes={target: (None, 2)})
    assert f"const float *{target}, int64_t {target}_dim0, const float" in (
        exported.header.read_text()
    )
    library = aotk.load(exported.library)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    y = rng.normal(size=(5, 2)).astype(np.float32)
    for _ in range(3):
        want = model.train_on_batch(x, y)
        (got,) = library([x, y, np.ones(5, np.float32)])
        np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(ValueError, match=rf"'{target}' expects shape \(None, 2\)"):
        library([x, np.zeros((5, 1), np.float32), np.ones(5, np.float32)])


def test_input_shapes_that_do_not_fit_the_inputs_are_refused_clearly(tmp_path):
    from aotk import backend as K

    x = K.placeholder(shape=(None, 3), name="x")
    f = K.function([x], [x * 2.0])
    cases = [
        (
            {"y": (None, 3)},
            ValueError,
            r"input_shapes names 'y', which is not an input; the inputs are 'x'",
        ),
        (
            {"x": (4,)},
            ValueError,
            r"input_shapes\['x'\] has rank 1, expected 2 \(the input is \(None, 3\)\)",
        ),
        (
            {"x": (4, 5)},
            ValueError,
            r"input_shapes\['x'\] gives dim 1 size 5, but the input is \(None, 3\)",
        ),
        (
            {"x": (0, 3)},
            TypeError,
            r"input_shapes\['x'\] must be a tuple of positive ints and None",
        ),
        ({"x": "4,3"}, TypeError, r"input_shapes\['x'\] must be a tuple of sizes and None"),
        (
            [("x", (4, 3))],
            TypeError,
            r"input_shapes must be a dict of input name -> shape, got list",
        ),
    ]
    for given, error, message in cases:
        with pytest.raises(error, match=rf"aotk\.export: {message}"):
            aotk.export(f, tmp_path, "f", input_shapes=given)
    assert not list(tmp_path.iterdir())


def _np_conv_relu_pool(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """A 'same' 3 x 3 Conv2D with a bias and relu, then 2 x 2 max pooling, in float64."""
    n, h, w, _ = x.shape
    xp = np.pad(x.astype(np.float64), [(0, 0), (1, 1), (1, 1), (0, 0)])
    y = bias + sum(
        np.einsum("nhwc,co->nhwo", xp[:, i : i + h, j : j + w], kernel[i, j])
        for i in range(3)
        for j in range(3)
    )
    y = np.maximum(y, 0)[:, : h // 2 * 2, : w // 2 * 2]
    return y.reshape(n, h // 2, 2, w // 2, 2, -1).max(axis=(2, 4))


@pytest.mark.aot
def test_keras_cnn_pools_its_convs_and_the_library_predicts_like_numpy(tmp_path):
    """Conv2D with relu then MaxPooling2D, twice: each conv pools its own rows
    (aotk.conv_pool), in Python and in the exported library."""
    rng = np.random.default_rng(1)
    model = Sequential(
        [
            layers.Conv2D(16, 3, padding="same", activation="relu", input_shape=(9, 10, 3)),
            layers.MaxPooling2D(),
            layers.Conv2D(16, 3, padding="same", activation="relu"),
            layers.MaxPooling2D(),
            layers.Flatten(),
            layers.Dense(3),
        ]
    )
    for i in (0, 2, 5):  # non-zero biases: the epilogues must add them
        kernel, bias = model.layers[i].get_weights()
        model.layers[i].set_weights([kernel, rng.normal(size=bias.shape).astype(np.float32)])
    x = rng.normal(size=(5, 9, 10, 3)).astype(np.float32)
    (k1, b1), (k2, b2), (wd, bd) = (model.layers[i].get_weights() for i in (0, 2, 5))
    h = _np_conv_relu_pool(_np_conv_relu_pool(x, k1, b1), k2, b2)
    want = h.reshape(len(x), -1) @ wd + bd
    np.testing.assert_allclose(model.predict(x), want, rtol=1e-4, atol=1e-4)
    loaded = aotk.load(aotk.export(model, tmp_path, "cnn").library)
    got = loaded([x])
    got = got[0] if isinstance(got, list) else got
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
