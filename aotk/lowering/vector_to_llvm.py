"""Builders for the `vector` compute ops aotk kernels emit (broadcast, fma, reduction,
create_mask, shuffle).

Used by `convert-aotk-std-to-llvm`. vector.load/store and their masked forms are
lowered earlier by `aotk-memory-to-llvm`; their alignment is `NaturalAlignment`'s job in `to_llvm`.
"""

from __future__ import annotations

from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import (
    DenseArrayBase,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    VectorType,
    i32,
    i64,
)
from xdsl.dialects.utils.fast_math import FastMathFlag
from xdsl.ir import Operation

from aotk.dialect.base import located
from aotk.lowering.arith_to_llvm import muladd, type_suffix

# vector.reduction kinds aotk emits -> LLVM's horizontal reduction intrinsic
_REDUCTIONS = {
    vector.CombiningKindFlag.MAXNUMF: "llvm.vector.reduce.fmax",
    vector.CombiningKindFlag.MINNUMF: "llvm.vector.reduce.fmin",
}


def _where(op: Operation, message: str) -> str:
    return f"convert-aotk-std-to-llvm: {located(op, message)}"


def _broadcast(op: Operation) -> list[Operation]:
    """vector.broadcast of a scalar -> insertelement into lane 0, then a zero shuffle."""
    assert isinstance(op, vector.BroadcastOp)
    vt = op.vector.type
    if isinstance(op.source.type, VectorType):
        raise ValueError(_where(op, "only scalar vector.broadcast is supported"))
    undef = llvm.UndefOp(vt)
    lane0 = llvm.ConstantOp(IntegerAttr(0, i32), i32)
    ins = llvm.InsertElementOp(undef.res, op.source, lane0.result)
    mask = DenseArrayBase.from_list(i32, [0] * vt.get_shape()[0])
    return [undef, lane0, ins, llvm.ShuffleVectorOp(ins.res, undef.res, mask, vt)]


def _fma(op: Operation) -> list[Operation]:
    """vector.fma (the kernels' accumulations: `mk.vfma`) -> `muladd`, fused where the
    target has FMA."""
    assert isinstance(op, vector.FMAOp)
    return [muladd(op.lhs, op.rhs, op.acc)]


def _reduction(op: Operation) -> list[Operation]:
    """vector.reduction without an accumulator of a float kind: max and min (`_REDUCTIONS`)
    -> their llvm.vector.reduce intrinsic; add -> `_sum`."""
    assert isinstance(op, vector.ReductionOp)
    kind = op.kind.data
    if kind == vector.CombiningKindFlag.ADD and op.acc is None:
        return _sum(op)
    if kind not in _REDUCTIONS or op.acc is not None:
        raise ValueError(
            _where(
                op,
                f"vector.reduction supports {', '.join(['add', *_REDUCTIONS])} without an "
                f"accumulator, got {kind}{' with one' if op.acc else ''}",
            )
        )
    name = f"{_REDUCTIONS[kind]}.{type_suffix(op.vector.type)}"
    return [llvm.CallIntrinsicOp(name, [op.vector], [op.dest.type])]


def _sum(op: vector.ReductionOp) -> list[Operation]:
    """The sum of a float vector's lanes: with `reassoc`, halves added until one lane is
    left (log2(lanes) shuffle pairs and adds); LLVM's ordered llvm.vector.reduce.fadd from
    -0.0 does the rest (or, without `reassoc`, everything, lane after lane)."""
    vt = op.vector.type
    assert isinstance(vt, VectorType)
    elem, lanes = vt.element_type, vt.get_shape()[0]
    if not isinstance(elem, Float32Type | Float64Type):
        raise ValueError(_where(op, f"vector.reduction <add> supports f32 and f64, got {vt}"))
    ops: list[Operation] = []
    value = op.vector
    reassoc = FastMathFlag.REASSOC in getattr(op.fastmath, "data", ())
    while reassoc and lanes > 1 and lanes % 2 == 0:
        lanes //= 2
        half = VectorType(elem, [lanes])
        low, high = (
            llvm.ShuffleVectorOp(value, value, DenseArrayBase.from_list(i32, picks), half)
            for picks in (list(range(lanes)), list(range(lanes, 2 * lanes)))
        )
        add = llvm.FAddOp(low.res, high.res)
        ops += [low, high, add]
        value = add.res
    start = llvm.ConstantOp(FloatAttr(-0.0, elem), elem)
    name = f"llvm.vector.reduce.fadd.{type_suffix(value.type)}"
    return [*ops, start, llvm.CallIntrinsicOp(name, [start.result, value], [elem])]


def _create_mask(op: Operation) -> list[Operation]:
    """vector.create_mask %n of a 1-D mask -> llvm.get.active.lane.mask(0, n): lane i is
    on when i < n (x86 builds it with a compare, or a bzhi into a mask register)."""
    assert isinstance(op, vector.CreateMaskOp)
    mt = op.mask_vector.type
    assert isinstance(mt, VectorType)
    if len(op.mask_dim_sizes) != 1:
        raise ValueError(_where(op, f"only 1-D vector.create_mask is supported, got {mt}"))
    zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
    name = f"llvm.get.active.lane.mask.{type_suffix(mt)}.i64"
    return [zero, llvm.CallIntrinsicOp(name, [zero.result, op.mask_dim_sizes[0]], [mt])]


def _shuffle(op: Operation) -> list[Operation]:
    """vector.shuffle of two 1-D vectors -> llvm.shufflevector with the same mask."""
    assert isinstance(op, vector.ShuffleOp)
    vt = op.result.type
    assert isinstance(vt, VectorType)
    if vt.get_num_dims() != 1:
        raise ValueError(_where(op, f"only 1-D vector.shuffle is supported, got {vt}"))
    mask = DenseArrayBase.from_list(i32, list(op.mask.get_values()))
    return [llvm.ShuffleVectorOp(op.v1, op.v2, mask, vt)]


# op type -> the llvm ops replacing it (the last one's result replaces the op's)
VECTOR_BUILDERS = {
    vector.BroadcastOp: _broadcast,
    vector.FMAOp: _fma,
    vector.ReductionOp: _reduction,
    vector.CreateMaskOp: _create_mask,
    vector.ShuffleOp: _shuffle,
}
