"""Ordinary Keras 2 programs, unchanged, on aotk: training steps checked by hand."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import backend as KB
from keras import layers
from keras.models import Model, Sequential, load_model

RNG = np.random.default_rng(0)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_mlp_sgd_step_matches_a_hand_computed_step():
    model = Sequential(
        [
            layers.Dense(5, activation="relu", input_shape=(4,)),
            layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile(keras.optimizers.SGD(lr=0.1), "categorical_crossentropy")
    x = RNG.normal(size=(8, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 8)]
    w1, b1, w2, b2 = (w.astype(np.float64) for w in model.get_weights())
    h = np.maximum(x @ w1 + b1, 0.0)
    p = _softmax(h @ w2 + b2)
    want_loss = -np.mean(np.sum(y * np.log(p), axis=1))
    g_z2 = (p - y) / len(x)
    g_h = (g_z2 @ w2.T) * (h > 0)
    want = [
        w1 - 0.1 * x.T @ g_h,
        b1 - 0.1 * g_h.sum(0),
        w2 - 0.1 * h.T @ g_z2,
        b2 - 0.1 * g_z2.sum(0),
    ]
    loss = model.train_on_batch(x, y)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    for got, expected in zip(model.get_weights(), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6)


def test_adam_amsgrad_and_nesterov_steps_match_keras_update_rules():
    x = RNG.normal(size=(6, 3)).astype(np.float32)
    y = RNG.normal(size=(6, 1)).astype(np.float32)
    for name, optimizer in (
        ("nesterov", keras.optimizers.SGD(lr=0.05, momentum=0.9, nesterov=True)),
        ("amsgrad", keras.optimizers.Adam(lr=0.01, amsgrad=True)),
    ):
        model = Sequential([layers.Dense(1, input_shape=(3,))])
        model.compile(optimizer, "mse")
        w, b = (v.astype(np.float64) for v in model.get_weights())
        g = 2 * (x @ w + b - y) / len(x)
        gw, gb = x.T @ g, g.sum(0)
        model.train_on_batch(x, y)
        if name == "nesterov":  # v = -lr g (v starts at 0); p += momentum v - lr g
            want = [p - 0.05 * gp - 0.9 * 0.05 * gp for p, gp in ((w, gw), (b, gb))]
        else:  # t = 1: lr_t = lr sqrt(1 - b2) / (1 - b1); m = (1 - b1) g; v = (1 - b2) g^2
            lr_t = 0.01 * np.sqrt(1 - 0.999) / (1 - 0.9)
            want = [
                p - lr_t * (0.1 * gp) / (np.sqrt(0.001 * gp**2) + 1e-7)
                for p, gp in ((w, gw), (b, gb))
            ]
        for got, expected in zip(model.get_weights(), want, strict=True):
            np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6, err_msg=name)


@pytest.mark.parametrize(("opt", "lr"), [("RMSprop", 0.05), ("Adagrad", 0.5), ("Nadam", 0.02)])
def test_other_optimizers_train_a_linear_model(opt, lr):
    x = RNG.normal(size=(64, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    model = Sequential([layers.Dense(1, input_shape=(3,))])
    model.compile(getattr(keras.optimizers, opt)(lr=lr), "mse")
    first = model.evaluate(x, y, verbose=0)
    model.fit(x, y, epochs=20, batch_size=16, verbose=0)
    assert model.evaluate(x, y, verbose=0) < 0.5 * first


def test_cnn_with_transposed_conv_custom_loss_and_checkpoint_predicts_every_batch(tmp_path):
    inp = layers.Input((8, 8, 2))
    h = layers.Conv2D(4, 3, strides=2, padding="same", activation="relu")(inp)
    h = layers.Conv2DTranspose(4, 3, strides=2, padding="same")(h)
    h = layers.MaxPooling2D()(h)
    h = layers.UpSampling2D()(h)
    out = layers.Conv2D(2, 1)(h)
    model = Model(inp, out)

    def half_squared_error(y_true, y_pred):
        return 0.5 * KB.mean(KB.square(y_pred - y_true), axis=-1)

    model.compile("adam", half_squared_error)
    x = RNG.random((10, 8, 8, 2), dtype=np.float32)
    path = str(tmp_path / "cnn.h5")
    checkpoint = keras.callbacks.ModelCheckpoint(path, monitor="loss")
    history = model.fit(x, x, epochs=2, batch_size=4, verbose=0, callbacks=[checkpoint])
    assert np.all(np.isfinite(history.history["loss"]))
    np.testing.assert_allclose(
        history.history["loss"][-1], model.evaluate(x, x, verbose=0), rtol=0.5
    )  # the epoch's running mean, with the weights of each batch, is near the final loss
    whole = model.predict(x, batch_size=10)
    assert whole.shape == (10, 8, 8, 2)
    np.testing.assert_allclose(model.predict(x[:3], batch_size=3), whole[:3], rtol=1e-5, atol=1e-6)
    saved = load_model(path, custom_objects={"half_squared_error": half_squared_error})
    np.testing.assert_array_equal(saved.predict(x, batch_size=10), whole)


def test_vae_with_lambda_add_loss_custom_metric_and_save_load(tmp_path):
    inp = layers.Input((6,))
    h = layers.Dense(8, activation="relu")(inp)
    mu, log_var = layers.Dense(2)(h), layers.Dense(2)(h)
    z = layers.Lambda(
        lambda a: a[0] + KB.exp(0.5 * a[1]) * KB.random_normal(KB.shape(a[0]), seed=1),
        output_shape=(2,),
    )([mu, log_var])
    out = layers.Dense(6, activation="sigmoid")(z)
    model = Model(inp, out)
    model.add_loss(-0.5 * KB.mean(1 + log_var - KB.square(mu) - KB.exp(log_var)))

    def max_error(y_true, y_pred):
        return KB.max(KB.abs(y_true - y_pred))

    model.compile("rmsprop", loss="binary_crossentropy", metrics=[max_error])
    x = RNG.random((32, 6), dtype=np.float32)
    history = model.fit(x, x, epochs=2, batch_size=16, verbose=0)
    assert set(history.history) == {"loss", "max_error"}
    path = str(tmp_path / "vae.h5")
    model.save(path)
    again = load_model(path, custom_objects={"max_error": max_error, "KB": KB}, compile=False)
    for a, b in zip(model.get_weights(), again.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow
def test_embedding_mask_lstm_and_bidirectional_gru_train():
    x = RNG.integers(1, 20, (16, 6))
    x[:, 4:] = 0  # padding, masked by mask_zero
    y = RNG.integers(0, 2, (16, 1))
    model = Sequential(
        [
            layers.Embedding(20, 4, mask_zero=True, input_length=6),
            layers.LSTM(5, return_sequences=True),
            layers.Bidirectional(layers.GRU(3)),
            layers.Dense(1, activation="sigmoid"),
        ]
    )
    model.compile(keras.optimizers.Adam(amsgrad=True), "binary_crossentropy", metrics=["acc"])
    callbacks = [keras.callbacks.EarlyStopping(monitor="loss", patience=1)]
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0, callbacks=callbacks)
    assert np.all(np.isfinite(history.history["loss"]))
    masked = x.copy()
    masked[:, 4:] = 0
    np.testing.assert_allclose(model.predict(masked), model.predict(x), rtol=1e-6)


def test_predict_from_several_threads_gives_each_its_own_predictions():
    """A server's worker threads predicting at once: each thread's calls run on a plan of
    its own (aotk's native path) and match one thread's predictions."""
    import threading

    model = Sequential(
        [
            layers.Dense(32, activation="relu", input_shape=(12,)),
            layers.BatchNormalization(),
            layers.Dropout(0.3),
            layers.Dense(3, activation="softmax"),
        ]
    )
    model.compile("adam", "categorical_crossentropy")
    model.train_on_batch(RNG.random((16, 12)), np.eye(3)[RNG.integers(0, 3, 16)])
    batches = [RNG.random((64, 12)).astype(np.float32) for _ in range(4)]  # one shape
    expected = [model.predict_on_batch(b) for b in batches]  # also makes the function
    errors: list[BaseException] = []

    def serve(seed: int) -> None:
        try:
            for _ in range(50):
                got = model.predict_on_batch(batches[seed])
                np.testing.assert_allclose(got, expected[seed], rtol=1e-6, atol=1e-7)
        except BaseException as e:  # reported below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=serve, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:2]
