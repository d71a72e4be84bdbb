"""The workloads in JAX: each a `jax.jit` function on arrays already on the device.

Training steps return new weights, which the next call takes (donated, so XLA may
update them in place), as aotk's update the variables.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from bench import bench_elementwise as chain
from bench import problems as P

jax: Any = importlib.import_module("jax")
jnp: Any = importlib.import_module("jax.numpy")
lax: Any = importlib.import_module("jax.lax")


def version() -> str:
    return f"jax {jax.__version__}"


def _mlp(params: list[Any], x: Any) -> Any:
    h = x
    for w, b in P.layer_pairs(params)[:-1]:
        h = jax.nn.relu(h @ w + b)
    w, b = params[-2:]
    return h @ w + b


def _w4_loss(params: list[Any], x: Any, y: Any) -> Any:
    return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(_mlp(params, x)), axis=1))


def _cnn(params: list[Any], x: Any) -> Any:
    k1, k2, w_out = params
    h = x
    for k in (k1, k2):
        dims = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(lax.conv_general_dilated(h, k, (1, 1), "SAME", dimension_numbers=dims))
    h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    return jax.nn.softmax(h.reshape(h.shape[0], -1) @ w_out, axis=-1)


def _lstm(params: list[Any], xs: Any) -> Any:
    w, u = params
    hid = u.shape[0]
    zeros = jnp.zeros((xs.shape[0], hid), xs.dtype)
    projected = jnp.einsum("btd,dk->tbk", xs, w)  # every step's input projection at once

    def step(state: tuple[Any, Any], xw: Any) -> tuple[tuple[Any, Any], None]:
        h, c = state
        z = xw + h @ u
        i, f, o = (jax.nn.sigmoid(z[:, k * hid : (k + 1) * hid]) for k in range(3))
        c = f * c + i * jnp.tanh(z[:, 3 * hid :])
        return (o * jnp.tanh(c), c), None

    (h, _), _ = lax.scan(step, (zeros, zeros), projected)
    return h


def _sgd(loss: Callable[..., Any]) -> Any:
    def step(params: list[Any], *data: Any) -> tuple[Any, list[Any]]:
        value, grads = jax.value_and_grad(loss)(params, *data)
        return value, [p - P.LR * g for p, g in zip(params, grads, strict=True)]

    return jax.jit(step, donate_argnums=0)


def _trainer(step: Any, params: list[Any], data: list[Any]) -> Callable[[], object]:
    state = {"params": params}

    def call() -> object:
        loss, state["params"] = step(state["params"], *data)
        jax.block_until_ready(state["params"])
        return loss, state["params"]

    return call


INFERENCE: dict[str, Callable[..., Any]] = {
    P.W1: lambda x: jnp.tanh(x * chain.A + chain.B) * jax.nn.sigmoid(x) + x * x,
    P.W2: lambda a, b: a @ b,
    P.W3_1: lambda params, x: jax.nn.softmax(_mlp(params, x), axis=-1),
    P.W3_256: lambda params, x: jax.nn.softmax(_mlp(params, x), axis=-1),
    P.W5: _cnn,
    P.W6: _lstm,
    P.W7: lambda x: jax.nn.softmax(x, axis=-1),
}
TRAINING: dict[str, Callable[..., Any]] = {
    P.W4: _w4_loss,
    P.W6_SGD: lambda params, xs: jnp.mean(jnp.square(_lstm(params, xs))),
}


def build(problem: P.Problem, threads: int) -> Callable[[], object]:
    """A call of `problem` on the device."""
    del threads  # set by the environment before JAX loads
    data = [jax.device_put(a) for a in problem.data]
    params = [jax.device_put(np.array(p)) for p in problem.params]
    if problem.name in TRAINING:
        return _trainer(_sgd(TRAINING[problem.name]), params, data)
    fn = jax.jit(INFERENCE[problem.name])
    args = [params, *data] if params else data
    return lambda: fn(*args).block_until_ready()
