"""Differential fuzzing: random graphs (`random_graphs.py`) compiled against the NumPy
interpreter, and their gradients against finite differences in float64.

CI runs the seeds below; `AOTK_FUZZ_GRAPHS=5000 pytest tests/fuzz` runs that many more
(seeds from 10_000 on). A failure names the seed, which rebuilds the graph exactly.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from random_graphs import random_graph

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace

CI_GRAPHS = 150
CI_GRADIENTS = 30
EXTRA = int(os.environ.get("AOTK_FUZZ_GRAPHS", "0"))
RTOL = {"float32": 2e-5, "float64": 1e-12}


def _inputs(graph, batch: int, dtype: str, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 1, (batch, K.int_shape(x)[1])).astype(dtype) for x in graph.inputs]


def _check_graph(seed: int, dtype: str) -> None:
    graph = random_graph(seed, dtype)
    module, captures = trace.extract(graph.inputs, graph.outputs, "fuzz")
    f = K.function(graph.inputs, graph.outputs)
    for batch in (1, 5):
        xs = _inputs(graph, batch, dtype, seed + batch)
        want = interp.run_module(module, [*xs, *(c.storage for c in captures)])
        got = f(xs)
        for g, w in zip(got, want, strict=True):
            scale = np.abs(w).max(initial=1.0)
            np.testing.assert_allclose(
                g, w, rtol=RTOL[dtype], atol=RTOL[dtype] * scale,
                err_msg=f"seed {seed}, batch {batch}, steps {graph.steps}",
            )  # fmt: skip


def _check_gradient(seed: int) -> None:
    graph = random_graph(seed, "float64", smooth=True)
    out = graph.outputs[0]
    weights = np.linspace(0.5, 1.5, K.int_shape(out)[1])  # so no output is summed evenly
    loss = K.sum(out * K.constant(weights, dtype="float64"))
    grads = K.gradients(loss, graph.inputs)
    if any(g is None for g in grads):
        return  # an output that does not depend on some input
    module, captures = trace.extract(graph.inputs, [loss], "fuzz")
    xs = _inputs(graph, 3, "float64", seed)
    stored = [c.storage for c in captures]
    compiled = K.function(graph.inputs, grads)(xs)
    for i, g in enumerate(compiled):
        numeric = np.zeros_like(xs[i])
        for index in np.ndindex(*xs[i].shape):
            plus = [x.copy() for x in xs]
            minus = [x.copy() for x in xs]
            plus[i][index] += 1e-6
            minus[i][index] -= 1e-6
            up = interp.run_module(module, [*plus, *stored])[0]
            down = interp.run_module(module, [*minus, *stored])[0]
            numeric[index] = (up - down) / 2e-6
        np.testing.assert_allclose(
            g, numeric, rtol=1e-5, atol=1e-6, err_msg=f"seed {seed}, steps {graph.steps}"
        )


@pytest.mark.parametrize("seed", range(CI_GRAPHS))
def test_compiled_matches_interpreted(seed: int) -> None:
    _check_graph(seed, "float32" if seed % 3 else "float64")


@pytest.mark.parametrize("seed", range(1000, 1000 + CI_GRADIENTS))
def test_gradients_match_finite_differences(seed: int) -> None:
    _check_gradient(seed)


@pytest.mark.slow
@pytest.mark.skipif(not EXTRA, reason="set AOTK_FUZZ_GRAPHS=n to run n more graphs")
@pytest.mark.parametrize("seed", range(10_000, 10_000 + EXTRA))
def test_many_more_graphs(seed: int) -> None:
    _check_graph(seed, "float32" if seed % 3 else "float64")
    if seed % 10 == 0:
        _check_gradient(seed)
