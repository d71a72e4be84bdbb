"""`make` and the builders using it give the op the xDSL constructor gives: same name,
operands, result types, properties and attributes (a missed default property or flag
would change the IR, or what LLVM may assume)."""

from __future__ import annotations

import pytest
from xdsl.builder import Builder
from xdsl.dialects import arith, llvm, math, memref, ptr, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    Signedness,
    VectorType,
    f32,
    i1,
    i8,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.rewriter import InsertPoint

from aotk.kernels import make, scalar
from aotk.kernels.kernel import Buf, Kernel
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
    x, y, u, v, c = b.args[:5]
    pairs = [
        (k.add(x, y), arith.AddiOp(x, y)),
        (k.sub(x, y), arith.SubiOp(x, y)),
        (k.mul(x, y), arith.MuliOp(x, y)),
        (k.div(x, y), arith.DivUIOp(x, y)),
        (k.rem(x, y), arith.RemUIOp(x, y)),
        (k.min(x, y), arith.MinSIOp(x, y)),
        (k.max(x, y), arith.MaxSIOp(x, y)),
        (k.index(7), arith.ConstantOp(IntegerAttr(7, INDEX))),
        (k.index_op(arith.MaxUIOp, x, y), arith.MaxUIOp(x, y)),
        (k.compare("sgt", x, y), arith.CmpiOp(x, y, "sgt")),
        (k.compare("eq", x, y), arith.CmpiOp(x, y, "eq")),
        (k.both(c, c), arith.AndIOp(c, c)),
        (k.either(c, c), arith.OrIOp(c, c)),
        (k.select(c, x, y), arith.SelectOp(c, x, y)),
        (k.select(c, u, v), arith.SelectOp(c, u, v)),  # CTC's kernels select floats
    ]
    for value, expected in pairs:
        assert isinstance(value.owner, Operation)
        same(value.owner, expected)


def test_kernel_loads_stores_and_views_are_what_the_constructors_build():
    b = Block(arg_types=[MemRefType(f32, [DYNAMIC_INDEX]), INDEX])
    k = Kernel(Builder(InsertPoint.at_end(b)))
    mem, offset = b.args
    buf = Buf(mem, (offset,), f32)
    value = k.load_flat(buf, offset)
    assert isinstance(value.owner, Operation)
    same(value.owner, memref.LoadOp.get(mem, [offset]))
    k.store_flat(buf, offset, value)
    assert b.last_op is not None
    same(b.last_op, memref.StoreOp.get(value, mem, [offset]))
    view = k.view(buf, offset, [4]).mem.owner
    assert isinstance(view, ptr.FromPtrOp)
    moved = view.source.owner
    assert isinstance(moved, ptr.PtrAddOp)
    same(view, ptr.FromPtrOp(moved.result, MemRefType(f32, [DYNAMIC_INDEX])))
    same(moved, ptr.PtrAddOp(moved.addr, moved.offset))
    assert isinstance(moved.addr.owner, ptr.ToPtrOp)
    same(moved.addr.owner, ptr.ToPtrOp(mem))


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
    base, offset, value = b.args[6], b.args[5], b.args[2]
    for index in (offset, 12):
        for inbounds in (True, False):
            expected = llvm.GEPOp.from_mixed_indices(base, [index], f32, inbounds=inbounds)
            same(make.gep_op(base, index, f32, inbounds), expected)
    anchor = llvm.ReturnOp()
    b.add_op(anchor)
    address = memory_to_llvm._gep(anchor, base, offset, i8)  # pyright: ignore[reportPrivateUsage]
    assert isinstance(address.owner, Operation)
    same(address.owner, llvm.GEPOp.from_mixed_indices(base, [offset], i8, inbounds=True))
    for alignment in (None, 4, 8):
        same(make.load_op(base, f32, alignment), llvm.LoadOp(base, f32, alignment))
        same(make.store_op(value, base, alignment), llvm.StoreOp(value, base, alignment))


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
        (math.ExpOp(u), llvm.FExpOp(u)),
        (arith.DivfOp(u, v), llvm.FDivOp(u, v)),
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


def test_min_max_and_fma_are_what_the_constructors_build():
    b = block()
    x, y, u, v = b.args[:4]
    for source, pred in ((arith.MaxSIOp(x, y), 4), (arith.MinUIOp(x, y), 6)):
        cmp, select = BUILDERS[type(source)](source)
        same(cmp, llvm.ICmpOp(x, y, IntegerAttr(pred, 64)))
        same(select, llvm.SelectOp(cmp.results[0], x, y))
    # on vectors, the markers that `codegen.markers` expands
    vt = VectorType(i64, [8])
    lhs, rhs = Block(arg_types=[vt] * 2).args
    for source, pred in ((arith.MaxSIOp(lhs, rhs), "sgt"), (arith.MinUIOp(lhs, rhs), "ult")):
        cmp, select = BUILDERS[type(source)](source)
        flags = VectorType(i1, [8])
        same(cmp, llvm.CallIntrinsicOp(f"llvm.aotk.icmp.{pred}.v8i64", [lhs, rhs], [flags]))
        marker = "llvm.aotk.select.v8i64"
        same(select, llvm.CallIntrinsicOp(marker, [cmp.results[0], lhs, rhs], [vt]))
    (fma,) = BUILDERS[math.FmaOp](math.FmaOp(u, v, u))
    same(fma, llvm.FMAOp(u, v, u))


def test_branches_calls_and_returns_are_what_the_constructors_build():
    b = block()
    x, y, u, c = b.args[0], b.args[1], b.args[2], b.args[4]
    dest, other = Block(), Block()
    for args in ([], [x, u]):
        built, expected = make.br_op(dest, args), llvm.BrOp(dest, *args)
        same(built, expected)
        assert list(built.successors) == list(expected.successors) == [dest]
    for then_args, else_args in (([], []), ([x], [y, u]), ([u, x, y], [])):
        built = make.cond_br_op(c, dest, then_args, other, else_args)
        expected = llvm.CondBrOp(c, dest, then_args, other, else_args)
        same(built, expected)
        assert list(built.successors) == list(expected.successors) == [dest, other]
    for args, result in (([], None), ([x, u], f32), ([y], i64)):
        same(make.call_op("callee", args, result), llvm.CallOp("callee", *args, return_type=result))
    same(make.return_op(None), llvm.ReturnOp())
    same(make.return_op(u), llvm.ReturnOp(u))


def test_flat_memref_types_are_the_constructors_and_made_once():
    for elem, size in ((f32, DYNAMIC_INDEX), (i8, 12), (i64, DYNAMIC_INDEX)):
        made = make.flat_memref_type(elem, size)
        assert made == MemRefType(elem, [size])
        assert make.flat_memref_type(elem, size) is made
    assert make.flat_memref_type(f32) == MemRefType(f32, [DYNAMIC_INDEX])


def test_binary_rules_by_type_are_what_the_constructors_build():
    b = block()
    builder = Builder(InsertPoint.at_end(b))
    u, v, n = b.args[2], b.args[3], b.args[5]
    ui8 = IntegerType(8, Signedness.UNSIGNED)
    rule = scalar.by_type(arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp)
    add = scalar.by_type(scalar.reassociating_add, arith.AddiOp)
    pairs = [
        (rule(builder, [u, v], [f32, f32], f32), arith.MaximumfOp(u, v)),
        (rule(builder, [n, n], [i64, i64], i64), arith.MaxSIOp(n, n)),
        (rule(builder, [n, n], [ui8, ui8], ui8), arith.MaxUIOp(n, n)),
        (add(builder, [u, v], [f32, f32], f32), arith.AddfOp(u, v, flags=scalar.REASSOC)),
        (add(builder, [n, n], [i64, i64], i64), arith.AddiOp(n, n)),
    ]
    for value, expected in pairs:
        assert isinstance(value.owner, Operation)
        same(value.owner, expected)


def test_loops_ifs_and_yields_are_what_the_constructors_build():
    b = block()
    x, y, u, c = b.args[0], b.args[1], b.args[2], b.args[4]

    def body(*types: Attribute) -> Block:
        inner = Block(arg_types=[INDEX, *types])
        inner.add_op(scf.YieldOp(*inner.args[1:]))
        return inner

    pairs = [
        (make.for_op(x, y, x, [], body()), scf.ForOp(x, y, x, [], body())),
        (
            make.for_op(x, y, x, [u, x], body(f32, INDEX)),
            scf.ForOp(x, y, x, [u, x], body(f32, INDEX)),
        ),
        (make.yield_op([u, x]), scf.YieldOp(u, x)),
        (make.yield_op(), scf.YieldOp()),
        (make.if_op(c, body(), None), scf.IfOp(c, [], Region(body()))),
        (make.if_op(c, body(), body()), scf.IfOp(c, [], Region(body()), Region(body()))),
    ]
    for built, expected in pairs:
        same(built, expected)
        assert str(built) == str(expected)
        assert [len(r.blocks) for r in built.regions] == [len(r.blocks) for r in expected.regions]
