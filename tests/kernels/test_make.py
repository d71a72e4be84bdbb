"""`make` and the builders using it give the op the xDSL constructor gives: same name,
operands, result types, properties and attributes (a missed default property or flag
would change the IR, or what LLVM may assume)."""

from __future__ import annotations

import pytest
from xdsl.builder import Builder
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, f32, i1, i8, i64
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Block, Operation
from xdsl.rewriter import InsertPoint

from aotk.kernels import scalar
from aotk.kernels.kernel import Kernel
from aotk.lowering import memory_to_llvm
from aotk.lowering.arith_to_llvm import BUILDERS

INDEX = IndexType()


def same(built: Operation, expected: Operation) -> None:
    assert built.name == expected.name
    assert list(built.operands) == list(expected.operands)
    assert list(built.result_types) == list(expected.result_types)
    assert dict(built.properties) == dict(expected.properties)
    assert dict(built.attributes) == dict(expected.attributes)


def block() -> Block:
    return Block(arg_types=[INDEX, INDEX, f32, f32, i1, i64, llvm.LLVMPointerType()])


def test_kernel_index_arithmetic_is_what_the_constructors_build():
    b = block()
    k = Kernel(Builder(InsertPoint.at_end(b)))
    x, y = b.args[:2]
    pairs = [
        (k.add(x, y), arith.AddiOp(x, y)),
        (k.sub(x, y), arith.SubiOp(x, y)),
        (k.mul(x, y), arith.MuliOp(x, y)),
        (k.div(x, y), arith.DivUIOp(x, y)),
        (k.rem(x, y), arith.RemUIOp(x, y)),
        (k.min(x, y), arith.MinSIOp(x, y)),
        (k.max(x, y), arith.MaxSIOp(x, y)),
        (k.index(7), arith.ConstantOp(IntegerAttr(7, INDEX))),
    ]
    for value, expected in pairs:
        assert isinstance(value.owner, Operation)
        same(value.owner, expected)


@pytest.mark.parametrize("pred", ["eq", "ne", "gt", "ge", "lt", "le"])
def test_scalar_compares_constants_and_selects_are_what_the_constructors_build(pred):
    b = block()
    builder = Builder(InsertPoint.at_end(b))
    u, v, c, n = b.args[2:6]
    signed = {"eq": "eq", "ne": "ne", "gt": "sgt", "ge": "sge", "lt": "slt", "le": "sle"}
    ordered = {"eq": "oeq", "ne": "une", "gt": "ogt", "ge": "oge", "lt": "olt", "le": "ole"}
    pairs = [
        (scalar.compare(builder, pred, u, v, f32), arith.CmpfOp(u, v, ordered[pred])),
        (scalar.compare(builder, pred, n, n, i64), arith.CmpiOp(n, n, signed[pred])),
        (scalar.select(builder, c, u, v), arith.SelectOp(c, u, v)),
        (scalar.const(builder, 2.5, f32), arith.ConstantOp(FloatAttr(2.5, f32))),
        (scalar.const(builder, True, i1), arith.ConstantOp(IntegerAttr(-1, i1))),
        (scalar.const(builder, 3, i64), arith.ConstantOp(IntegerAttr(3, i64))),
    ]
    for value, expected in pairs:
        assert isinstance(value.owner, Operation)
        same(value.owner, expected)


def test_geps_loads_and_stores_are_what_the_constructors_build():
    b = block()
    base, offset = b.args[6], b.args[5]
    anchor = llvm.ReturnOp()
    b.add_op(anchor)
    for index in (offset, 12):
        address = memory_to_llvm._gep(anchor, base, index, f32)  # pyright: ignore[reportPrivateUsage]
        assert isinstance(address.owner, Operation)
        same(address.owner, llvm.GEPOp.from_mixed_indices(base, [index], f32, inbounds=True))
    same(memory_to_llvm.load_op(base, f32), llvm.LoadOp(base, f32))
    same(memory_to_llvm.load_op(base, i8), llvm.LoadOp(base, i8))
    value = b.args[2]
    same(memory_to_llvm.store_op(value, base), llvm.StoreOp(value, base))


def test_llvm_builders_are_what_the_constructors_build():
    b = block()
    x, y, u, v, c, n = b.args[:6]
    flags = arith.FastMathFlagsAttr([FastMathFlag.REASSOC])
    cases: list[tuple[Operation, Operation]] = [
        (arith.AddiOp(x, y), llvm.AddOp(x, y)),
        (arith.MuliOp(x, y), llvm.MulOp(x, y)),
        (arith.DivSIOp(x, y), llvm.SDivOp(x, y)),
        (arith.ShLIOp(x, y), llvm.ShlOp(x, y)),
        (arith.AddfOp(u, v), llvm.FAddOp(u, v)),
        (arith.AddfOp(u, v, flags), llvm.FAddOp(u, v, llvm.FastMathAttr([FastMathFlag.REASSOC]))),
        (arith.NegfOp(u), llvm.FNegOp(u)),
        (arith.CmpiOp(x, y, "ult"), llvm.ICmpOp(x, y, IntegerAttr(6, 64))),
        (arith.CmpfOp(u, v, "olt"), llvm.FCmpOp(u, v, IntegerAttr(4, 64))),
        (arith.SelectOp(c, u, v), llvm.SelectOp(c, u, v)),
        (arith.TruncIOp(n, i8), llvm.TruncOp(n, i8)),
        (arith.ExtFOp(u, f32), llvm.FPExtOp(u, f32)),
        (arith.ConstantOp(IntegerAttr(5, INDEX)), llvm.ConstantOp(IntegerAttr(5, i64), i64)),
        (arith.ConstantOp(FloatAttr(0.5, f32)), llvm.ConstantOp(FloatAttr(0.5, f32), f32)),
    ]
    for source, expected in cases:
        (built,) = BUILDERS[type(source)](source)
        same(built, expected)
