"""Which pointer arguments of an outlined function may be `noalias`.

An entry function's arguments are classes of buffers (`aotk.may_alias` names those that
may overlap another, `aotk.alias_classes` records the classes of the arguments of
loops several ops share). A function outlined from it (a kernel, or a parallel loop's
body) takes pointers computed from those arguments; each may be `noalias` unless it is
computed from a shared class, from none, or from the same class as another of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects import func, llvm, ptr
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Attribute, BlockArgument, SSAValue

from aotk.dialect import metadata

# ops that give another view of the memory their first operand points to
_VIEWS = (ptr.FromPtrOp, ptr.ToPtrOp, ptr.PtrAddOp, llvm.GEPOp, llvm.BitcastOp)


def _is_pointer(t: Attribute) -> bool:
    return isinstance(t, MemRefType | ptr.PtrType | llvm.LLVMPointerType)


Class = int | SSAValue  # an argument's position, or a workspace allocation


@dataclass
class EntryAliasing:
    """What aliasing needs to know of the function kernels are outlined from: which of
    its arguments are `noalias` pointers, and which of those may still overlap.

    An entry's workspace holds many buffers, each its own class: the buffers live at
    one time never overlap (`workspace_plan` frees a slice only after the last op that
    uses it), and each is one `ptradd` from the workspace marked `aotk.allocation`
    (`Bufferizer.alloc`), which its views are computed from. Other pointers into the
    workspace (a view of the buffer at offset 0 once canonicalize has dropped that
    buffer's `ptradd` of 0) are the workspace's class.
    """

    position: dict[SSAValue, int]  # the `noalias` arguments' classes: equal may overlap
    shared: set[int]  # classes never taken as `noalias` (a variable and its update)
    workspace: SSAValue | None = None  # an entry's, whose allocations are classes

    @classmethod
    def of(cls, entry: func.FuncOp) -> EntryAliasing:
        """An entry's arguments are each a class; the loops ops share (`op_memo`) record
        the classes their arguments had where they were called."""
        if metadata.ALIAS_CLASSES in entry.attributes:
            classes = metadata.ints(entry, metadata.ALIAS_CLASSES)
            position: dict[SSAValue, int] = {
                a: c for a, c in zip(entry.args, classes, strict=True) if c >= 0
            }
            return cls(position, set())
        shared = metadata.ints(entry, metadata.MAY_ALIAS)
        return cls.of_arguments(entry.args, shared, _workspace(entry))

    @classmethod
    def of_arguments(
        cls, args: Sequence[SSAValue], shared: Iterable[int], workspace: SSAValue | None = None
    ) -> EntryAliasing:
        """An entry's: each of `args` a class, those of `shared` never `noalias`, and each
        allocation in the `workspace` (one of `args`) a class."""
        position: dict[SSAValue, int] = {a: i for i, a in enumerate(args)}
        return cls(position, set(shared), workspace)

    def classes(self, passed: Sequence[SSAValue]) -> list[int]:
        """For each pointer `passed`, the first position in `passed` of a pointer from the
        same class; -1 when it comes from none (or one never `noalias`), and for what is
        no pointer."""
        first: dict[Class, int] = {}
        out = []
        for i, v in enumerate(passed):
            found = self._class(v) if _is_pointer(v.type) else None
            out.append(-1 if found is None else first.setdefault(found, i))
        return out

    def may_alias(self, passed: Sequence[SSAValue]) -> list[int]:
        """The pointer arguments of a kernel that must not be `noalias`.

        An argument keeps `noalias` when it is computed from an argument of the entry that
        is `noalias` itself, or from an allocation in its workspace, and no other argument
        of the kernel is computed from that one: then nothing else the kernel reaches can
        overlap it. Two views of one buffer, or a variable and the buffer its update is
        written to, may overlap.
        """
        classes = self.classes(passed)
        return [
            i
            for i, (v, c) in enumerate(zip(passed, classes, strict=True))
            if _is_pointer(v.type) and (c < 0 or classes.count(c) > 1)
        ]

    def _class(self, v: SSAValue) -> Class | None:
        """The allocation or the argument pointer `v` is computed from, if either."""
        while isinstance(v.owner, _VIEWS):
            source = v.owner.operands[0]
            if source is self.workspace and metadata.ALLOCATION in v.owner.attributes:
                return v
            v = source
        index = self.position.get(v) if isinstance(v, BlockArgument) else None
        return None if index is None or index in self.shared else index


def _workspace(entry: func.FuncOp) -> SSAValue | None:
    """An entry's workspace argument (`metadata.KERNEL`), if it has one."""
    counts = metadata.ints(entry, metadata.KERNEL)
    if len(counts) != 2 or not entry.body.blocks:
        return None
    workspace = entry.args[counts[0] + counts[1]]
    return workspace if isinstance(workspace.type, ptr.PtrType) else None


__all__ = ["EntryAliasing"]
