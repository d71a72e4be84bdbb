"""Builders turning the `arith` and `math` ops aotk emits into `llvm` ops.

Used by `convert-aotk-std-to-llvm`. Types are converted afterwards (index -> i64), so a
builder keeps its operands' types. LLVM has no scalar-only semantics to worry about:
every op here also works lane-wise once LLVM vectorizes the loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache

from xdsl.dialects import arith, llvm, math
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    VectorType,
    f32,
    f64,
    i1,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue

from aotk.codegen import markers
from aotk.kernels import heuristics
from aotk.kernels.make import integer, make

Build = Callable[[Operation], list[Operation]]


def _width(t: Attribute) -> int:
    if isinstance(t, IndexType):
        return 64
    if isinstance(t, IntegerType):
        return t.width.data
    return {Float16Type: 16, Float32Type: 32, Float64Type: 64}[type(t)]


def type_suffix(t: Attribute) -> str:
    """An overloaded intrinsic's type suffix: f32, i64, v8f32 ..."""
    if isinstance(t, VectorType):
        return f"v{t.get_shape()[0]}{type_suffix(t.element_type)}"
    return (
        f"f{_width(t)}"
        if isinstance(t, Float16Type | Float32Type | Float64Type)
        else f"i{_width(t)}"
    )


def _int(t: Attribute) -> Attribute:
    return i64 if isinstance(t, IndexType) else t


def _intrinsic(name: str) -> Build:
    """`llvm.call_intrinsic` of `name.<type suffix>` on the op's operands."""

    def build(op: Operation) -> list[Operation]:
        t = op.results[0].type
        return [llvm.CallIntrinsicOp(f"{name}.{type_suffix(t)}", list(op.operands), [t])]

    return build


def _fp_to_int(signed: bool) -> Build:
    # LLVM's saturating conversions: defined for NaN (0) and out-of-range values (clamped)
    def build(op: Operation) -> list[Operation]:
        src, dst = op.operands[0].type, op.results[0].type
        name = f"llvm.fpto{'s' if signed else 'u'}i.sat.{type_suffix(dst)}.{type_suffix(src)}"
        return [llvm.CallIntrinsicOp(name, [op.operands[0]], [dst])]

    return build


def _uitofp(op: Operation) -> list[Operation]:
    # aotk's unsigned types are ui8 and bool: zero-extended they fit a signed i64 exactly
    ext = llvm.ZExtOp(op.operands[0], i64)
    return [ext, llvm.SIToFPOp(ext.res, op.results[0].type)]


def _minmax_int(pred: str) -> Build:
    def build(op: Operation) -> list[Operation]:
        lhs, rhs = op.operands
        cmp = _compare(llvm.ICmpOp, pred, (lhs, rhs))
        return [cmp, _select(cmp.results[0], lhs, rhs)]

    return build


def _compare(cls: type[Operation], pred: str, operands: tuple[SSAValue, SSAValue]) -> Operation:
    """`cls` (llvm.fcmp or llvm.icmp) of `pred` on scalars; on vectors, the marker that
    `codegen.markers` expands (the dialect verifies both ops on scalars only)."""
    t = operands[0].type
    if isinstance(t, VectorType):
        kind = "fcmp" if cls is llvm.FCmpOp else "icmp"
        flags = VectorType(i1, t.get_shape())
        return llvm.CallIntrinsicOp(
            markers.name(f"{kind}.{pred}", type_suffix(t)), operands, [flags]
        )
    index = _predicates(cls).index(pred)  # arith and llvm number them in the same order
    return make(cls, list(operands), [i1], {"predicate": integer(index, i64)})


def _predicates(cls: type[Operation]) -> list[str]:
    if cls is llvm.FCmpOp:
        return arith.CMPF_COMPARISON_OPERATIONS
    return arith.CMPI_COMPARISON_OPERATIONS


def _select(cond: SSAValue, a: SSAValue, b: SSAValue) -> Operation:
    """llvm.select, or on a vector condition its marker (see `_compare`)."""
    if isinstance(cond.type, VectorType):
        return llvm.CallIntrinsicOp(
            markers.name("select", type_suffix(a.type)), [cond, a, b], [a.type]
        )
    return make(llvm.SelectOp, [cond, a, b], [a.type])


def _index_cast(op: Operation) -> list[Operation]:
    src, dst = _width(op.operands[0].type), _width(op.results[0].type)
    if src == dst:
        return []
    if src > dst:
        return [llvm.TruncOp(op.operands[0], _int(op.results[0].type))]
    return [llvm.SExtOp(op.operands[0], _int(op.results[0].type))]


def _constant(op: Operation) -> list[Operation]:
    assert isinstance(op, arith.ConstantOp)
    value = op.value
    t = op.result.type
    if isinstance(value, IntegerAttr):
        assert isinstance(t, IntegerType | IndexType)
        value = integer(value.value.data, i64 if isinstance(t, IndexType) else t)
    elif not isinstance(value, FloatAttr | DenseIntOrFPElementsAttr):  # dense: vectors
        raise ValueError(f"convert-aotk-std-to-llvm: unsupported constant {value}")
    return [make(llvm.ConstantOp, [], [_int(t)], {"value": value})]


# What llvm's constructors set: no wrap flags (nsw/nuw), which LLVM could exploit
_NO_WRAP = {"overflowFlags": IntegerAttr(0, 32)}


def _binary(cls: type[Operation], properties: Mapping[str, Attribute] = {}) -> Build:
    return lambda op: [make(cls, op.operands, [op.operands[0].type], properties)]


@cache
def _fast_math(names: tuple[str, ...]) -> llvm.FastMathAttr:
    return llvm.FastMathAttr(list(names) or None)  # pyright: ignore[reportArgumentType]


def _float_binary(cls: type[llvm.AbstractFloatArithOp]) -> Build:
    """A float op keeps its fast-math flags (reductions allow `reassoc` to vectorize)."""

    def build(op: Operation) -> list[Operation]:
        flags = op.properties.get("fastmath")
        names = tuple(sorted(getattr(flags, "data", ())))
        props = {"fastmathFlags": _fast_math(names)}
        return [make(cls, op.operands, [op.operands[0].type], props)]

    return build


def _unary(cls: type[Operation]) -> Build:
    return lambda op: [make(cls, op.operands, [op.operands[0].type])]


def _cast(cls: type[Operation], properties: Mapping[str, Attribute] = {}) -> Build:
    return lambda op: [make(cls, op.operands, [_int(op.results[0].type)], properties)]


def _cmp(cls: type[Operation]) -> Build:
    names = _predicates(cls)

    def build(op: Operation) -> list[Operation]:
        predicate = op.properties["predicate"]
        assert isinstance(predicate, IntegerAttr)
        lhs, rhs = op.operands
        return [_compare(cls, names[predicate.value.data], (lhs, rhs))]

    return build


BUILDERS: dict[type[Operation], Build] = {
    arith.ConstantOp: _constant,
    arith.AddfOp: _float_binary(llvm.FAddOp),
    arith.SubfOp: _float_binary(llvm.FSubOp),
    arith.MulfOp: _float_binary(llvm.FMulOp),
    arith.DivfOp: _float_binary(llvm.FDivOp),
    arith.NegfOp: _unary(llvm.FNegOp),
    arith.AddiOp: _binary(llvm.AddOp, _NO_WRAP),
    arith.SubiOp: _binary(llvm.SubOp, _NO_WRAP),
    arith.MuliOp: _binary(llvm.MulOp, _NO_WRAP),
    arith.DivSIOp: _binary(llvm.SDivOp),
    arith.DivUIOp: _binary(llvm.UDivOp),
    arith.RemSIOp: _binary(llvm.SRemOp),
    arith.RemUIOp: _binary(llvm.URemOp),
    arith.AndIOp: _binary(llvm.AndOp),
    arith.OrIOp: _binary(llvm.OrOp),
    arith.XOrIOp: _binary(llvm.XOrOp),
    arith.ShLIOp: _binary(llvm.ShlOp, _NO_WRAP),
    arith.ShRSIOp: _binary(llvm.AShrOp),
    arith.ShRUIOp: _binary(llvm.LShrOp),
    arith.CmpiOp: _cmp(llvm.ICmpOp),
    arith.CmpfOp: _cmp(llvm.FCmpOp),
    arith.SelectOp: lambda op: [_select(*op.operands)],
    arith.ExtFOp: _cast(llvm.FPExtOp),
    arith.TruncFOp: _cast(llvm.FPTruncOp),
    arith.ExtSIOp: _cast(llvm.SExtOp),
    arith.ExtUIOp: _cast(llvm.ZExtOp),
    arith.TruncIOp: _cast(llvm.TruncOp, {"overflowFlags": llvm.OverflowAttr(())}),
    arith.SIToFPOp: _cast(llvm.SIToFPOp),
    arith.UIToFPOp: _uitofp,
    arith.FPToSIOp: _fp_to_int(signed=True),
    arith.FPToUIOp: _fp_to_int(signed=False),
    arith.BitcastOp: _cast(llvm.BitcastOp),
    arith.IndexCastOp: _index_cast,
    arith.MaximumfOp: _intrinsic("llvm.maximum"),
    arith.MinimumfOp: _intrinsic("llvm.minimum"),
    arith.MaxSIOp: _minmax_int("sgt"),
    arith.MinSIOp: _minmax_int("slt"),
    arith.MaxUIOp: _minmax_int("ugt"),
    arith.MinUIOp: _minmax_int("ult"),
    # Not llvm.FSqrtOp and friends: xDSL 0.74's convert_module declares those without a
    # type suffix, so a module using one on both f32 and f64 failed to convert.
    math.SqrtOp: _intrinsic("llvm.sqrt"),
    math.AbsFOp: _intrinsic("llvm.fabs"),
    math.ExpOp: _unary(llvm.FExpOp),  # same clash, but vecmath.exp is used instead
    math.LogOp: _intrinsic("llvm.log"),
    math.SinOp: _intrinsic("llvm.sin"),
    math.CosOp: _intrinsic("llvm.cos"),
    math.FloorOp: _intrinsic("llvm.floor"),
    math.CeilOp: _intrinsic("llvm.ceil"),
    math.PowFOp: _intrinsic("llvm.pow"),
    math.CopySignOp: _intrinsic("llvm.copysign"),
    math.TanhOp: _intrinsic("llvm.tanh"),
    math.RoundEvenOp: _intrinsic("llvm.roundeven"),
    math.RoundOp: _intrinsic("llvm.round"),
    math.TruncOp: _intrinsic("llvm.trunc"),
    math.FmaOp: lambda op: _fma(op),
}


def muladd(a: SSAValue, b: SSAValue, c: SSAValue) -> Operation:
    """a * b + c, fused where the target has FMA, else a multiply and an add
    (`llvm.fmuladd`): for sums and polynomials, which need no single rounding. The exact
    `llvm.fma` is a libm call per element on a CPU without FMA (x86-64-v2): 87x slower
    on a 1024^3 matmul."""
    t = a.type
    return llvm.CallIntrinsicOp(f"llvm.fmuladd.{type_suffix(t)}", [a, b, c], [t])


def _fma(op: Operation) -> list[Operation]:
    """math.fma, exact, or with the `contract` flag `muladd` (`scalar.muladd` emits it)."""
    assert isinstance(op, math.FmaOp)
    if op.fastmath is not None and FastMathFlag.ALLOW_CONTRACT in op.fastmath.data:
        return [muladd(op.a, op.b, op.c)]
    t = op.a.type
    if heuristics.has_fma() or _elem(t) != f32:
        return [make(llvm.FMAOp, op.operands, [t])]
    return _fma_through_f64(op.a, op.b, op.c)


def _fma_through_f64(a: SSAValue, b: SSAValue, c: SSAValue) -> list[Operation]:
    """An f32 fma without FMA hardware, in f64: the product of two f32 is exact there and
    the sum rounds twice, so a result that f32 holds (the exact steps of `vecmath`'s
    reductions) comes out exact, any other within 0.5 ulp and a hair. LLVM's own
    expansion is a call of libm's fmaf per element: tanh(x) * sigmoid(x) ran 24x slower
    on x86-64-v2 than with FMA."""
    t = a.type
    wide = VectorType(f64, t.get_shape()) if isinstance(t, VectorType) else f64
    ext = [llvm.FPExtOp(v, wide) for v in (a, b, c)]
    product = llvm.FMulOp(ext[0].results[0], ext[1].results[0])
    total = llvm.FAddOp(product.res, ext[2].results[0])
    return [*ext, product, total, llvm.FPTruncOp(total.res, t)]


def _elem(t: Attribute) -> Attribute:
    return t.element_type if isinstance(t, VectorType) else t
