"""Winograd convs on a weight a K.function does not write read the kernel in Winograd's
points (U) from a copy made once (`weight_packs`), made again when the weight changes."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func

import aotk
from aotk import backend as K
from aotk import dtypes, weight_packs
from aotk.dialect.conv_fused import EpilogueConvOp
from aotk.kernels import conv_winograd, winograd_weight
from aotk.lowering import pipeline

TOL = {"float32": 1e-5, "float64": 1e-12}


def _conv(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """A 'same' 3 x 3 correlation in float64."""
    padded = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    h, wd = x.shape[1:3]
    out = np.zeros((*x.shape[:3], w.shape[-1]))
    for i in range(3):
        for j in range(3):
            out += padded[:, i : i + h, j : j + wd] @ w[i, j].astype(np.float64)
    return out


def _pool(y: np.ndarray) -> np.ndarray:
    n, h, w, c = y.shape
    return y[:, : h // 2 * 2, : w // 2 * 2].reshape(n, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def _check(got: np.ndarray, want: np.ndarray, dtype: str, label: str) -> None:
    assert got.shape == want.shape and got.dtype == dtype, (label, got.shape, got.dtype)
    scale = np.abs(want).max(initial=0.0) + 1.0
    err = np.abs(got.astype(np.float64) - want).max(initial=0.0)
    assert err <= TOL[dtype] * scale * 30, f"{label}: off by {err}"


def _model(rng: np.random.Generator, shape: tuple[int, ...], cout: int, dtype: str) -> Any:
    """A conv, the same with a bias and relu, and the same max-pooled, on one kernel, of
    images of any size."""
    x = K.placeholder((None, None, None, shape[-1]), dtype=dtype)
    scale = 1.0 / np.sqrt(9 * shape[-1])
    w = K.variable((rng.standard_normal((3, 3, shape[-1], cout)) * scale).astype(dtype), dtype)
    b = K.variable(rng.standard_normal(cout).astype(dtype), dtype)
    y = K.conv2d(x, w, padding="same")
    fused = K.relu(K.bias_add(K.conv2d(x, w, padding="same"), b))
    pooled = K.pool2d(K.conv2d(x, w, padding="same"), (2, 2), (2, 2))
    return x, w, b, K.function([x], [y, fused, pooled])


def _expected(xs: np.ndarray, w: Any, b: Any) -> list[np.ndarray]:
    y = _conv(xs, K.get_value(w))
    return [y, np.maximum(y + K.get_value(b), 0.0), _pool(y)]


def _transform(dtype: str, cin: int, cout: int) -> str | None:
    """The key of U's layout the convs take, None for the direct kernels."""
    plan = conv_winograd.plan_for(dtypes.element_type(dtype), (3, 3, cin, cout))
    return None if plan is None else winograd_weight.key_of(plan.layout())


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, cout", [((2, 15, 17, 32), 64), ((1, 14, 14, 24), 40), ((1, 14, 9, 400), 320)]
)
def test_packed_conv_values(
    rng: np.random.Generator, shape: tuple[int, ...], cout: int, dtype: str, threads: int
) -> None:
    """A plain, a fused and a pooled conv share one packed kernel (the last one's
    products by matmuls, its U in slivers, the last padded); a batch of 0, an image of a
    few tiles (9: given U, Winograd's path from a register tile's rows), and one too
    small for it (the direct conv, on the kernel itself)."""
    transform = _transform(dtype, shape[-1], cout)
    assert transform == ("f4_slivers" if cout == 320 else "f4")
    _, w, b, f = _model(rng, shape, cout, dtype)
    packs = [(p.kdim, p.n, p.dtype, p.transform) for p in f._packs]
    assert packs == ([(shape[-1], cout, dtype, transform)] if transform else [])
    before = aotk.get_num_threads()
    aotk.set_num_threads(threads)
    try:
        for n, h, wd in ((shape[0], *shape[1:3]), (0, *shape[1:3]), (1, 9, 9), (1, 3, 4)):
            xs = rng.standard_normal((n, h, wd, shape[-1])).astype(dtype)
            for got, want, form in zip(
                f([xs]), _expected(xs, w, b), ("conv", "fused", "pool"), strict=True
            ):
                _check(got, want, dtype, f"{form} {n}x{h}x{wd}")
    finally:
        aotk.set_num_threads(before)


def test_the_code_reads_the_packed_copy(rng: np.random.Generator) -> None:
    """Zeroing the copy behind the function's back zeroes the Winograd convs (the copy is
    what they read), down to an image of 3 x 3 F4 tiles, but not the direct conv of an
    image of fewer tiles than a register tile's rows (which reads the kernel)."""
    _, w, b, f = _model(rng, (1, 16, 16, 32), 32, "float32")
    f([rng.standard_normal((1, 16, 16, 32)).astype(np.float32)])
    (copy,) = f._caller._packs._arrays
    copy[:] = 0.0
    relu_b = np.maximum(K.get_value(b), 0)
    for side in (16, 12, 9):
        conv, fused, pooled = f([rng.standard_normal((1, side, side, 32)).astype(np.float32)])
        assert not conv.any() and not pooled.any(), side
        np.testing.assert_array_equal(fused, np.broadcast_to(relu_b, fused.shape))
    small = rng.standard_normal((1, 8, 8, 32)).astype(np.float32)  # 4 tiles
    _check(f([small])[0], _conv(small, K.get_value(w)), "float32", "direct")


def test_set_value_and_updates_make_the_copy_again(rng: np.random.Generator) -> None:
    x, w, b, f = _model(rng, (2, 12, 12, 32), 48, "float32")
    step = K.function([x], [], [K.update(w, w * 0.5 - 0.125)])
    xs = rng.standard_normal((2, 12, 12, 32)).astype(np.float32)
    f([xs])
    K.set_value(w, rng.standard_normal((3, 3, 32, 48)).astype(np.float32) * 0.1)
    for got, want in zip(f([xs]), _expected(xs, w, b), strict=True):
        _check(got, want, "float32", "after set_value")
    for i in range(2):
        step([xs])
        for got, want in zip(f([xs]), _expected(xs, w, b), strict=True):
            _check(got, want, "float32", f"after step {i}")


def test_a_conv_whose_kernel_the_function_writes_makes_it_each_call(
    rng: np.random.Generator,
) -> None:
    x = K.placeholder((None, 12, 12, 32))
    w = K.variable(rng.standard_normal((3, 3, 32, 32)).astype(np.float32) * 0.1)
    y = K.conv2d(x, w, padding="same")
    f = K.function([x], [y], [K.update(w, w * 2.0)])
    assert f._packs == []
    xs = rng.standard_normal((2, 12, 12, 32)).astype(np.float32)
    for _ in range(2):
        want = _conv(xs, K.get_value(w))
        _check(f([xs])[0], want, "float32", "written kernel")


def test_pickled_function_makes_its_own_copy(rng: np.random.Generator) -> None:
    f = _model(rng, (1, 12, 12, 32), 32, "float32")[3]
    xs = rng.standard_normal((1, 12, 12, 32)).astype(np.float32)
    want = [a.copy() for a in f([xs])]
    g = pickle.loads(pickle.dumps(f))
    assert g._packs == f._packs
    for got, expected in zip(g([xs]), want, strict=True):
        np.testing.assert_array_equal(got, expected)


def test_packed_convs_still_take_their_epilogue_and_pool(rng: np.random.Generator) -> None:
    """The packs are planned on the traced module: aotk-fuse and aotk-conv-pool then
    join a bias, relu and max pool to a conv that reads a packed kernel, as without."""
    x = K.placeholder((None, 12, 12, 32))
    w = K.variable(rng.standard_normal((3, 3, 32, 48)).astype(np.float32))
    b = K.variable(rng.standard_normal(48).astype(np.float32))
    biased = K.relu(K.bias_add(K.conv2d(x, w, padding="same"), b))
    cases = {
        "aotk.conv_fused": biased,
        "aotk.conv_pool": K.pool2d(biased, (2, 2), (2, 2)),
    }
    for name, y in cases.items():
        f = K.function([x], [y])
        module, packs = weight_packs.plan(f.module, 1, f.captures, [])
        pipeline.lower(module, "graph")
        main = next(iter(module.ops))
        assert isinstance(main, func.FuncOp)
        ops = [op for op in main.body.block.ops if op.name != "func.return"]
        assert [op.name for op in ops] == [name] and len(packs) == 1
        assert isinstance(ops[0], EpilogueConvOp) and ops[0].packed is not None


def test_winograd_switched_off_keeps_convs_direct(
    rng: np.random.Generator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AOTK_CONV_WINOGRAD=0: no U is packed; the conv, a graph compiled already with
    Winograd on (its kernel as an input), is compiled again rather than taken from the
    cache (once: with nothing packed, the captured kernel is an argument like the
    placeholder); the values, other roundings of the same sums, are nearer float64."""
    from aotk import host_code

    x = K.placeholder((None, 16, 16, 32))
    w = K.variable((rng.standard_normal((3, 3, 32, 48)) / np.sqrt(288)).astype(np.float32))
    kernel = K.placeholder((3, 3, 32, 48))
    xs = rng.standard_normal((2, 16, 16, 32)).astype(np.float32)
    want = _conv(xs, K.get_value(w))

    def build() -> tuple[Any, Any]:
        return (
            K.function([x], [K.conv2d(x, w, padding="same")]),
            K.function([x, kernel], [K.conv2d(x, kernel, padding="same")]),
        )

    on, on_written = build()
    assert [p.transform for p in on._packs] == ["f4"]
    monkeypatch.setenv("AOTK_CONV_WINOGRAD", "0")
    before = host_code.COMPILE_COUNT + host_code.DISK_HITS
    off, off_written = build()
    assert off._packs == []
    assert host_code.COMPILE_COUNT + host_code.DISK_HITS == before + 1
    got = {"on": on([xs])[0], "off": off([xs])[0]}
    got["on_written"] = on_written([xs, K.get_value(w)])[0]
    got["off_written"] = off_written([xs, K.get_value(w)])[0]
    assert not np.array_equal(got["on_written"], got["off_written"])
    np.testing.assert_array_equal(got["off"], got["off_written"])
    for name, value in got.items():
        _check(value, want, "float32", name)
    err = {name: np.abs(value - want).max() for name, value in got.items()}
    assert err["off"] < err["on"], err
