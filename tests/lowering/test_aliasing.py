"""`aliasing.EntryAliasing`: which pointers an outlined function may take as `noalias`.

Each argument of an entry is a class, and so is each allocation in its workspace (a
`ptradd` of the workspace pointer): the buffers live at once never overlap. Views share
the class of what they are computed from.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import arith, func, ptr
from xdsl.dialects.builtin import IndexType, MemRefType, UnitAttr, f32
from xdsl.ir import Block, Region, SSAValue

from aotk import backend as K
from aotk import interp
from aotk.dialect import metadata, trace
from aotk.lowering.aliasing import EntryAliasing

MEM = MemRefType(f32, [8])


class _Entry:
    """An entry's block: %x (memref), %ws (the workspace), two allocations %a and %b in
    it, and %half, a view of %b from its fifth element."""

    def __init__(self) -> None:
        self.block = Block(arg_types=[MEM, ptr.PtrType(), IndexType()])
        self.x, self.ws, _ = self.block.args
        self.a = self._memref(self._add(self.ws, 0, allocation=True))
        self.b = self._memref(b_ptr := self._add(self.ws, 32, allocation=True))
        self.half = self._memref(self._add(b_ptr, 16))

    def _add(self, base: SSAValue, offset: int, allocation: bool = False) -> SSAValue:
        c = arith.ConstantOp.from_int_and_width(offset, IndexType())
        moved = ptr.PtrAddOp(base, c.result)
        if allocation:
            moved.attributes[metadata.ALLOCATION] = UnitAttr()
        self.block.add_ops([c, moved])
        return moved.result

    def _memref(self, pointer: SSAValue) -> SSAValue:
        view = ptr.FromPtrOp(pointer, MEM)
        self.block.add_op(view)
        return view.res

    def function(self) -> func.FuncOp:
        self.block.add_op(func.ReturnOp())
        fn = func.FuncOp("entry", ([MEM, ptr.PtrType(), IndexType()], []), Region(self.block))
        metadata.set_ints(fn, metadata.KERNEL, (1, 0))  # then the workspace
        return fn


def test_each_allocation_in_the_workspace_is_a_class_of_its_own() -> None:
    e = _Entry()
    aliasing = EntryAliasing.of_arguments(e.block.args, (), e.ws)
    assert aliasing.classes([e.a, e.b, e.x]) == [0, 1, 2]
    assert aliasing.may_alias([e.a, e.b, e.x]) == []


def test_views_of_one_allocation_are_its_class() -> None:
    e = _Entry()
    aliasing = EntryAliasing.of_arguments(e.block.args, (), e.ws)
    assert aliasing.classes([e.a, e.b, e.half]) == [0, 1, 1]
    assert aliasing.may_alias([e.a, e.b, e.half]) == [1, 2]


def test_without_its_workspace_every_slice_is_the_workspace_class() -> None:
    e = _Entry()
    aliasing = EntryAliasing.of_arguments(e.block.args, ())
    assert aliasing.classes([e.a, e.b, e.x]) == [0, 0, 2]
    assert aliasing.may_alias([e.a, e.b, e.x]) == [0, 1]


def test_a_pointer_into_the_workspace_that_is_no_allocation_is_the_workspace_class() -> None:
    """Canonicalize drops the `ptradd` of 0 of a buffer at the start of the workspace: a
    view of that buffer is then a `ptradd` of the workspace itself, but unmarked."""
    e = _Entry()
    start = e._memref(e.ws)
    view = e._memref(e._add(e.ws, 16))
    aliasing = EntryAliasing.of_arguments(e.block.args, (), e.ws)
    assert aliasing.classes([start, view, e.b]) == [0, 0, 2]
    assert aliasing.may_alias([start, view, e.b]) == [0, 1]


def test_an_entry_finds_its_workspace_after_its_inputs_and_outputs() -> None:
    e = _Entry()
    aliasing = EntryAliasing.of(e.function())
    assert aliasing.classes([e.a, e.b, e.half]) == [0, 1, 1]


def test_arguments_that_may_alias_are_no_class() -> None:
    e = _Entry()
    aliasing = EntryAliasing.of_arguments(e.block.args, (0,), e.ws)
    assert aliasing.classes([e.x, e.a]) == [-1, 1]
    assert aliasing.may_alias([e.x, e.a]) == [0]


def test_a_kernel_on_two_buffers_of_the_workspace_vectorizes_without_overlap_checks() -> None:
    """Two convolutions, both in the workspace, then one parallel elementwise kernel over
    them (with broadcasts, which LLVM's loop vectorizer vectorizes): its iterations take
    both as `noalias`, so the vectorizer checks no overlap at run time (its checks branch
    on `found.conflict`; with the workspace one class, that kernel held two)."""
    rng = np.random.default_rng(0)
    x = K.placeholder(shape=(None, 8, 8, 16))
    k1, k2 = (K.variable(rng.standard_normal((3, 3, 16, 32)) / 12) for _ in range(2))
    a, b = K.conv2d(x, k1, padding="same"), K.conv2d(x, k2, padding="same")
    scale = K.variable(rng.standard_normal(32))
    y = (a - K.mean(a, axis=[0, 1, 2])) * b * scale + K.exp(a) - b
    module, captures = trace.extract([x], [y], "aliasing")
    f = K.function([x], [y])
    xs = rng.standard_normal((4, 8, 8, 16)).astype(np.float32)
    want = interp.run_module(module, [xs, *(c.storage for c in captures)])[0]
    np.testing.assert_allclose(f([xs])[0], want, rtol=1e-4, atol=1e-4)
    bodies = [part for part in f.llvm_ir.split("\ndefine ") if "_body(" in part.split("\n")[0]]
    assert bodies, "no parallel loop took its pointers apart"
    assert not any("found.conflict" in part for part in f.llvm_ir.split("\ndefine "))
