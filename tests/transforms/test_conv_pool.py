"""aotk-conv-pool: a pool over a conv (with its epilogue) becomes one aotk.conv_pool, a
non-decreasing activation after a max pool joins its epilogue, the values stay, and what
the kernel cannot compute, or must not change, is left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_pool import ConvPoolOp
from aotk.dialect.fused import FusedOp
from aotk.dialect.pool import PoolOp
from aotk.lowering import pipeline

Build = Callable[[Any, Any], Any]  # (x, kernel) -> the graph's output


def _graph(build: Build, x: tuple[int, ...], w: tuple[int, ...], dtype: str = "float32") -> Any:
    """The graph stage of `build` on placeholders: x with a dynamic batch."""
    xp, wp = K.placeholder((None, *x[1:]), dtype=dtype), K.placeholder(w, dtype=dtype)
    module, _ = trace.extract([xp, wp], [build(xp, wp)], "test")
    return pipeline.lower(module, stop_after="graph")


def _ops(module: Any, cls: type) -> list[Any]:
    return [op for op in module.walk() if isinstance(op, cls)]


def _body_ops(op: ConvPoolOp) -> list[str]:
    return [inner.name for inner in op.body.block.ops if inner.name != "aotk.constant"]


def _conv(x: Any, w: Any, **kw: Any) -> Any:
    return K.conv2d(x, w, padding=kw.pop("padding", "same"), **kw)


def _max_pool(y: Any, window: tuple[int, int] = (2, 2), **kw: Any) -> Any:
    return K.pool2d(y, window, kw.pop("strides", window), **kw)


def test_relu_moved_after_the_pool_joins_the_epilogue_and_the_values_stay() -> None:
    graph = _graph(lambda x, w: K.relu(_max_pool(_conv(x, w))), (1, 8, 8, 3), (3, 3, 3, 16))
    (pooled,) = _ops(graph, ConvPoolOp)
    assert pooled.attrs()["pool_window"] == (2, 2) and pooled.attrs()["pool_mode"] == "max"
    assert _body_ops(pooled) == ["aotk.maximum", "aotk.yield"]
    assert not _ops(graph, PoolOp) and not _ops(graph, ConvOp) and not _ops(graph, FusedOp)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((2, 8, 8, 3)), rng.standard_normal((3, 3, 3, 16))
    want = np.maximum(_np_max_pool(_np_conv_same(x, w)), 0)
    (got,) = interp.run_module(graph, [x.astype(np.float32), w.astype(np.float32)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _np_conv_same(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A 'same' 3 x 3 conv in float64, written out."""
    xp = np.pad(x, [(0, 0), (1, 1), (1, 1), (0, 0)])
    h, wd = x.shape[1:3]
    return sum(
        np.einsum("nhwc,co->nhwo", xp[:, i : i + h, j : j + wd], w[i, j])
        for i in range(3)
        for j in range(3)
    )


def _np_max_pool(y: np.ndarray) -> np.ndarray:
    n, h, w, c = y.shape
    return y[:, : h // 2 * 2, : w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def test_a_lone_tanh_after_the_pool_joins_the_epilogue() -> None:
    graph = _graph(lambda x, w: K.tanh(_max_pool(_conv(x, w))), (1, 8, 8, 3), (3, 3, 3, 16))
    (pooled,) = _ops(graph, ConvPoolOp)
    assert _body_ops(pooled) == ["aotk.tanh", "aotk.yield"]
    (use,) = pooled.result.uses
    assert use.operation.name == "func.return"


def test_a_bias_and_relu_before_the_pool_come_with_the_conv() -> None:
    """Keras' Conv2D(activation='relu') and MaxPooling2D: the bias stays before the pool
    (conv_fused's epilogue), the relu comes back to it from after the pool."""
    bias = K.variable(np.arange(16, dtype=np.float32))

    def build(x: Any, w: Any) -> Any:
        return _max_pool(K.relu(K.bias_add(_conv(x, w), bias)))

    graph = _graph(build, (1, 8, 8, 3), (3, 3, 3, 16))
    (pooled,) = _ops(graph, ConvPoolOp)
    assert len(pooled.extras) == 1
    assert _body_ops(pooled) == ["aotk.add", "aotk.maximum", "aotk.yield"]


def test_same_padding_pools_fold_when_the_windows_tile_the_conv() -> None:
    build = _conv_pool_with(padding="same")
    assert _ops(_graph(build, (1, 8, 6, 3), (3, 3, 3, 16)), ConvPoolOp)
    assert not _ops(_graph(build, (1, 9, 6, 3), (3, 3, 3, 16)), ConvPoolOp)


def _conv_pool_with(**pool: Any) -> Build:
    return lambda x, w: _max_pool(_conv(x, w), **pool)


LEFT_ALONE: list[tuple[str, Build, tuple[int, ...], tuple[int, ...], str]] = [
    ("overlapping windows", _conv_pool_with(strides=(1, 1)), (1, 8, 8, 3), (3, 3, 3, 16), "f"),
    ("3 x 3 windows, stride 2", _conv_pool_with(window=(3, 3), strides=(2, 2)), (1, 9, 9, 3),
     (3, 3, 3, 16), "f"),
    ("few output channels", _conv_pool_with(), (1, 8, 8, 3), (3, 3, 3, 4), "f"),
    ("float16", _conv_pool_with(), (1, 8, 8, 3), (3, 3, 3, 16), "h"),
    ("depthwise", lambda x, w: _max_pool(K.depthwise_conv2d(x, w, padding="same")),
     (1, 8, 8, 16), (3, 3, 16, 1), "f"),
    ("3-D", lambda x, w: K.pool3d(K.conv3d(x, w, padding="same"), (2, 2, 2), (2, 2, 2)),
     (1, 4, 4, 4, 3), (3, 3, 3, 3, 16), "f"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "build", "x", "w", "dtype"), LEFT_ALONE, ids=[c[0] for c in LEFT_ALONE]
)
def test_what_the_kernel_does_not_compute_is_left_alone(case, build, x, w, dtype) -> None:
    graph = _graph(build, x, w, {"f": "float32", "h": "float16"}[dtype])
    assert not _ops(graph, ConvPoolOp), case
    assert _ops(graph, PoolOp)


def test_a_conv_read_by_more_than_its_pool_keeps_its_output() -> None:
    xp, wp = K.placeholder((None, 8, 8, 3)), K.placeholder((3, 3, 3, 16))
    conv = _conv(xp, wp)
    module, _ = trace.extract([xp, wp], [_max_pool(conv), conv], "test")
    graph = pipeline.lower(module, stop_after="graph")
    assert not _ops(graph, ConvPoolOp) and _ops(graph, PoolOp)


@pytest.mark.parametrize(
    ("case", "after"),
    [
        ("an average pool", lambda y: K.relu(K.pool2d(y, (2, 2), (2, 2), pool_mode="avg"))),
        ("a decreasing op", lambda y: -_max_pool(y)),
        ("a square", lambda y: K.square(_max_pool(y))),
    ],
)
def test_only_a_non_decreasing_op_after_a_max_pool_joins_the_epilogue(case, after) -> None:
    graph = _graph(lambda x, w: after(_conv(x, w)), (1, 8, 8, 3), (3, 3, 3, 16))
    (pooled,) = _ops(graph, ConvPoolOp)
    assert _body_ops(pooled) == ["aotk.yield"], case
    (use,) = pooled.result.uses
    assert use.operation.name != "func.return", "the activation stays after the pool"
