"""Train a Keras 2 model on aotk, then export its predict function as a C library.

Run with KERAS_BACKEND=aotk.backend (run.sh sets it). The data: scikit-learn's bundled
8x8 digits (1,797 images, no download), pixels scaled to [0, 1], a seeded 75/25 split.
The model is ordinary Keras: Dense, Dropout and BatchNormalization, trained with Adam by
`model.fit`. The script writes, to --out (default examples/keras/build):

  libdigits.so, libdigits.a, digits.h, aotk_rt.h   the exported model (`aotk.export`)
  test_set.bin                                     the test set, for ../deploy/classify.c
  python_accuracy.txt                              the accuracy Keras reports on it

test_set.bin has the layout ../deploy/train.py describes ("ATS1", n, features, classes,
float32 features, int32 labels; little endian).
"""

from __future__ import annotations

import argparse
import os
import struct
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "aotk.backend")

import keras
from keras import layers
from sklearn.datasets import load_digits

import aotk

CLASSES, EPOCHS, BATCH = 10, 30, 32


def split(rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_test, y_test): pixels in [0, 1] as float32, int32 labels."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int32)
    order = rng.permutation(len(x))
    cut = len(x) * 3 // 4
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def build_model() -> keras.models.Model:
    model = keras.models.Sequential(
        [
            layers.Dense(64, activation="relu", input_shape=(64,)),
            layers.BatchNormalization(),
            layers.Dropout(0.2),
            layers.Dense(32, activation="relu"),
            layers.Dense(CLASSES, activation="softmax"),
        ]
    )
    model.compile(keras.optimizers.Adam(lr=0.005), "categorical_crossentropy", metrics=["acc"])
    return model


def write_test_set(path: Path, x: np.ndarray, labels: np.ndarray) -> None:
    header = b"ATS1" + struct.pack("<3i", len(x), x.shape[1], CLASSES)
    path.write_bytes(header + x.astype("<f4").tobytes() + labels.astype("<i4").tobytes())


def main() -> None:
    parser = argparse.ArgumentParser(description="Train a Keras model on aotk, export it.")
    default_out = Path(__file__).resolve().parent / "build"
    parser.add_argument("--out", type=Path, default=default_out, help="output directory")
    args = parser.parse_args()

    np.random.seed(7)  # Keras draws its initial weights from NumPy's global generator
    x_train, y_train, x_test, y_test = split(np.random.default_rng(7))
    model = build_model()
    start = time.perf_counter()
    model.fit(x_train, np.eye(CLASSES)[y_train], epochs=1, batch_size=BATCH, verbose=0)
    print(f"first epoch (compiling included): {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    model.fit(x_train, np.eye(CLASSES)[y_train], epochs=EPOCHS - 1, batch_size=BATCH, verbose=0)
    print(f"{EPOCHS - 1} more epochs: {time.perf_counter() - start:.1f} s")

    predicted = model.predict(x_test).argmax(axis=1)
    correct = int((predicted == y_test).sum())
    accuracy = f"accuracy: {correct / len(x_test):.4f} ({correct}/{len(x_test)})"
    print(f"keras  {accuracy}")

    args.out.mkdir(parents=True, exist_ok=True)
    exported = aotk.export(model, args.out, name="digits")
    write_test_set(args.out / "test_set.bin", x_test, y_test)
    (args.out / "python_accuracy.txt").write_text(accuracy + "\n")
    print(f"exported {exported.library.name}, {exported.static_library.name} to {args.out}")


if __name__ == "__main__":
    main()
