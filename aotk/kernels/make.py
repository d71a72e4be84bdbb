"""`make`: an xDSL op built by `Operation.create`, for ops lowering emits by the thousand.

An IRDL op's constructor matches every argument against the op's definition on each call
(`irdl_op_init`). That is two thirds of the cost of making an op, and lowering makes
tens of thousands. `Operation.create` takes the operands, result types, properties,
successors and regions as given, and fills in the definition's default properties as the
constructor does, so for an op without optional or variadic groups it builds the same op.
An op with several variadic groups (a conditional branch, a call) also needs the sizes
of its groups, which the builders below give as the constructor would. The tests compare
the two ways on every op built so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TypeVar

from xdsl.dialects import arith, func, llvm, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    SymbolRefAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.dialects.llvm import GEP_USE_SSA_VAL
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

OpT = TypeVar("OpT", bound=Operation)


def make(
    cls: type[OpT],
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    properties: Mapping[str, Attribute] = {},
    successors: Sequence[Block] = (),
    regions: Sequence[Region] = (),
) -> OpT:
    """The op `cls(...)` would build from these operands, result types, properties,
    successors and regions."""
    return cls.create(
        operands=operands,
        result_types=result_types,
        properties=properties,
        successors=successors,
        regions=regions,
    )


IntT = TypeVar("IntT", IntegerType, IndexType)


def integer(value: int, t: IntT) -> IntegerAttr[IntT]:
    """`IntegerAttr(value, t)`, made once: attributes are immutable, and each new one is
    verified."""
    return _integer(value, t)  # pyright: ignore[reportReturnType]


@cache
def _integer(value: int, t: IntegerType | IndexType) -> IntegerAttr:
    return IntegerAttr(value, t)


@cache
def flat_memref_type(elem: Attribute, size: int = DYNAMIC_INDEX) -> MemRefType[Attribute]:
    """`MemRefType(elem, [size])`, made once: a new one is verified, 50 us each, and
    lowering asked for one per buffer and view (5% of `convert-aotk-to-loops`)."""
    return MemRefType(elem, [size])


def constant_op(value: int, t: IntegerType | IndexType) -> arith.ConstantOp:
    """`arith.ConstantOp(IntegerAttr(value, t))`."""
    return make(arith.ConstantOp, [], [t], {"value": _integer(value, t)})


def gep_op(base: SSAValue, index: int | SSAValue, elem: Attribute, inbounds: bool) -> llvm.GEPOp:
    """`llvm.GEPOp.from_mixed_indices(base, [index], elem, inbounds=inbounds)`."""
    raw, dynamic = (GEP_USE_SSA_VAL, [index]) if isinstance(index, SSAValue) else (index, [])
    properties: dict[str, Attribute] = {
        "rawConstantIndices": _indices(raw),
        "elem_type": elem,
        "noWrapFlags": integer(0, i32),
    }
    if inbounds:
        properties["inbounds"] = UnitAttr()
    return make(llvm.GEPOp, [base, *dynamic], [_PTR], properties)


def load_op(address: SSAValue, t: Attribute, alignment: int | None = None) -> llvm.LoadOp:
    """`llvm.LoadOp(address, t, alignment)`."""
    return make(llvm.LoadOp, [address], [t], _memory_properties(alignment))


def func_call_op(
    callee: str, args: Sequence[SSAValue], result_types: Sequence[Attribute]
) -> func.CallOp:
    """`func.CallOp(callee, args, result_types)` (whose constructor took 60 us a call:
    a large model's entry makes thousands)."""
    return make(func.CallOp, args, result_types, {"callee": SymbolRefAttr(callee)})


def store_op(value: SSAValue, address: SSAValue, alignment: int | None = None) -> llvm.StoreOp:
    """`llvm.StoreOp(value, address, alignment)`."""
    return make(llvm.StoreOp, [value, address], [], _memory_properties(alignment))


def br_op(dest: Block, args: Sequence[SSAValue]) -> llvm.BrOp:
    """`llvm.BrOp(dest, *args)`."""
    return make(llvm.BrOp, args, [], {}, [dest])


def cond_br_op(
    cond: SSAValue,
    then_block: Block,
    then_args: Sequence[SSAValue],
    else_block: Block,
    else_args: Sequence[SSAValue],
) -> llvm.CondBrOp:
    """`llvm.CondBrOp(cond, then_block, then_args, else_block, else_args)`."""
    sizes = _segments((1, len(then_args), len(else_args)))
    operands = [cond, *then_args, *else_args]
    return make(llvm.CondBrOp, operands, [], {_SEGMENTS: sizes}, [then_block, else_block])


def call_op(callee: str, args: Sequence[SSAValue], result: Attribute | None) -> llvm.CallOp:
    """`llvm.CallOp(callee, *args, return_type=result)`."""
    properties = {"callee": SymbolRefAttr(callee), _SEGMENTS: _segments((len(args), 0))}
    return make(llvm.CallOp, args, [] if result is None else [result], properties)


def return_op(value: SSAValue | None) -> llvm.ReturnOp:
    """`llvm.ReturnOp(value)`."""
    return make(llvm.ReturnOp, [] if value is None else [value], [])


def for_op(
    lb: SSAValue, ub: SSAValue, step: SSAValue, inits: Sequence[SSAValue], body: Block
) -> scf.ForOp:
    """`scf.ForOp(lb, ub, step, inits, body)`."""
    return make(scf.ForOp, [lb, ub, step, *inits], [v.type for v in inits], regions=[Region(body)])


def yield_op(values: Sequence[SSAValue] = ()) -> scf.YieldOp:
    """`scf.YieldOp(*values)`."""
    return make(scf.YieldOp, values, [])


def if_op(cond: SSAValue, then: Block, otherwise: Block | None) -> scf.IfOp:
    """`scf.IfOp(cond, [], Region(then), otherwise and Region(otherwise))`: no results."""
    regions = [Region(then), Region() if otherwise is None else Region(otherwise)]
    return make(scf.IfOp, [cond], [], regions=regions)


_PTR = llvm.LLVMPointerType()
_SEGMENTS = "operandSegmentSizes"


@cache
def _segments(sizes: tuple[int, ...]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, sizes)


@cache
def _indices(raw: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, [raw])


@cache
def _memory_properties(alignment: int | None) -> dict[str, Attribute]:
    """Not atomic (`ordering` 0), and the alignment if one is given."""
    properties: dict[str, Attribute] = {"ordering": integer(0, i64)}
    if alignment is not None:
        properties["alignment"] = integer(alignment, i64)
    return properties
