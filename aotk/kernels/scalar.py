"""Scalar bodies of elementwise ops, built from arith and math ops.

An elementwise lowering rule has the signature
`rule(b, args, arg_elems, out_elem, **attrs) -> SSAValue`: `args` are scalars already in
their compute type (see `compute_type`), `arg_elems` and `out_elem` the tensors' element
types, so a rule can tell signed from unsigned integers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import copysign, inf
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, math
from xdsl.dialects.arith import CMPF_COMPARISON_OPERATIONS, CMPI_COMPARISON_OPERATIONS
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerType,
    VectorType,
    f32,
    i1,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Attribute, Operation, SSAValue

from aotk import dtypes
from aotk.kernels.make import integer, make

ScalarRule = Callable[..., SSAValue]


def compute_type(elem: Attribute) -> Attribute:
    """The type a kernel computes in: float16 widens to float32, ui8 becomes signless i8."""
    if isinstance(elem, Float16Type):
        return f32
    if isinstance(elem, IntegerType):
        return IntegerType(elem.width.data)
    return elem


def rounded(b: Builder, value: SSAValue, elem: Attribute) -> SSAValue:
    """`value`, an op's result computed in its compute type, rounded to `elem` where that
    is narrower (float16): each op of a fused chain then rounds as NumPy's float16 ops
    do, and the chain gives the oracle's results, not more precise ones (float16's
    1 - clip(x, 1e-7, 1 - 1e-7) is 0 at x = 1, where float32 intermediates gave 1e-7 and
    a binary cross-entropy then 16 where NumPy gives inf). LLVM drops the round trip
    where the value is stored right after."""
    if not isinstance(elem, Float16Type):
        return value
    wide = value.type
    narrow = VectorType(elem, wide.get_shape()) if isinstance(wide, VectorType) else elem
    half = insert(b, arith.TruncFOp(value, narrow))
    return insert(b, arith.ExtFOp(half, wide))


def muladd(b: Builder, x: SSAValue, y: SSAValue, acc: SSAValue) -> SSAValue:
    """x * y + acc for a sum or a polynomial: fused where the target has FMA, else a
    multiply and an add (math.fma flagged `contract`, see `arith_to_llvm.muladd`)."""
    contract = arith.FastMathFlagsAttr([FastMathFlag.ALLOW_CONTRACT])
    return insert(b, math.FmaOp(x, y, acc, fastmath=contract))


def storage_type(elem: Attribute) -> Attribute:
    """The type a buffer holds: bool is one byte, as in NumPy."""
    if dtypes.is_bool(elem):
        return IntegerType(8)
    if isinstance(elem, IntegerType):
        return IntegerType(elem.width.data)
    return elem


def const(b: Builder, value: float | int | bool, typ: Attribute) -> SSAValue:
    """Insert an arith.constant of a compute type."""
    if isinstance(typ, Float16Type | Float32Type | Float64Type):
        try:
            attr: Attribute = FloatAttr(float(value), typ)
        except OverflowError:  # rounds beyond the type's range: infinite, as NumPy casts
            attr = FloatAttr(copysign(inf, value), typ)
    else:
        assert isinstance(typ, IntegerType)
        if typ.width.data == 1:
            ivalue = -1 if value else 0  # NumPy's truth (0.5 and NaN are true); -1 is i1 true
        else:
            ivalue = int(value)
        attr = integer(ivalue, typ)
    return insert(b, make(arith.ConstantOp, [], [typ], {"value": attr}))


def insert(b: Builder, op: Operation) -> SSAValue:
    b.insert(op)
    return op.results[0]


# Lets LLVM reorder a float sum: a reduction loop then vectorizes into per-lane partial
# sums (as accurate as the serial order, and deterministic for a given CPU).
REASSOC = arith.FastMathFlagsAttr([FastMathFlag.REASSOC])


def reassociating_add(lhs: SSAValue, rhs: SSAValue) -> Operation:
    """A float add that LLVM may reassociate (for reduction accumulators)."""
    return make(arith.AddfOp, [lhs, rhs], [lhs.type], {"fastmath": REASSOC})


def _binary(op: Callable[..., Operation] | None) -> Callable[..., Operation] | None:
    """`op` as a function of two operands; an op class is built by `make`, with the
    operands' type (the constructor's rule for arith's binary ops)."""
    if not isinstance(op, type):
        return op
    cls = op
    return lambda lhs, rhs: make(cls, [lhs, rhs], [lhs.type])


def by_type(
    float_op: Callable[..., Operation] | None,
    sint_op: Callable[..., Operation] | None = None,
    uint_op: Callable[..., Operation] | None = None,
) -> ScalarRule:
    """A rule that applies one binary arith op chosen by the operands' element type."""
    float_op, sint_op, uint_op = _binary(float_op), _binary(sint_op), _binary(uint_op)

    def rule(
        b: Builder,
        args: Sequence[SSAValue],
        arg_elems: Sequence[Attribute],
        out_elem: Attribute,
        **_: Any,
    ) -> SSAValue:
        elem = arg_elems[0]
        # bool compares as unsigned: true is 1, not -1
        unsigned = dtypes.is_unsigned(elem) or dtypes.is_bool(elem)
        op_cls = float_op if dtypes.is_float(elem) else uint_op if unsigned else sint_op
        if op_cls is None and unsigned:
            op_cls = sint_op
        if op_cls is None:
            raise TypeError(f"no lowering for dtype {dtypes.name_of(elem)}")
        return insert(b, op_cls(*args))

    return rule


_FLOAT_PRED = {"eq": "oeq", "ne": "une", "gt": "ogt", "ge": "oge", "lt": "olt", "le": "ole"}
_SINT_PRED = {"eq": "eq", "ne": "ne", "gt": "sgt", "ge": "sge", "lt": "slt", "le": "sle"}
_UINT_PRED = {"eq": "eq", "ne": "ne", "gt": "ugt", "ge": "uge", "lt": "ult", "le": "ule"}


def compare(b: Builder, pred: str, lhs: SSAValue, rhs: SSAValue, elem: Attribute) -> SSAValue:
    """Insert a comparison that yields i1."""
    if dtypes.is_float(elem):
        cls, predicate = arith.CmpfOp, CMPF_COMPARISON_OPERATIONS.index(_FLOAT_PRED[pred])
    else:
        table = _UINT_PRED if dtypes.is_unsigned(elem) or dtypes.is_bool(elem) else _SINT_PRED
        cls, predicate = arith.CmpiOp, CMPI_COMPARISON_OPERATIONS.index(table[pred])
    properties = {"predicate": integer(predicate, i64)}
    return insert(b, make(cls, [lhs, rhs], [i1], properties))


def compare_rule(pred: str) -> ScalarRule:
    def rule(
        b: Builder,
        args: Sequence[SSAValue],
        arg_elems: Sequence[Attribute],
        out_elem: Attribute,
        **_: Any,
    ) -> SSAValue:
        return compare(b, pred, args[0], args[1], arg_elems[0])

    return rule


def select(b: Builder, cond: SSAValue, a: SSAValue, c: SSAValue) -> SSAValue:
    return insert(b, make(arith.SelectOp, [cond, a, c], [a.type]))


def convert(b: Builder, value: SSAValue, src: Attribute, dst: Attribute) -> SSAValue:
    """Convert a compute-type scalar of element type `src` to the compute type of `dst`."""
    src_c, dst_c = compute_type(src), compute_type(dst)
    if dtypes.is_bool(dst) and not dtypes.is_bool(src):
        return compare(b, "ne", value, const(b, 0, src_c), src)
    if src_c == dst_c:
        return value
    if dtypes.is_float(src) and dtypes.is_float(dst):
        wider = _float_width(dst_c) > _float_width(src_c)
        return insert(b, arith.ExtFOp(value, dst_c) if wider else arith.TruncFOp(value, dst_c))
    if dtypes.is_float(src):
        op = arith.FPToUIOp if dtypes.is_unsigned(dst) else arith.FPToSIOp
        return insert(b, op(value, dst_c))  # pyright: ignore[reportArgumentType]
    unsigned_src = dtypes.is_unsigned(src) or dtypes.is_bool(src)
    if dtypes.is_float(dst):
        op = arith.UIToFPOp if unsigned_src else arith.SIToFPOp
        return insert(b, op(value, dst_c))  # pyright: ignore[reportArgumentType]
    assert isinstance(src_c, IntegerType) and isinstance(dst_c, IntegerType)
    if dst_c.width.data < src_c.width.data:
        return insert(b, arith.TruncIOp(value, dst_c))  # pyright: ignore[reportArgumentType]
    ext = arith.ExtUIOp if unsigned_src else arith.ExtSIOp
    return insert(b, ext(value, dst_c))


def _float_width(t: Attribute) -> int:
    return {Float16Type: 16, Float32Type: 32, Float64Type: 64}[type(t)]


def math_rule(op_cls: type[Operation]) -> ScalarRule:
    """A float-only rule that applies one math op."""

    def rule(
        b: Builder,
        args: Sequence[SSAValue],
        arg_elems: Sequence[Attribute],
        out_elem: Attribute,
        **_: Any,
    ) -> SSAValue:
        return insert(b, op_cls(*args))

    return rule


__all__ = ["arith", "math"]
