"""Shared test helpers: seeded inputs per dtype, per-dtype tolerances, one-op functions.

`run_both` is the differential check every op test builds on: it compiles a traced graph
with `Function`, runs it and the NumPy oracle (`interp.run_module`) on the same arrays,
and compares them with the tolerance of the output dtype.
"""

from __future__ import annotations

import ctypes
import mmap
import os
import shutil
import tempfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

# tests/keras runs real Keras on aotk; Keras reads this when a test module imports it
os.environ["KERAS_BACKEND"] = "aotk.backend"
# every compiled call checks that its kernel stayed within its workspace (`runtime.Workspace`)
os.environ.setdefault("AOTK_CHECK_WORKSPACE", "1")

from aotk import interp, micro_kernels
from aotk.codegen import jit
from aotk.dialect import trace
from aotk.function import Function
from aotk.kernels import library
from aotk.lowering import pipeline

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8")
NUMERIC = FLOATS + INTS
ALL_DTYPES = (*NUMERIC, "bool")


@dataclass(frozen=True)
class Tol:
    """Relative and absolute tolerance of one float dtype."""

    rtol: float
    atol: float


# float32 transcendentals are allowed a few ulp (ulp(1) = 1.2e-7), float16 one ulp or two.
TOLERANCES = {
    "float16": Tol(rtol=1e-2, atol=2e-3),
    "float32": Tol(rtol=1e-5, atol=1e-6),
    "float64": Tol(rtol=1e-12, atol=1e-14),
}


@pytest.fixture(autouse=True)
def _seeded_global_numpy_rng(request: pytest.FixtureRequest) -> None:
    """Seeds NumPy's global generator per test: Keras's initializers and aotk's unseeded
    random ops draw from it, so a test draws the same numbers on whatever worker runs it."""
    np.random.seed(zlib.crc32(request.node.nodeid.encode()))


def pytest_configure(config: pytest.Config) -> None:
    """Keep the session's compile cache and runtime builds out of the user's cache."""
    if not os.environ.get("AOTK_CACHE_DIR"):
        path = os.environ["AOTK_CACHE_DIR"] = tempfile.mkdtemp(prefix="aotk-test-cache-")
        config.add_cleanup(lambda: shutil.rmtree(path, ignore_errors=True))


# Keras's own test suites, run in a subprocess for minutes each: started first, they
# leave the other worker (which steals queued tests, `--dist worksteal`) the short ones
LONGEST_FIRST = ("test_layer_suites.py", "test_backend_suite.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True)
def fresh_graph():
    """Each test traces into an empty graph."""
    trace.reset_graph()
    yield
    trace.reset_graph()


@pytest.fixture
def float64():
    """K.floatx() is float64 for the test (gradients checked by finite differences)."""
    from aotk import backend as K

    old = K.floatx()
    K.set_floatx("float64")
    yield
    K.set_floatx(old)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def placeholder(
    shape: Sequence[int | None], dtype: str = "float32", name: str = "x"
) -> trace.KTensor:
    """A traced input of `shape` (None dims are dynamic)."""
    return trace.KTensor(trace.placeholder_arg(tuple(shape), dtype, name), name=name)


def emit(op_cls: Any, *xs: trace.KTensor, **attrs: Any) -> trace.KTensor:
    return trace.emit(op_cls, *xs, where=f"test.{op_cls.name}", **attrs)


def conv_attrs(rank: int, **kw: Any) -> dict[str, Any]:
    """`aotk.conv`'s attributes over `rank` spatial axes: unit strides and dilations, no
    pads ("explicit"), one group; `kw` replaces any of them."""
    ones, zeros = (1,) * rank, (0,) * rank
    attrs: dict[str, Any] = {"strides": ones, "dilation": ones, "lhs_dilation": ones}
    attrs |= {"pad_before": zeros, "pad_after": zeros, "padding": "explicit", "groups": 1}
    return attrs | kw


def assert_close(
    got: np.ndarray, want: np.ndarray, scale: float = 1.0, rscale: float = 1.0, msg: str = ""
) -> None:
    """Equal dtype and shape; floats within the dtype's tolerance (atol times `scale`, rtol
    times `rscale`), with NaN and inf in the same places; ints and bools exactly equal."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{msg}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{msg}: shape {got.shape} != {want.shape}"
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want, err_msg=msg, strict=True)
        return
    tol = TOLERANCES[want.dtype.name]
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{msg}: NaN positions")
    np.testing.assert_array_equal(
        np.isposinf(got), np.isposinf(want), err_msg=f"{msg}: +inf positions"
    )
    np.testing.assert_array_equal(
        np.isneginf(got), np.isneginf(want), err_msg=f"{msg}: -inf positions"
    )
    np.testing.assert_allclose(
        got.astype(np.float64),
        want.astype(np.float64),
        rtol=tol.rtol * rscale,
        atol=tol.atol * scale,
        equal_nan=True,
        err_msg=msg,
    )


MATMUL_RTOL = {"float16": 2e-3, "float32": 1e-5, "float64": 1e-13}


def assert_product_close(got: np.ndarray, a: np.ndarray, b: np.ndarray, label: str) -> None:
    """`got` is a @ b (np.matmul's batching): a's dtype, the product's shape, integers
    exact, and each float element within MATMUL_RTOL of |a| @ |b| (the size of the terms
    it sums) of the float64 product, or equal to it (infinities), or NaN where it is NaN:
    a NaN where the product is a number (an element never written to a NaN-filled
    output) is off."""
    if a.dtype.kind != "f":
        want = np.matmul(a, b).astype(a.dtype)
        assert got.dtype == a.dtype and got.shape == want.shape, label
        np.testing.assert_array_equal(got, want, err_msg=label)
        return
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64
    assert got.dtype == a.dtype and got.shape == want.shape, label
    bound = MATMUL_RTOL[a.dtype.name] * (np.abs(a64) @ np.abs(b64) + 1e-30)
    got64 = got.astype(np.float64)
    close = (np.abs(got64 - want) <= bound) | (got64 == want) | (np.isnan(got64) & np.isnan(want))
    bad = np.argwhere(~close)
    assert bad.size == 0, f"{label}: {len(bad)} elements off, first at {bad[0]}"


def random_array(
    rng: np.random.Generator, shape: Sequence[int], dtype: str, domain: str = "any"
) -> np.ndarray:
    """Seeded values of `dtype` that avoid the op's domain errors.

    Domains: "any" (floats in [-3, 3], ints over most of their range, so integer ops
    wrap), "positive" (floats in [0.25, 4], ints in [1, 9]), "small" (floats in [-2, 2],
    ints in [-4, 4]; for exponents and products), "castable" ([-100, 100] clipped to the
    dtype: values that every signed dtype can hold; casts to uint8 need their abs).
    """
    shape = tuple(shape)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in FLOATS:
        lo, hi = {"any": (-3, 3), "positive": (0.25, 4), "small": (-2, 2), "castable": (-100, 100)}[
            domain
        ]
        return rng.uniform(lo, hi, shape).astype(dtype)
    info = np.iinfo(dtype)
    lo, hi = {
        "any": (max(info.min, -(2**40)), min(info.max, 2**40)),
        "positive": (1, 9),
        "small": (max(info.min, -4), 4),
        "castable": (max(info.min, -100), min(info.max, 100)),
    }[domain]
    return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)


def special_values(dtype: str) -> np.ndarray:
    """NaN, infinities, zeros of both signs, tiny and huge values of a float dtype."""
    info = np.finfo(dtype)
    values = [
        np.nan,
        np.inf,
        -np.inf,
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        info.tiny,
        -info.tiny,
        info.max,
        -info.max,
        20.0,
        -20.0,
        100.0,
        -100.0,
    ]
    return np.array(values, dtype=dtype)


def run_both(
    inputs: Sequence[trace.KTensor],
    outputs: Sequence[trace.KTensor],
    calls: Sequence[Sequence[np.ndarray]],
    scales: Sequence[float] | None = None,
    labels: Sequence[str] | None = None,
) -> Function:
    """Compile once, then for every argument list compare compiled with interpreted."""
    f = Function(list(inputs), list(outputs))
    for arrays in calls:
        got = f(list(arrays))
        want = interp.run_module(f.module, [np.asarray(a) for a in arrays])
        assert len(got) == len(want) == len(outputs)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            label = labels[i] if labels is not None else f"output {i}"
            shapes = [np.shape(a) for a in arrays]
            assert_close(g, w, scales[i] if scales is not None else 1.0, msg=f"{label} on {shapes}")
    return f


def check_one_op(
    op_cls: Any,
    specs: Sequence[tuple[Sequence[int | None], str]],
    arrays: Sequence[np.ndarray],
    **attrs: Any,
) -> list[np.ndarray]:
    """Build a one-op function from (shape, dtype) input specs, compare compiled with
    interpreted on `arrays`, and return the compiled outputs."""
    xs = [placeholder(shape, dtype, f"in{i}") for i, (shape, dtype) in enumerate(specs)]
    y = emit(op_cls, *xs, **attrs)
    f = run_both(xs, [y], [arrays])
    return f(list(arrays))


def before_unreadable_page(values: np.ndarray) -> np.ndarray:
    """A copy of `values` whose last byte is followed by a page that cannot be read: a
    kernel that reads past the end faults instead of passing by chance."""
    page = mmap.PAGESIZE
    pages = -(-values.nbytes // page) + 1
    region = mmap.mmap(-1, pages * page)
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.mprotect(ctypes.c_void_p(start + (pages - 1) * page), page, 0) == 0  # PROT_NONE
    offset = (pages - 1) * page - values.nbytes
    guarded = np.frombuffer(region, values.dtype, values.size, offset).reshape(values.shape)
    guarded[...] = values
    return guarded


def compile_kernel(name: str, body: Block) -> Any:
    """JIT a hand-built loop-stage kernel: `body` (ending in func.return) as function
    `name`, with the runtime and the micro-kernels it calls linked in. Keep what this
    returns, not only its functions: its engine holds the code."""
    module = ModuleOp([func.FuncOp(name, (body.arg_types, ()), Region(body))])
    library.declare_called(module)  # the runtime's aotk_parallel_width, the micro-kernels
    module.verify()
    pipeline.lower(module, "llvm", start_after="loops")
    micro_kernels.ensure_called_loaded([str(module).encode()])
    return jit.compile_module(module)
