"""A seeded generator of random K graphs for differential fuzzing.

Every tensor of a graph is [B, w], [B, 1] or [1, w] for a dynamic batch B and a width w
that matmuls change, so any two of one width broadcast together. Operations are drawn from
the backend: elementwise (kept finite: logs, roots, powers and divisions of shifted
magnitudes), cumulative sums, reversals, normalization, reductions, matmul by a fresh
weight, per-sample products (`K.batch_dot`), softmax, logsumexp, concatenation and
slicing, and, over the columns taken as steps, conv1d, 2-D pooling and a tanh RNN
(`K.rnn`: a scan, and backpropagation through time in the gradients). Unless the graph
must be smooth (for finite differences), it may also go through integers: an embedding
lookup (`K.gather` of a weight table at each row's argmax) and int32 arithmetic on
truncated values. A graph is its inputs, outputs and a description (the ops drawn), for
the failure message.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from aotk import backend as K

WIDTHS = (1, 3, 4, 7, 16)


@dataclass
class Graph:
    inputs: list[Any]
    outputs: list[Any] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)


@dataclass
class _Pool:
    """The tensors built so far, by width: full [B, w], rows [B, 1], columns [1, w]."""

    full: dict[int, list[Any]] = field(default_factory=dict)
    rows: list[Any] = field(default_factory=list)
    cols: dict[int, list[Any]] = field(default_factory=dict)

    def add(self, t: Any) -> None:
        b, w = K.int_shape(t)
        if b == 1 and w is not None:
            self.cols.setdefault(w, []).append(t)
        elif w == 1:
            self.rows.append(t)
        else:
            self.full.setdefault(w, []).append(t)


def _unary(t: Any, rng: np.random.Generator) -> tuple[Any, str]:
    ops: list[tuple[str, Callable[[Any], Any]]] = [
        ("tanh", K.tanh),
        ("sigmoid", K.sigmoid),
        ("relu", K.relu),
        ("abs", K.abs),
        ("square", lambda x: K.square(K.tanh(x))),
        ("sqrt", lambda x: K.sqrt(K.abs(x) + 0.5)),
        ("log", lambda x: K.log(K.abs(x) + 1.0)),
        ("exp", lambda x: K.exp(K.tanh(x))),
        ("neg", lambda x: -x),
        ("softplus", K.softplus),
        ("elu", K.elu),
        ("softsign", K.softsign),
        ("sin", K.sin),
        ("clip", lambda x: K.clip(x, -0.5, 0.7)),
        ("pow", lambda x: K.pow(K.abs(x) + 0.5, 1.5)),
        ("cumsum", lambda x: K.cumsum(x, axis=1)),
        ("reverse", lambda x: K.reverse(x, 1)),
        ("l2_normalize", lambda x: K.l2_normalize(K.abs(x) + 0.1, axis=-1)),
    ]
    name, fn = ops[rng.integers(len(ops))]
    return fn(t), name


def _binary(a: Any, b: Any, rng: np.random.Generator) -> tuple[Any, str]:
    ops: list[tuple[str, Callable[[Any, Any], Any]]] = [
        ("add", lambda x, y: x + y),
        ("sub", lambda x, y: x - y),
        ("mul", lambda x, y: x * y),
        ("maximum", K.maximum),
        ("minimum", K.minimum),
        ("div", lambda x, y: x / (K.abs(y) + 1.0)),
    ]
    name, fn = ops[rng.integers(len(ops))]
    return fn(a, b), name


def random_graph(seed: int, dtype: str = "float32", smooth: bool = False) -> Graph:
    """A graph of 4 to 10 random steps on 1 or 2 inputs [None, w]; `smooth` leaves out the
    steps through integers, whose values jump where finite differences would look."""
    rng = np.random.default_rng(seed)
    width = int(rng.choice(WIDTHS[1:]))
    graph = Graph([K.placeholder((None, width), dtype=dtype) for _ in range(rng.integers(1, 3))])
    pool = _Pool()
    for x in graph.inputs:
        pool.add(x)
    for _ in range(rng.integers(4, 11)):
        made, step = _step(pool, rng, dtype, smooth)
        pool.add(made)
        graph.steps.append(step)
        last = made
    graph.outputs = [last] + ([pool.full[width][-1]] if rng.random() < 0.3 else [])
    return graph


KINDS = {
    "unary": 0.2,
    "binary": 0.24,
    "reduce": 0.09,
    "matmul": 0.09,
    "batch_dot": 0.05,
    "row": 0.07,
    "shape": 0.07,
    "conv": 0.05,
    "pool": 0.05,
    "rnn": 0.05,
    "gather": 0.02,
    "ints": 0.02,
}
ROUGH = ("gather", "ints")


def _step(pool: _Pool, rng: np.random.Generator, dtype: str, smooth: bool) -> tuple[Any, str]:
    width = int(rng.choice(list(pool.full)))
    x = pool.full[width][rng.integers(len(pool.full[width]))]
    kinds = [k for k in KINDS if not (smooth and k in ROUGH)]
    chances = np.array([KINDS[k] for k in kinds])
    kind = rng.choice(kinds, p=chances / chances.sum())
    if kind == "unary":
        made, name = _unary(x, rng)
        return made, name
    if kind == "binary":
        others = [*pool.full[width], *pool.rows, *pool.cols.get(width, [])]
        y = others[rng.integers(len(others))]
        made, name = _binary(x, y, rng) if rng.random() < 0.5 else _binary(y, x, rng)
        return made, f"{name} with {K.int_shape(y)}"
    if kind == "reduce":
        axis, keep = int(rng.integers(2)), True
        fn = [K.sum, K.max, K.mean, K.min][rng.integers(4)]
        return fn(x, axis=axis, keepdims=keep), f"{fn.__name__} axis {axis}"
    if kind == "matmul":
        # 64 columns hold a whole register tile: the weight is read from a packed copy
        out = int(rng.choice((*WIDTHS[1:], 64)))
        w = K.variable(rng.normal(0, 1 / np.sqrt(width), (width, out)), dtype=dtype)
        return K.dot(x, w), f"dot {width}->{out}"
    if kind == "batch_dot":
        return _batch_dot(x, pool.full[width], width, rng)
    if kind == "gather":
        out = int(rng.choice(WIDTHS[1:]))
        table = K.variable(rng.normal(0, 1, (width, out)), dtype=dtype)
        return K.gather(table, K.argmax(x, axis=-1)), f"gather rows of {width}x{out}"
    if kind == "ints":
        n = K.cast(x * 3.0, "int32")  # truncated toward zero
        m = K.maximum(n * 2 - 1, K.cast(K.abs(x) + 1.0, "int32")) + 7
        return K.cast(m, dtype) / 8.0, "int32 arithmetic"
    if kind == "row":
        if rng.random() < 0.5:
            return K.softmax(x), "softmax"
        return K.logsumexp(x, axis=-1, keepdims=True), "logsumexp"
    if kind == "conv":
        return _conv(x, width, rng, dtype)
    if kind == "pool":
        mode = ["max", "avg"][rng.integers(2)]
        pooled = K.pool2d(K.reshape(x, (-1, width, 1, 1)), (2, 1), (2, 1), "same", pool_mode=mode)
        return K.reshape(pooled, (-1, (width + 1) // 2)), f"{mode} pool"
    if kind == "rnn":
        return _rnn(x, width, rng, dtype)
    if width >= 2 and rng.random() < 0.5:
        half = width // 2
        return K.concatenate([x[:, half:], x[:, :half]], axis=-1), "rotate columns"
    return K.concatenate([x, x * 0.5], axis=-1), "concatenate"


def _batch_dot(x: Any, same: list[Any], width: int, rng: np.random.Generator):
    """Per-sample products with another [B, w] tensor: the dot (a column) or the outer
    product (flattened), through K.batch_dot."""
    y = same[rng.integers(len(same))]
    if width > 8 or rng.random() < 0.5:
        return K.batch_dot(x, y, axes=1), "batch_dot"
    outer = K.batch_dot(K.reshape(x, (-1, width, 1)), K.reshape(y, (-1, 1, width)), axes=(2, 1))
    return K.reshape(outer, (-1, width * width)), "batch_dot outer"


def _conv(x: Any, width: int, rng: np.random.Generator, dtype: str) -> tuple[Any, str]:
    """conv1d over the columns as steps, 'same' or 'valid', then flattened back."""
    channels, size = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    padding = "same" if size > width or rng.random() < 0.5 else "valid"
    kernel = K.variable(rng.normal(0, 0.5, (size, 1, channels)), dtype=dtype)
    y = K.conv1d(K.reshape(x, (-1, width, 1)), kernel, padding=padding)
    steps = width if padding == "same" else width - size + 1
    return K.reshape(y, (-1, steps * channels)), f"conv1d {size}x{channels} {padding}"


def _rnn(x: Any, width: int, rng: np.random.Generator, dtype: str) -> tuple[Any, str]:
    """A tanh RNN over the columns as steps (input size 1): its last state, or all."""
    hidden = int(rng.integers(1, 5))
    u = K.variable(rng.normal(0, 0.8, (1, hidden)), dtype=dtype)
    v = K.variable(rng.normal(0, 0.5, (hidden, hidden)), dtype=dtype)

    def step(xt: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        h = K.tanh(K.dot(xt, u) + K.dot(states[0], v))
        return h, [h]

    h0 = K.zeros_like(K.dot(x[:, :1], K.zeros((1, hidden), dtype=dtype)))
    last, outputs, _ = K.rnn(step, K.reshape(x, (-1, width, 1)), [h0])
    if rng.random() < 0.5:
        return last, f"rnn {hidden} last"
    return K.reshape(outputs, (-1, width * hidden)), f"rnn {hidden} all"
