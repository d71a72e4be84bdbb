"""A Keras 2.2.4 program, run by test_keras_224.py in a subprocess with Keras 2.2.4 first
on PYTHONPATH: prints one JSON line of what the test checks."""

import json
import sys

import keras
import numpy as np
from keras import layers
from keras.models import Sequential, load_model

rng = np.random.default_rng(0)
np.random.seed(0)  # Keras's initializers and dropout draw their seeds from it
model = Sequential(
    [
        layers.Dense(16, activation="relu", input_shape=(8,)),
        layers.Dropout(0.5),
        layers.BatchNormalization(),
        layers.Dense(3, activation="softmax"),
    ]
)
model.compile(
    keras.optimizers.Adam(lr=0.01, amsgrad=True), "categorical_crossentropy", metrics=["acc"]
)
x = rng.normal(size=(64, 8)).astype(np.float32)
y = np.eye(3, dtype=np.float32)[(x[:, 0] > 0).astype(int) + (x[:, 1] > 0).astype(int)]
history = model.fit(x, y, epochs=30, batch_size=16, verbose=0)
model.save(sys.argv[1])
again = load_model(sys.argv[1])
probe = Sequential([layers.Dropout(0.5, input_shape=(100,))])
probe.compile("sgd", "mse")
ones = np.ones((2, 100), np.float32)
print(
    json.dumps(
        {
            "version": keras.__version__,
            "uses_learning_phase": model.uses_learning_phase,
            "loss": [float(v) for v in history.history["loss"]],
            "acc": float(model.evaluate(x, y, verbose=0)[1]),
            "same_after_load": bool(np.array_equal(model.predict(x), again.predict(x))),
            "dropout_in_fit": float(probe.train_on_batch(ones, ones)),
            "dropout_in_predict": float(np.abs(probe.predict(ones) - 1).max()),
        }
    )
)
