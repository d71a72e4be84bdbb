"""Micro-kernels: registry, calls, the library compiled once per cache, and results."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from aotk import backend as K
from aotk import micro_kernels
from aotk.kernels import library

# Compiles a float32 dot in a fresh process; prints how many micro-kernels it built.
_CHILD = textwrap.dedent(
    """
    import json
    import numpy as np
    from aotk import backend as K
    from aotk import micro_kernels
    x = K.placeholder(shape=(None, 5))
    f = K.function([x], [K.dot(x, K.variable(np.eye(5, 3, dtype=np.float32)))])
    out = f([np.arange(10, dtype=np.float32).reshape(2, 5)])[0]
    print(json.dumps({"built": micro_kernels.BUILT, "out": out.tolist()}))
    """
)


def _child(cache: Path, disk_cache: str) -> dict:
    env = {**os.environ, "AOTK_CACHE_DIR": str(cache), "AOTK_DISK_CACHE": disk_cache}
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
def test_the_library_is_built_once_per_cache_even_with_the_model_cache_off(tmp_path):
    runs = [_child(tmp_path, "0") for _ in range(2)]
    assert [r["built"] for r in runs] == [1, 0]
    want = (np.arange(10, dtype=np.float32).reshape(2, 5) @ np.eye(5, 3)).tolist()
    assert runs[0]["out"] == runs[1]["out"] == want
    assert not (tmp_path / "kernels").exists()  # no model code was cached
    assert len(list((tmp_path / "micro-kernels").rglob("*.bin"))) == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("m, k, n", [(0, 3, 4), (3, 0, 4), (3, 4, 0), (1, 1, 1), (70, 33, 50)])
def test_matmul_edges_against_numpy(dtype: str, m: int, k: int, n: int) -> None:
    """Empty dims (C is zeros, or nothing), one element, and a packed shape (M >= 64)."""
    rng = np.random.default_rng(m * 100 + k * 10 + n)
    a, b = rng.uniform(-1, 1, (m, k)).astype(dtype), rng.uniform(-1, 1, (k, n)).astype(dtype)
    x, w = K.placeholder((None, None), dtype=dtype), K.placeholder((None, None), dtype=dtype)
    got = K.function([x, w], [K.dot(x, w)])([a, b])[0]
    assert got.shape == (m, n) and got.dtype == np.dtype(dtype)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, a.astype(np.float64) @ b, rtol=rtol, atol=rtol)


def test_registry_names_and_errors() -> None:
    assert "matmul_float32" in library.names()
    assert library.lookup("aotk_uk_matmul_float64").name == "matmul_float64"
    with pytest.raises(KeyError, match="no aotk micro-kernel named 'matmul_int8'"):
        library.lookup("matmul_int8")
    with pytest.raises(ValueError, match="registered twice"):
        library.register(library.MicroKernel("matmul_float32", "pi", lambda k, args: None))
    with pytest.raises(ValueError, match="'p' or 'i'"):
        library.register(library.MicroKernel("bad_params", "px", lambda k, args: None))


def test_called_names_entry_points_only() -> None:
    text = "call @aotk_uk_matmul_float32(...) ; @aotk_uk_matmul_float32_par0 @aotk_uk_nope"
    assert library.called(text) == {"aotk_uk_matmul_float32"}
    assert library.called(b"\\0aotk_mlp_aotk_uk_matmul_float64_packed\\0") == {
        "aotk_uk_matmul_float64_packed"
    }


def test_a_loaded_micro_kernel_is_linked_once() -> None:
    micro_kernels.ensure_loaded(["aotk_uk_matmul_float32"])
    engine = micro_kernels._linked["aotk_uk_matmul_float32"].engine
    micro_kernels.ensure_loaded(["aotk_uk_matmul_float32"])
    assert micro_kernels._linked["aotk_uk_matmul_float32"].engine is engine


@pytest.mark.parametrize(
    "perm, want",
    [
        ((1, 0), [1, 2, 3]),
        ((0, 2, 1), [2, 3, 4]),
        ((2, 3, 0, 1), [1, 6, 20]),
        ((1, 2, 0), [1, 2, 12]),
        ((0, 1, 3, 2), [6, 4, 5]),
        ((1, 0, 2), None),  # the inner axis stays: not a batched 2-D transpose
        ((0, 1), None),
        ((2, 1, 0), None),
    ],
)
def test_which_permutations_are_batched_2d_transposes(perm, want) -> None:
    from xdsl.builder import Builder
    from xdsl.ir import Block
    from xdsl.rewriter import InsertPoint

    from aotk.kernels import transpose
    from aotk.kernels.kernel import Kernel

    dims = [2, 3, 4, 5][: len(perm)]
    k = Kernel(Builder(InsertPoint.at_end(Block())))
    assert transpose.as_batched_2d(dims, perm, k) == want


@pytest.mark.parametrize(
    "shape, perm, dtype",
    [
        ((67, 45), (1, 0), "float32"),
        ((7, 33, 65), (0, 2, 1), "float64"),
        ((3, 4, 5, 6), (2, 3, 0, 1), "int8"),
        ((5, 6, 7), (1, 2, 0), "bool"),
        ((4, 5, 6, 7), (0, 1, 3, 2), "float16"),
        ((0, 5), (1, 0), "float32"),
        ((2, 3, 4), (1, 0, 2), "int32"),  # the generic nest
        # squares in registers: strips of rows (rows <= cols) and of columns, with rows
        # and columns past the last whole square, whole squares only, 8-byte lanes, a
        # side narrower than a square (element by element), a conv kernel's input gradient
        ((3, 40, 70), (0, 2, 1), "float32"),
        ((2, 70, 40), (0, 2, 1), "int32"),
        ((32, 48), (1, 0), "float32"),
        ((48, 32), (1, 0), "float32"),
        ((5, 17, 9), (0, 2, 1), "float64"),
        ((3, 23, 8), (0, 2, 1), "int64"),
        ((16, 15), (1, 0), "float32"),
        ((3, 3, 1024, 256), (0, 1, 3, 2), "float32"),
    ],
)
def test_transpose_against_numpy(shape, perm, dtype) -> None:
    a = (np.random.default_rng(len(shape)).random(shape) * 100).astype(dtype)
    x = K.placeholder((None,) * len(shape), dtype=dtype)
    got = K.function([x], [K.permute_dimensions(x, perm)])([a])[0]
    np.testing.assert_array_equal(got, np.transpose(a, perm), strict=True)


@pytest.mark.parametrize(
    "shape, axes, perm, static",
    [
        ((3, 3, 40, 24), (0, 1), (0, 1, 3, 2), True),  # a conv kernel's: by squares
        ((3, 3, 5, 4), (0, 1), (0, 1, 3, 2), False),  # element by element, dims at run time
        ((1, 3, 20, 17), (1,), (0, 1, 3, 2), True),  # the tap axis of one element kept
        ((4, 6, 5), (1,), (0, 2, 1), True),  # a matrix's own axis: the nest
    ],
)
def test_transpose_of_a_reversal_against_numpy(shape, axes, perm, static) -> None:
    from aotk.dialect import trace
    from aotk.lowering import pipeline

    a = np.random.default_rng(5).random(shape).astype("float32")
    x = K.placeholder(shape if static else (None,) * len(shape), dtype="float32")
    y = K.permute_dimensions(K.reverse(x, axes), perm)
    graph, _ = trace.extract([x], [y])
    pipeline.lower(graph, "graph")
    names = [op.name for op in graph.walk()]
    assert "aotk.slice" not in names and names.count("aotk.transpose") == 1
    got = K.function([x], [y])([a])[0]
    np.testing.assert_array_equal(got, np.transpose(np.flip(a, axes), perm), strict=True)
