"""`codegen.markers`: calls naming vector compares and selects become LLVM's own
instructions, and a kernel using them computes what NumPy does."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvmlite import ir

from aotk.codegen import markers

F8, I8 = ir.VectorType(ir.FloatType(), 8), ir.VectorType(ir.IntType(32), 8)


def _expanded(kind: str, suffix: str, arg_types: list[ir.Type], result: ir.Type) -> str:
    """The text of a function returning one marker call of `kind` on its arguments."""
    module = ir.Module("m")
    marker = ir.Function(module, ir.FunctionType(result, arg_types), markers.name(kind, suffix))
    fn = ir.Function(module, ir.FunctionType(result, arg_types), "f")
    builder = ir.IRBuilder(fn.append_basic_block())
    builder.ret(builder.call(marker, fn.args))
    markers.expand(module)
    text = str(module)
    assert "llvm.aotk" not in text and "call" not in text
    return text


FLAGS = ir.VectorType(ir.IntType(1), 8)


@pytest.mark.parametrize(
    ("kind", "want"),
    [
        ("fcmp.olt", "fcmp olt <8 x float>"),
        ("fcmp.ugt", "fcmp ugt <8 x float>"),
        ("fcmp.une", "fcmp une <8 x float>"),
        ("fcmp.ord", "fcmp ord <8 x float>"),
    ],
)
def test_float_compares(kind: str, want: str) -> None:
    assert want in _expanded(kind, "v8f32", [F8, F8], FLAGS)


def test_constant_float_compares() -> None:
    assert "ret <8 x i1> <i1 1," in _expanded("fcmp.true", "v8f32", [F8, F8], FLAGS)
    assert "ret <8 x i1> <i1 0," in _expanded("fcmp.false", "v8f32", [F8, F8], FLAGS)


@pytest.mark.parametrize(
    ("kind", "want"),
    [("icmp.slt", "icmp slt"), ("icmp.uge", "icmp uge"), ("icmp.eq", "icmp eq")],
)
def test_integer_compares(kind: str, want: str) -> None:
    assert f"{want} <8 x i32>" in _expanded(kind, "v8i32", [I8, I8], FLAGS)


def test_select_takes_a_vector_condition() -> None:
    text = _expanded("select", "v8f32", [FLAGS, F8, F8], F8)
    assert re.search(r"select\s+<8 x i1> %.*, <8 x float> %.*, <8 x float> %", text)


def test_a_kernel_with_vector_compares_and_selects_runs(rng: np.random.Generator) -> None:
    """Softmax's row maximum compares and selects whole vectors: NaN, -inf and +inf rows
    as NumPy's maximum gives them."""
    from aotk import backend as K

    x = rng.standard_normal((6, 37)).astype(np.float32)
    x[1, 5], x[2, :], x[3, 30] = np.nan, -np.inf, np.inf
    p = K.placeholder((None, 37))
    got = K.function([p], [K.max(p, axis=1)])([x])[0]
    np.testing.assert_array_equal(got, np.max(x, axis=1))
