"""Inputs and NumPy answers of the seven workloads, shared by aotk's bench and the peers'.

`bench.bench_workloads` and `bench.peers` (which runs in another interpreter, without
aotk) take their arrays from here, so every system computes the same thing on the same
seeded data. Names are the row names the bench prints. Nothing here imports aotk.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from bench import bench_elementwise, bench_mlp, bench_training, workloads
from bench import reference_numpy as ref
from bench.common import check_same

GEMM = 1024
LR = 0.01  # the SGD rate of `workloads.sgd_updates`
W1, W2, W3_1, W3_256 = (
    "W1 tanh*sigmoid chain 2^22",
    "W2 matmul 1024^3",
    "W3 mlp 784-1024-1024-10 b=1",
    "W3 mlp 784-1024-1024-10 b=256",
)
W4, W5, W6, W6_SGD, W7 = (
    "W4 mlp sgd step b=128",
    "W5 cnn b=64 32x32x3",
    "W6 lstm b=32 t=50 64->128",
    "W6 lstm sgd step",
    "W7 softmax rows 4096x1024",
)
NAMES = (W1, W2, W3_1, W3_256, W4, W5, W6, W6_SGD, W7)


@dataclass(frozen=True)
class Problem:
    """One workload: its data and NumPy's answer.

    `data` are the inputs of each call; `params` the weights (a training step updates
    them). `answer(params)` is NumPy's result: an output array, or for a training step
    `(loss, new params)`, which may update `params` in place; `expected()` gives it
    float64 copies.
    """

    name: str
    data: list[np.ndarray]
    params: list[np.ndarray] = field(default_factory=list)
    answer: Callable[[list[np.ndarray]], object] = lambda p: None
    train: bool = False

    def expected(self) -> object:
        params = [p.astype(np.float64) for p in self.params] if self.train else self.params
        return self.answer(params)


def _w1() -> Problem:
    x = np.random.default_rng(0).uniform(-4.0, 4.0, bench_elementwise.N).astype(np.float32)
    return Problem(W1, [x], answer=lambda _: bench_elementwise._numpy_chain(x))


def _w2() -> Problem:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((GEMM, GEMM)).astype(np.float32) for _ in range(2))
    return Problem(W2, [a, b], answer=lambda _: a @ b)


def mlp_layers() -> list[np.ndarray]:
    """W3's weights and biases, alternating."""
    return [a for layer in bench_mlp._weights() for a in layer]


def layer_pairs(p: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Alternating weights and biases as (weight, bias) pairs."""
    return list(zip(p[::2], p[1::2], strict=True))


def _mlp(x: np.ndarray, p: list[np.ndarray]) -> np.ndarray:
    return bench_mlp._numpy_mlp(x, layer_pairs(p))


def _w3() -> list[Problem]:
    layers, rng = mlp_layers(), np.random.default_rng(0)
    out = []
    for n, name in zip(bench_mlp.BATCHES, (W3_1, W3_256), strict=True):
        x = rng.standard_normal((n, bench_mlp.SIZES[0])).astype(np.float32)
        out.append(Problem(name, [x], layers, lambda p, x=x: _mlp(x, p)))
    return out


def _w4() -> Problem:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((bench_training.BATCH, workloads.MLP[0])).astype(np.float32)
    y = np.eye(workloads.MLP[-1], dtype=np.float32)[rng.integers(0, 10, bench_training.BATCH)]
    shapes = [s for a, b in itertools.pairwise(workloads.MLP) for s in ((a, b), (b,))]
    params = [
        workloads._array(s, i // 2) if i % 2 == 0 else np.zeros(s, np.float32)
        for i, s in enumerate(shapes)
    ]

    def step(p: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        return bench_training._numpy_sgd_step(p, x, y), p  # updates p in place

    return Problem(W4, [x, y], params, step, train=True)


def _w5() -> Problem:
    x = np.random.default_rng(0).standard_normal((64, 32, 32, 3)).astype(np.float32)
    k1, k2 = workloads._array((3, 3, 3, 32), 1), workloads._array((3, 3, 32, 64), 2)
    w_out = workloads._array((16 * 16 * 64, 10), 4)
    return Problem(W5, [x], [k1, k2, w_out], lambda p: ref.cnn(x, p[0], p[1], p[2]))


def _w6() -> list[Problem]:
    b, t, d, h = workloads.LSTM_B, workloads.LSTM_T, workloads.LSTM_D, workloads.LSTM_H
    xs = np.random.default_rng(0).standard_normal((b, t, d)).astype(np.float32)
    w, u = workloads._array((d, 4 * h), 5), workloads._array((h, 4 * h), 6)

    def step(p: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        loss, w_new, u_new = ref.lstm_sgd(xs, p[0], p[1], LR)
        return loss, [w_new, u_new]

    return [
        Problem(W6, [xs], [w, u], lambda p: ref.lstm_forward(xs, p[0], p[1])),
        Problem(W6_SGD, [xs], [w, u], step, train=True),
    ]


def _w7() -> Problem:
    x = np.random.default_rng(0).standard_normal((4096, 1024)).astype(np.float32)
    return Problem(W7, [x], answer=lambda _: ref.softmax_rows(x))


def problems() -> dict[str, Problem]:
    """Every workload by name, in the bench's order."""
    every = [_w1(), _w2(), *_w3(), _w4(), _w5(), *_w6(), _w7()]
    return {p.name: p for p in every}


def check_step(
    who: str,
    before: list[np.ndarray],
    got: tuple[object, list[np.ndarray]],
    want: tuple[float, list[np.ndarray]],
) -> None:
    """A training step against NumPy's from the same weights `before`: the loss, and each
    weight's change (so the check sees the gradient, not mostly the old weight)."""
    check_same(f"{who} loss", got[0], want[0])
    for i, (b, g, w) in enumerate(zip(before, got[1], want[1], strict=True)):
        change, b64 = w - b.astype(np.float64), b.astype(np.float64)
        # float32 weights round each change to within half an ulp of the weight
        tol = 1e-3 * np.abs(change).max() + np.spacing(np.abs(b).max())
        err = float(np.abs((np.asarray(g, np.float64) - b64) - change).max())
        if not err <= tol:
            raise AssertionError(f"{who}: weight {i} changes by {err:.2e} more than NumPy's")
