"""Accuracy, special values and vectorization of `aotk.kernels.vecmath_trig`.

Each builder is wrapped in a `scf.for` loop over `memref<?xf32>`, lowered by the pipeline's
llvm stage and JIT-compiled. The reference is NumPy's float64 sin/cos (error < 1 ulp of
float64, far below f32's); errors are in f32 ulp of the reference.
"""

from __future__ import annotations

import functools
import re

import numpy as np
import pytest
from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    f32,
    f64,
    i64,
)
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

from aotk import runtime
from aotk.codegen import jit, llvm_ir
from aotk.kernels import vecmath_trig
from aotk.lowering import pipeline

FUNCS = ("sin", "cos")
REFS = {"sin": np.sin, "cos": np.cos}
MAX_ULP = 0.6  # measured: 0.50 (a correctly rounded f64 result, rounded once to f32)

ALLOWED_OPS = {
    arith.ConstantOp, arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.NegfOp, arith.CmpfOp,
    arith.CmpiOp, arith.SelectOp, arith.BitcastOp, arith.AddiOp, arith.AndIOp, arith.ExtFOp,
    arith.TruncFOp, xmath.FmaOp, xmath.AbsFOp, xmath.RoundEvenOp,
}  # fmt: skip


def _kernel_module(name: str) -> ModuleOp:
    """func @k(in: memref<?xf32>, out: memref<?xf32>, n: i64): out[i] = name(in[i])."""
    mem, idx = MemRefType(f32, [DYNAMIC_INDEX]), IndexType()
    body = Block(arg_types=[mem, mem, i64])
    src, dst, count = body.args
    b = Builder(InsertPoint.at_end(body))
    n = b.insert(arith.IndexCastOp(count, idx)).result
    zero = b.insert(arith.ConstantOp(IntegerAttr(0, idx))).result
    one = b.insert(arith.ConstantOp(IntegerAttr(1, idx))).result
    loop = Block(arg_types=[idx])
    lb = Builder(InsertPoint.at_end(loop))
    x = lb.insert(memref.LoadOp.get(src, [loop.args[0]])).res
    lb.insert(memref.StoreOp.get(getattr(vecmath_trig, name)(lb, x), dst, [loop.args[0]]))
    lb.insert(scf.YieldOp())
    b.insert(scf.ForOp(zero, n, one, [], Region(loop)))
    b.insert(func.ReturnOp())
    return ModuleOp([func.FuncOp("k", ((mem, mem, i64), ()), Region(body))])


# Kept alive for the session: an MCJIT engine owns the (cached) target machine.
@functools.cache
def _compiled(name: str) -> jit.CompiledModule:
    module = _kernel_module(name)
    module.verify()
    pipeline.lower(module, "llvm", start_after="loops")
    return jit.compile_module(module)


def _run(name: str, x: np.ndarray) -> np.ndarray:
    src = runtime.aligned_copy(x.astype(np.float32))
    out = runtime.aligned_empty(src.shape, "float32")
    if src.size:
        _compiled(name)["k"](src.ctypes.data, out.ctypes.data, src.size)
    return out


def _ulp_error(y: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|y - ref| in f32 ulp of ref (denormal spacing below the normal range)."""
    fi = np.finfo(np.float32)
    _, e = np.frexp(np.abs(ref))
    ulp = np.maximum(np.ldexp(1.0, e - 1 - fi.nmant), float(fi.smallest_subnormal))
    err = np.abs(y.astype(np.float64) - ref) / ulp
    both_nan = np.isnan(y) & np.isnan(ref)
    return np.where(both_nan, 0.0, np.where(np.isnan(err), np.inf, err))


def _check(name: str, x: np.ndarray) -> float:
    x = x.astype(np.float32)
    y = _run(name, x)
    with np.errstate(invalid="ignore"):
        err = _ulp_error(y, REFS[name](x.astype(np.float64)))
    worst = int(np.argmax(err))
    assert err[worst] <= MAX_ULP, f"{name}({x[worst]!r}) = {y[worst]!r}: {err[worst]:.3f} ulp"
    return float(err[worst])


def _bit_sweep(count: int) -> np.ndarray:
    """About `count` finite f32 of each sign, evenly spaced in bit pattern (every binade)."""
    x = np.arange(0, 1 << 31, (1 << 31) // count, dtype=np.uint32).view(np.float32)
    x = x[np.isfinite(x)]
    return np.concatenate([x, -x])


@pytest.mark.parametrize("name", FUNCS)
def test_accuracy_over_every_binade(name: str) -> None:
    _check(name, _bit_sweep(400_000))


@pytest.mark.parametrize("name", FUNCS)
def test_accuracy_on_common_ranges(name: str) -> None:
    rng = np.random.default_rng(0)
    parts = [
        np.linspace(-10.0, 10.0, 400_001),
        rng.uniform(-1e4, 1e4, 200_000),
        rng.uniform(-1e9, 1e9, 100_000),
    ]
    _check(name, np.concatenate(parts))


def _near_multiples_of_pio2() -> np.ndarray:
    """The f32 neighbours of k*pi/2, where the reduced argument is smallest."""
    k = np.concatenate([np.arange(1, 20_000), np.geomspace(2e4, 1e37, 20_000).round()])
    centre = (k * (np.pi / 2)).astype(np.float32)
    return np.concatenate([np.nextafter(centre, np.float32(d)) for d in (-np.inf, 0, np.inf)])


@pytest.mark.parametrize("name", FUNCS)
def test_accuracy_near_multiples_of_pi_over_2(name: str) -> None:
    _check(name, _near_multiples_of_pio2())


def test_hard_cases_of_the_reduction() -> None:
    # x closest to multiples of pi/2 among all f32 (Payne-Hanek's worst cases)
    hard = np.array([16367173 * 2.0**72, 12789237 * 2.0**-4, 3.4e38, 1e38, 8e37], np.float64)
    for name in FUNCS:
        _check(name, np.concatenate([hard, -hard]))


INF, NAN = np.inf, np.nan
EXACT = [
    ("sin", [0.0, -0.0, 1e-30, -1e-30, 1e-45, INF, -INF, NAN], [0.0, -0.0, 1e-30, -1e-30, 1e-45]),
    ("cos", [0.0, -0.0, 1e-30, -1e-30, 1e-45, INF, -INF, NAN], [1.0, 1.0, 1.0, 1.0, 1.0]),
]


@pytest.mark.parametrize(("name", "inputs", "finite"), EXACT, ids=FUNCS)
def test_exact_values(name: str, inputs: list[float], finite: list[float]) -> None:
    y = _run(name, np.array(inputs, np.float32))
    want = np.array([*finite, NAN, NAN, NAN], np.float32)
    np.testing.assert_array_equal(y, want, err_msg=f"{name}{inputs}")
    np.testing.assert_array_equal(np.signbit(y[:5]), np.signbit(want[:5]), err_msg=name)


def test_denormals() -> None:
    step = (1 << 23) // 50_000
    denormals = (np.arange(1, 50_001, dtype=np.uint32) * np.uint32(step)).view(np.float32)
    for name in FUNCS:
        _check(name, np.concatenate([denormals, -denormals]))


@pytest.mark.parametrize("name", FUNCS)
def test_only_allowed_ops(name: str) -> None:
    block = Block(arg_types=[f32])
    getattr(vecmath_trig, name)(Builder(InsertPoint.at_end(block)), block.args[0])
    assert {type(op) for op in block.ops} <= ALLOWED_OPS


@pytest.mark.parametrize("name", FUNCS)
def test_rejects_other_types(name: str) -> None:
    block = Block(arg_types=[f64])
    with pytest.raises(TypeError, match="expected an f32"):
        getattr(vecmath_trig, name)(Builder(InsertPoint.at_end(block)), block.args[0])


@pytest.mark.skipif("+avx2" not in llvm_ir.host_features(), reason="needs an AVX2 host")
@pytest.mark.parametrize("name", FUNCS)
def test_loop_is_vectorized(name: str) -> None:
    ir = _compiled(name).llvm_ir
    assert re.search(r"<(4|8|16) x double>", ir), f"{name} loop was not vectorized"
    assert not re.search(r"call [^\n]*@(?!llvm\.)", ir)
    assert not re.search(r"@llvm\.(sin|cos)", ir)
