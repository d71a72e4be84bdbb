"""Elementwise chain `tanh(x*a + b) * sigmoid(x) + x*x` on 2**22 float32 elements.

`a` and `b` are Python scalars (0.5 and -0.25), so the kernel reads one array and writes
one: the benchmark measures fused compute (vector tanh/exp), not extra memory traffic.
Run alone with `python -m bench.bench_elementwise`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bench.common import Case, run

N = 2**22
A, B = 0.5, -0.25


def _numpy_chain(x: np.ndarray) -> np.ndarray:
    return np.tanh(x * A + B) * (1.0 / (1.0 + np.exp(-x))) + x * x


def aotk_chain(x: Any) -> Any:
    """The chain on an aotk tensor."""
    from aotk import backend as K

    return K.tanh(x * A + B) * K.sigmoid(x) + x * x


def cases(with_aotk: bool = True) -> list[Case]:
    """The chain in NumPy and in aotk on the same seeded input."""
    x = np.random.default_rng(0).uniform(-4.0, 4.0, N).astype(np.float32)
    aotk: Callable[[], object] | None = None
    if with_aotk:
        from aotk import backend as K

        xp = K.placeholder(shape=(None,))
        f = K.function([xp], [aotk_chain(xp)])
        aotk = lambda: f([x])[0]  # noqa: E731
    return [Case("elementwise chain 2**22 f32", lambda: _numpy_chain(x), aotk, repeat=20)]


if __name__ == "__main__":
    run(["bench.bench_elementwise"])
