"""Builders for the `vector` compute ops aotk kernels emit (broadcast, fma, reduction,
create_mask, shuffle).

Used by `convert-aotk-std-to-llvm`. vector.load/store and their masked forms are
lowered earlier by `aotk-memory-to-llvm`; their alignment is `NaturalAlignment`'s job in `to_llvm`.
"""

from __future__ import annotations

from xdsl.dialects import llvm, vector
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, VectorType, i32, i64
from xdsl.ir import Operation

from aotk.dialect.base import located
from aotk.lowering.arith_to_llvm import type_suffix

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
    """vector.fma -> llvm.intr.fma on the vector type."""
    assert isinstance(op, vector.FMAOp)
    return [llvm.FMAOp(op.lhs, op.rhs, op.acc)]


def _reduction(op: Operation) -> list[Operation]:
    """vector.reduction of a float kind (`_REDUCTIONS`) without an accumulator -> its
    llvm.vector.reduce intrinsic."""
    assert isinstance(op, vector.ReductionOp)
    kind = op.kind.data
    if kind not in _REDUCTIONS or op.acc is not None:
        raise ValueError(
            _where(
                op,
                f"vector.reduction supports {', '.join(_REDUCTIONS)} without an accumulator, "
                f"got {kind}{' with one' if op.acc else ''}",
            )
        )
    name = f"{_REDUCTIONS[kind]}.{type_suffix(op.vector.type)}"
    return [llvm.CallIntrinsicOp(name, [op.vector], [op.dest.type])]


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
