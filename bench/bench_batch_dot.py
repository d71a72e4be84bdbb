"""`K.batch_dot` as attention uses it, and its gradients, against NumPy.

Scores q k^T (axes (2, 2)) and context p v (axes (2, 1)) for 64 heads of 128 positions
and 64 features, their gradients with respect to both operands, and many small products
(512 entries of 16x32 by 32x16) with theirs; float32. NumPy's side is `np.matmul` on
transposed views, the way a NumPy user writes it. Run alone with
`python -m bench.bench_batch_dot`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.common import Case, check_same, compiled_side, run

HEADS, POSITIONS, FEATURES = 64, 128, 64


def _swap(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, 1, 2)


def _product_cases(with_aotk: bool, name: str, shapes: tuple[Any, Any], axes: Any) -> list[Case]:
    """batch_dot(x, y, axes) and the gradients of sum(batch_dot(x, y) * g)."""
    rng = np.random.default_rng(7)
    x, y = (rng.standard_normal(s).astype(np.float32) for s in shapes)
    x_t, y_t = axes == (1, 1), axes == (2, 2)  # x stored [B, K, M]; y stored [B, N, K]
    xe, ye = (_swap(x) if x_t else x), (_swap(y) if y_t else y)
    g = rng.standard_normal((x.shape[0], xe.shape[1], ye.shape[2])).astype(np.float32)
    flops = 2.0 * xe.shape[0] * xe.shape[1] * xe.shape[2] * ye.shape[2]

    def forward(xp: Any, yp: Any) -> Any:
        from aotk import backend as K

        return K.batch_dot(xp, yp, axes=axes)

    def gradients(xp: Any, yp: Any, gp: Any) -> Any:
        from aotk import backend as K

        return K.gradients(K.sum(forward(xp, yp) * gp), [xp, yp])

    def numpy_gradients() -> tuple[np.ndarray, np.ndarray]:
        gx, gy = g @ _swap(ye), _swap(xe) @ g
        return (_swap(gx) if x_t else gx), (_swap(gy) if y_t else gy)

    def check_gradients() -> None:
        assert backward is not None
        for got, want in zip(backward(), numpy_gradients(), strict=True):  # type: ignore[arg-type]
            check_same(f"{name} gradients", got, want)

    backward = compiled_side(with_aotk, gradients, [x, y, g])
    return [
        Case(name, lambda: xe @ ye, compiled_side(with_aotk, forward, [x, y]), flops=flops),
        Case(
            f"{name} gradients", numpy_gradients, backward, flops=2 * flops, check=check_gradients
        ),
    ]


def cases(with_aotk: bool = True) -> list[Case]:
    """Every case; without aotk, NumPy's sides alone."""
    heads = (HEADS, POSITIONS, FEATURES)
    scores = (HEADS, POSITIONS, POSITIONS)
    return [
        *_product_cases(with_aotk, "attention scores q k^T", (heads, heads), (2, 2)),
        *_product_cases(with_aotk, "attention context p v", (scores, heads), (2, 1)),
        *_product_cases(with_aotk, "512 x (16x32 @ 32x16)", ((512, 16, 32), (512, 32, 16)), (2, 1)),
    ]


if __name__ == "__main__":
    run(["bench.bench_batch_dot"])
