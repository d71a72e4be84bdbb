"""The workloads in PyTensor: compiled `pytensor.function`s in its default mode.

Weights are shared variables; a training step is a function with SGD updates, as
aotk's K.function has. PyTensor has no 2-D convolution any more (`pytensor.tensor.signal`
is 1-D), so W5 is not run. W6 is a `scan`, and its step `pytensor.grad` through the scan.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import bench_elementwise as chain
from bench import problems as P

pytensor: Any = importlib.import_module("pytensor")
pt: Any = importlib.import_module("pytensor.tensor")


def version() -> str:
    mode = pytensor.config.mode
    return f"pytensor {pytensor.__version__} (mode {mode}, blas '{pytensor.config.blas__ldflags}')"


def _variable(a: np.ndarray) -> Any:
    return pt.tensor(dtype="float32", shape=(None,) * a.ndim)


def _mlp(params: list[Any], x: Any) -> Any:
    h = x
    for w, b in P.layer_pairs(params)[:-1]:
        h = pt.maximum(pt.dot(h, w) + b, 0.0)
    w, b = params[-2:]
    return pt.dot(h, w) + b


def _w4_loss(params: list[Any], x: Any, y: Any) -> Any:
    logp = pt.special.log_softmax(_mlp(params, x), axis=-1)
    return -pt.mean(pt.sum(y * logp, axis=1))


def _lstm(params: list[Any], xs: Any) -> Any:
    w, u = params
    hid = P.problems()[P.W6].params[1].shape[0]
    zeros = pt.zeros((xs.shape[0], hid), dtype="float32")

    def step(xw: Any, h: Any, c: Any) -> tuple[Any, Any]:
        z = xw + pt.dot(h, u)
        i, f, o = (pt.sigmoid(z[:, k * hid : (k + 1) * hid]) for k in range(3))
        c = f * c + i * pt.tanh(z[:, 3 * hid :])
        return o * pt.tanh(c), c

    projected = pt.dot(xs.dimshuffle(1, 0, 2), w)  # every step's input projection at once
    (hs, _), _ = pytensor.scan(step, sequences=[projected], outputs_info=[zeros, zeros])
    return hs[-1]


INFERENCE: dict[str, Callable[..., Any]] = {
    P.W1: lambda x: pt.tanh(x * chain.A + chain.B) * pt.sigmoid(x) + x * x,
    P.W2: lambda a, b: pt.dot(a, b),
    P.W3_1: lambda params, x: pt.special.softmax(_mlp(params, x), axis=-1),
    P.W3_256: lambda params, x: pt.special.softmax(_mlp(params, x), axis=-1),
    P.W6: _lstm,
    P.W7: lambda x: pt.special.softmax(x, axis=-1),
}
TRAINING: dict[str, Callable[..., Any]] = {
    P.W4: _w4_loss,
    P.W6_SGD: lambda params, xs: pt.mean(pt.sqr(_lstm(params, xs))),
}


def build(problem: P.Problem, threads: int) -> Callable[[], object] | str:
    """A compiled function's call on `problem`'s data, or why PyTensor has none."""
    del threads  # its BLAS and OpenMP read the environment
    if problem.name == P.W5:
        return "no 2-D convolution in pytensor 3"
    data = [_variable(a) for a in problem.data]
    shared = [pytensor.shared(np.array(p)) for p in problem.params]
    if problem.name in TRAINING:
        loss = TRAINING[problem.name](shared, *data)
        grads = pytensor.grad(loss, shared)
        updates = [(p, p - np.float32(P.LR) * g) for p, g in zip(shared, grads, strict=True)]
        fn = pytensor.function(data, loss, updates=updates)
        return lambda: (fn(*problem.data), [p.get_value(borrow=True) for p in shared])
    body = INFERENCE[problem.name]
    fn = pytensor.function(data, body(shared, *data) if shared else body(*data))
    return lambda: fn(*problem.data)
