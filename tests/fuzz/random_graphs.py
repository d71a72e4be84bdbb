"""A seeded generator of random K graphs for differential fuzzing.

Every tensor of a graph is [B, w], [B, 1] or [1, w] for a dynamic batch B and a width w
that matmuls change, so any two of one width broadcast together. Operations are drawn from
the backend: elementwise (kept finite: logs, roots and divisions of shifted magnitudes),
reductions, matmul by a fresh weight, softmax, logsumexp, concatenation and slicing, and,
over the columns taken as steps, conv1d, 2-D pooling and a tanh RNN (`K.rnn`: a scan, and
backpropagation through time in the gradients). A graph is its inputs, outputs
and a description (the ops drawn), for the failure message.
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


def random_graph(seed: int, dtype: str = "float32") -> Graph:
    """A graph of 4 to 10 random steps on 1 or 2 inputs [None, w]."""
    rng = np.random.default_rng(seed)
    width = int(rng.choice(WIDTHS[1:]))
    graph = Graph([K.placeholder((None, width), dtype=dtype) for _ in range(rng.integers(1, 3))])
    pool = _Pool()
    for x in graph.inputs:
        pool.add(x)
    for _ in range(rng.integers(4, 11)):
        made, step = _step(pool, rng, dtype)
        pool.add(made)
        graph.steps.append(step)
        last = made
    graph.outputs = [last] + ([pool.full[width][-1]] if rng.random() < 0.3 else [])
    return graph


def _step(pool: _Pool, rng: np.random.Generator, dtype: str) -> tuple[Any, str]:
    width = int(rng.choice(list(pool.full)))
    x = pool.full[width][rng.integers(len(pool.full[width]))]
    kinds = ["unary", "binary", "reduce", "matmul", "row", "shape", "conv", "pool", "rnn"]
    chances = [0.22, 0.26, 0.1, 0.1, 0.08, 0.08, 0.06, 0.05, 0.05]
    kind = rng.choice(kinds, p=chances)
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
        out = int(rng.choice(WIDTHS[1:]))
        w = K.variable(rng.normal(0, 1 / np.sqrt(width), (width, out)), dtype=dtype)
        return K.dot(x, w), f"dot {width}->{out}"
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
