"""3 x 3 'same' conv + bias + relu inference, NHWC float32, at the shapes of a VGG-style
network's layers: batch 1 (a deployed model's latency) and batch 8.

The kernel is a variable the function does not write, so aotk's Winograd convs read its
transform made once (`aotk.weight_packs`); NumPy runs im2col and one matmul
(`reference_numpy.conv3x3_same`). GFLOP/s count the direct sum's 2 x 9 x C x K per output
pixel, so Winograd's fewer products can exceed the machine's FMA limit.
Run alone with `python -m bench.bench_conv`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bench.common import Case, run
from bench.reference_numpy import conv3x3_same

# (batch, side, channels in, channels out)
SHAPES = [
    (1, 56, 64, 64),
    (1, 28, 128, 128),
    (1, 14, 256, 256),
    (1, 12, 128, 128),
    (1, 14, 512, 512),
    (1, 7, 512, 512),
    (8, 28, 128, 128),
    (4, 14, 512, 512),
    (2, 28, 384, 384),
]


def _case(shape: tuple[int, int, int, int], with_aotk: bool) -> Case:
    n, side, cin, cout = shape
    rng = np.random.default_rng(side * cin)
    x = rng.standard_normal((n, side, side, cin)).astype(np.float32)
    w = (rng.standard_normal((3, 3, cin, cout)) / np.sqrt(9 * cin)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    aotk: Callable[[], object] | None = None
    if with_aotk:
        from aotk import backend as K

        xp = K.placeholder((None, side, side, cin))
        y = K.relu(K.bias_add(K.conv2d(xp, K.variable(w), padding="same"), K.variable(b)))
        f = K.function([xp], [y])
        aotk = lambda: f([x])[0]  # noqa: E731
    flops = 2.0 * n * side * side * 9 * cin * cout
    return Case(
        f"conv3x3 b={n} {side}x{side} {cin}->{cout}",
        lambda: np.maximum(conv3x3_same(x, w) + b, 0.0),
        aotk,
        flops=flops,
        repeat=max(10, min(200, int(2e10 / flops))),
    )


def cases(with_aotk: bool = True) -> list[Case]:
    """One case a shape."""
    return [_case(shape, with_aotk) for shape in SHAPES]


if __name__ == "__main__":
    run(["bench.bench_conv"])
