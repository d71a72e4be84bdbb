"""`aotk-memory-to-llvm`: memrefs, `ptr_xdsl` pointers and their loads and stores -> llvm.

Every memref and `!ptr_xdsl.ptr` value becomes an `!llvm.ptr`. A load or store at an
element index becomes an inbounds GEP typed by the element (so LLVM sees the base pointer
and the stride, and vectorizes) and an `llvm.load`/`llvm.store`; a memref's address, a
`ptrtoint`; views (`ptr_xdsl.from_ptr`/`to_ptr`) vanish. Going through `ptr_xdsl` byte
offsets instead, as xDSL's memref-to-ptr, ptr-type-offsets and ptr-to-llvm do, built a
multiply, a cast pair and a GEP per access only for later passes to fold them: it cost a
fifth of a recurrent model's compile. Memrefs need static strides and offset (identity
layout: all but the first dimension static); aotk's own kernels use 1-D views.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, memref, ptr, vector
from xdsl.dialects.builtin import (
    FixedBitwidthType,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    VectorType,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from aotk.dialect.base import source_location
from aotk.ir_walk import ops_within
from aotk.kernels.kernel import INDEX
from aotk.kernels.make import constant_op, gep_op, load_op, make, store_op
from aotk.lowering.arith_to_llvm import type_suffix
from aotk.lowering.parallelize import erase_unused
from aotk.lowering.rewrite_once import retype_values

PASS = "aotk-memory-to-llvm"


def pointer_type(t: Attribute) -> Attribute | None:
    """`!llvm.ptr` for a memref or `ptr_xdsl` type, None for any other type."""
    return llvm.LLVMPointerType() if isinstance(t, MemRefType | ptr.PtrType) else None


@dataclass
class _Lowering:
    """One sweep's state: the i64 form of each index value, made once where it is defined,
    and the values the lowered ops no longer use (to erase once nothing does)."""

    as_i64: dict[SSAValue, SSAValue] = field(default_factory=dict[SSAValue, SSAValue])
    dropped: list[SSAValue] = field(default_factory=list[SSAValue])

    def index(self, value: SSAValue) -> int | SSAValue:
        """A GEP index: a constant's value, else `value` cast to i64 once for all uses."""
        owner = value.owner
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            self.dropped.append(value)
            return owner.value.value.data
        if not isinstance(value.type, IndexType):
            return value
        if (cast := self.as_i64.get(value)) is None:
            op = make(arith.IndexCastOp, [value], [i64])
            if isinstance(value, BlockArgument):
                assert isinstance(value.owner, Block)
                Rewriter.insert_op(op, InsertPoint.at_start(value.owner))
            else:
                assert isinstance(owner, Operation)
                Rewriter.insert_op(op, InsertPoint.after(owner))
            cast = self.as_i64[value] = op.result
        return cast

    def element(self, op: Operation, base: SSAValue, indices: tuple[SSAValue, ...]) -> SSAValue:
        """The address of element `indices` of memref `base`, built before `op`."""
        t = base.type
        assert isinstance(t, MemRefType)
        strides, offset = _static_layout(op, t)
        linear = _linearize(op, indices, strides, offset)
        if linear is None:
            return base
        return _gep(op, base, self.index(linear), t.element_type)

    def bytes(self, op: ptr.PtrAddOp) -> SSAValue:
        return _gep(op, op.addr, self.index(op.offset), i8)


def _error(op: Operation, message: str) -> ValueError:
    """`message` about `op`, located at its place in the input when it was parsed."""
    where = source_location(op)
    return ValueError(f"{PASS}: {where + ': ' if where else ''}{op.name}: {message}")


def _static_layout(op: Operation, t: MemRefType) -> tuple[tuple[int, ...], int]:
    strides, offset = t.get_strides(), t.get_offset()
    if strides is None or any(s is None for s in strides) or offset is None:
        raise _error(
            op,
            f"expected a memref with static strides and offset (identity layout: every "
            f"dimension but the first static), got {t}",
        )
    return tuple(s for s in strides if s is not None), offset


def _linearize(
    op: Operation, indices: tuple[SSAValue, ...], strides: tuple[int, ...], offset: int
) -> SSAValue | None:
    """sum(index * stride) + offset as index arithmetic before `op` (None: it is 0)."""
    terms: list[SSAValue] = []

    def emit(new: Operation) -> SSAValue:
        Rewriter.insert_op(new, InsertPoint.before(op))
        return new.results[0]

    def constant(n: int) -> SSAValue:
        return emit(constant_op(n, INDEX))

    for index, stride in zip(indices, strides, strict=True):
        terms.append(
            index if stride == 1 else emit(make(arith.MuliOp, [index, constant(stride)], [INDEX]))
        )
    if offset:
        terms.append(constant(offset))
    if not terms:
        return None
    total = terms[0]
    for term in terms[1:]:
        total = emit(make(arith.AddiOp, [total, term], [INDEX]))
    return total


def _gep(op: Operation, base: SSAValue, index: int | SSAValue, elem: Attribute) -> SSAValue:
    """An inbounds GEP of `index` elements of type `elem` from `base`, built before `op`."""
    gep = gep_op(base, index, elem, inbounds=True)
    Rewriter.insert_op(gep, InsertPoint.before(op))
    return gep.result


def _load(low: _Lowering, op: Operation) -> SSAValue:
    assert isinstance(op, memref.LoadOp | vector.LoadOp)
    base = op.memref if isinstance(op, memref.LoadOp) else op.base
    address = low.element(op, base, tuple(op.indices))
    load = load_op(address, op.results[0].type)
    Rewriter.insert_op(load, InsertPoint.before(op))
    return load.dereferenced_value


def _store(low: _Lowering, op: Operation) -> None:
    assert isinstance(op, memref.StoreOp | vector.StoreOp)
    base, value = (op.memref, op.value) if isinstance(op, memref.StoreOp) else (op.base, op.vector)
    address = low.element(op, base, tuple(op.indices))
    Rewriter.insert_op(store_op(value, address), InsertPoint.before(op))


def _address(low: _Lowering, op: Operation) -> SSAValue:
    """memref.extract_aligned_pointer_as_index -> ptrtoint (the memref is its pointer)."""
    assert isinstance(op, memref.ExtractAlignedPointerAsIndexOp)
    as_int = llvm.PtrToIntOp(op.source, i64)
    index = arith.IndexCastOp(as_int.output, IndexType())
    Rewriter.insert_op([as_int, index], InsertPoint.before(op))
    return index.result


def _masked_access(low: _Lowering, op: Operation) -> SSAValue | None:
    """vector.maskedload/maskedstore -> llvm.masked.load/store at the element's address,
    aligned to the element: lanes outside the mask are neither read nor written."""
    assert isinstance(op, vector.MaskedLoadOp | vector.MaskedStoreOp)
    address = low.element(op, op.base, tuple(op.indices))
    vt = op.result.type if isinstance(op, vector.MaskedLoadOp) else op.value_to_store.type
    assert isinstance(vt, VectorType)
    width = vt.element_type
    assert isinstance(width, FixedBitwidthType)
    align = llvm.ConstantOp(IntegerAttr(width.size, i32), i32)
    Rewriter.insert_op(align, InsertPoint.before(op))
    name = f"{type_suffix(vt)}.p0"
    if isinstance(op, vector.MaskedLoadOp):
        args = [address, align.result, op.mask, op.pass_thru]
        access = llvm.CallIntrinsicOp(f"llvm.masked.load.{name}", args, [vt])
    else:
        args = [op.value_to_store, address, align.result, op.mask]
        access = llvm.CallIntrinsicOp(f"llvm.masked.store.{name}", args, [])
    Rewriter.insert_op(access, InsertPoint.before(op))
    return access.results[0] if access.results else None


def _ptr_load(low: _Lowering, op: Operation) -> SSAValue:
    assert isinstance(op, ptr.LoadOp)
    load = load_op(op.addr, op.res.type)
    Rewriter.insert_op(load, InsertPoint.before(op))
    return load.dereferenced_value


def _ptr_store(low: _Lowering, op: Operation) -> None:
    assert isinstance(op, ptr.StoreOp)
    Rewriter.insert_op(store_op(op.value, op.addr), InsertPoint.before(op))


def _type_offset(low: _Lowering, op: Operation) -> SSAValue:
    assert isinstance(op, ptr.TypeOffsetOp)
    elem = op.elem_type
    if not isinstance(elem, FixedBitwidthType):
        raise _error(op, f"expected a type of fixed size, got {elem}")
    size = arith.ConstantOp(IntegerAttr(elem.size, op.offset.type))
    Rewriter.insert_op(size, InsertPoint.before(op))
    return size.result


def _ptradd(low: _Lowering, op: Operation) -> SSAValue | None:
    assert isinstance(op, ptr.PtrAddOp)
    if op.result.first_use is None:  # a view nothing loads from
        low.dropped.append(op.offset)
        return None
    return low.bytes(op)


# op type -> what replaces its result (None: nothing, the op has none or it is unused)
_LOWER: dict[type[Operation], Callable[[_Lowering, Operation], SSAValue | None]] = {
    memref.LoadOp: _load,
    memref.StoreOp: _store,
    memref.ExtractAlignedPointerAsIndexOp: _address,
    vector.LoadOp: _load,
    vector.StoreOp: _store,
    vector.MaskedLoadOp: _masked_access,
    vector.MaskedStoreOp: _masked_access,
    ptr.LoadOp: _ptr_load,
    ptr.StoreOp: _ptr_store,
    ptr.PtrAddOp: _ptradd,
    ptr.TypeOffsetOp: _type_offset,
}


def lower_memory(module: ModuleOp) -> None:
    """Rewrite every memory op in `module` (one sweep), then retype pointers."""
    low = _Lowering()
    views: list[ptr.FromPtrOp | ptr.ToPtrOp] = []
    for op in ops_within(module):
        lower = _LOWER.get(type(op))
        if isinstance(op, ptr.FromPtrOp | ptr.ToPtrOp):
            views.append(op)  # kept until the accesses through it read its memref type
        elif lower is None:
            if op.dialect_name() in ("memref", "ptr_xdsl"):
                raise _error(
                    op,
                    "not supported; aotk lowers loads and stores on memrefs with a "
                    "static layout, and ptr_xdsl views, offsets, loads and stores",
                )
        else:
            result = lower(low, op)
            Rewriter.replace_op(op, [], [result] if op.results else [])
    for view in views:  # the same address under another type, which is now one type
        Rewriter.replace_op(view, [], [view.source])
    erase_unused(low.dropped)
    retype_values(module, pointer_type)
    _retype_signatures(module)


def _retype_signatures(module: ModuleOp) -> None:
    for op in module.ops:  # functions are top-level: no need to walk their bodies
        if isinstance(op, func.FuncOp):
            old = op.function_type
            inputs = [pointer_type(t) or t for t in old.inputs]
            outputs = [pointer_type(t) or t for t in old.outputs]
            if inputs != list(old.inputs) or outputs != list(old.outputs):
                op.function_type = FunctionType.from_lists(inputs, outputs)


@dataclass(frozen=True)
class AotkMemoryToLLVMPass(ModulePass):
    """Lower memrefs, ptr_xdsl and vector loads/stores to llvm pointers, GEPs and accesses."""

    name = PASS

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_memory(op)
