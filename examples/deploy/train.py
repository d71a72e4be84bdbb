"""Train a small MLP classifier with aotk, then export its inference function as C.

The data: four interleaved spiral arms in the plane, lifted to 16 features by a fixed
random projection plus noise (seeded, so every run sees the same numbers). A 16-64-64-4
MLP learns them with minibatch SGD, one compiled K.function per training step. The
script then writes, to --out (default examples/deploy/build):

  libmlp.so, libmlp.a, mlp.h, aotk_rt.h   the exported model (`aotk.export`)
  test_set.bin                            the test set, for classify.c
  python_accuracy.txt                     the accuracy aotk's JIT function reaches on it

test_set.bin, all little endian:
  bytes 0-3   magic "ATS1"
  int32 x 3   n (samples), features, classes
  float32     n * features values, row-major
  int32       n labels, each in [0, classes)
"""

from __future__ import annotations

import argparse
import itertools
import struct
import time
from pathlib import Path

import numpy as np

import aotk
from aotk import backend as K

FEATURES, CLASSES, HIDDEN = 16, 4, 32
N_TRAIN, N_TEST = 4000, 1000
BATCH, EPOCHS, LEARNING_RATE = 32, 20, 0.1
MAGIC = b"ATS1"


def spirals(n: int, rng: np.random.Generator, projection: np.ndarray):
    """`n` points on CLASSES spiral arms, lifted to FEATURES dims; (x float32, labels)."""
    labels = rng.integers(0, CLASSES, n)
    t = rng.uniform(0.1, 1.0, n)  # how far along its arm a point lies
    angle = 2 * np.pi * labels / CLASSES + 5.0 * t + rng.normal(0, 0.25, n)
    plane = np.stack([t * np.cos(angle), t * np.sin(angle)], axis=1)
    x = plane @ projection + rng.normal(0, 0.1, (n, FEATURES))
    return x.astype(np.float32), labels.astype(np.int32)


def build_mlp(rng: np.random.Generator):
    """The placeholder, the class scores (logits) and the parameters of the MLP."""
    x = K.placeholder(shape=(None, FEATURES), name="features")
    params, h = [], x
    sizes = [FEATURES, HIDDEN, HIDDEN, CLASSES]
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        params += [
            K.variable(w.astype(np.float32), name=f"w{i}"),
            K.variable(np.zeros(fan_out, np.float32), name=f"b{i}"),
        ]
        h = K.bias_add(K.dot(h, params[-2]), params[-1])
        if fan_out != CLASSES:
            h = K.relu(h)
    return x, h, params


def training_step(x, logits, params):
    """One compiled step: the loss, its gradients and the SGD updates of the parameters."""
    y = K.placeholder(shape=(None, CLASSES), name="targets")
    loss = K.mean(K.categorical_crossentropy(y, logits, from_logits=True))
    updates = []
    for p, g in zip(params, K.gradients(loss, params), strict=True):
        assert g is not None, "every parameter feeds the loss"
        updates.append(K.update_sub(p, LEARNING_RATE * g))
    return K.function([x, y], [loss], updates=updates)


def write_test_set(path: Path, x: np.ndarray, labels: np.ndarray) -> None:
    header = MAGIC + struct.pack("<3i", len(x), x.shape[1], CLASSES)
    path.write_bytes(header + x.astype("<f4").tobytes() + labels.astype("<i4").tobytes())


def main() -> None:
    parser = argparse.ArgumentParser(description="Train an MLP with aotk, export it as C.")
    default_out = Path(__file__).resolve().parent / "build"
    parser.add_argument("--out", type=Path, default=default_out, help="output directory")
    parser.add_argument("--weights", choices=("embedded", "external"), default="embedded")
    args = parser.parse_args()

    rng = np.random.default_rng(2024)
    projection = rng.standard_normal((2, FEATURES))
    x_train, y_train = spirals(N_TRAIN, rng, projection)
    x_test, y_test = spirals(N_TEST, rng, projection)
    targets = np.eye(CLASSES, dtype=np.float32)[y_train]

    start = time.perf_counter()
    x, logits, params = build_mlp(rng)
    step = training_step(x, logits, params)
    print(f"compiled the training step in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    predict = K.function([x], [K.softmax(logits)])
    print(f"compiled the classifier in {time.perf_counter() - start:.1f} s")

    start = time.perf_counter()
    for epoch in range(EPOCHS):
        order = rng.permutation(N_TRAIN)
        losses = []
        for i in range(0, N_TRAIN, BATCH):
            batch = order[i : i + BATCH]
            losses.append(float(step([x_train[batch], targets[batch]])[0]))
        print(f"epoch {epoch + 1:2d}: loss {np.mean(losses):.4f}")
    print(f"trained in {time.perf_counter() - start:.1f} s")

    predicted = predict([x_test])[0].argmax(axis=1)
    correct = int((predicted == y_test).sum())
    accuracy = f"accuracy: {correct / N_TEST:.4f} ({correct}/{N_TEST})"
    print(f"python {accuracy}")

    args.out.mkdir(parents=True, exist_ok=True)
    exported = aotk.export(predict, args.out, name="mlp", weights=args.weights)
    write_test_set(args.out / "test_set.bin", x_test, y_test)
    (args.out / "python_accuracy.txt").write_text(accuracy + "\n")
    print(
        f"exported {exported.library.name}, {exported.static_library.name}, "
        f"{exported.header.name} to {args.out}"
    )


if __name__ == "__main__":
    main()
