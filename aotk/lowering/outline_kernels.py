"""`aotk-outline-kernels`: each kernel of a model's entry function becomes a function.

A model's `main` holds every kernel of a step; on a Keras GRU training step it was
9,300 lines of LLVM IR and 1.8 s of LLVM, on one core, because LLVM's cost grows faster
than the size of a function and `llvm_split` balances parts made of whole functions.
Outlined, its kernels are optimized and emitted on every core.

A kernel is a loop nest (or `scf.if`) of at most `MAX_OPS` ops at the top of a function
marked `aotk.kernel` (an entry) or `aotk.shared_loops` (the loops several ops of an
entry call, `op_memo`; its arguments' aliasing classes stand for the entry's). Larger
ones, such as a scan's time loop, stay and have the kernels inside them outlined, unless
the thread pool runs them (`aotk.parallel`). The values a kernel uses from outside
become arguments, except constants, which are rebuilt inside so LLVM still sees them.
Identical kernels (the two directions of a bidirectional RNN, the updates of same-shaped
weights) become one function: on a Keras GRU training step, 260 kernels are 91
functions, and every later pass and LLVM do half the work. Runs on the loops as
`convert-aotk-to-loops` emits them, before any cleanup, so that the cleanup and every
later pass see each distinct kernel once: buffers are memrefs and `ptr_xdsl` pointers
(`!llvm.ptr` is understood too). On MobileNet's training step that halved the cleanup
and `aotk-memory-to-llvm`.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import func, llvm
from xdsl.dialects.builtin import ModuleOp, SymbolRefAttr
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from aotk.dialect import metadata
from aotk.ir_walk import ops_within
from aotk.kernels.kernel import PARALLEL_ATTR
from aotk.kernels.make import func_call_op
from aotk.lowering.aliasing import EntryAliasing
from aotk.lowering.parallelize import erase_unused, free_values, rebuild, rebuildable
from aotk.transforms.structure import structure_key

# Above MAX_OPS a region op is split further where it can be. MIN_OPS is a loop with one
# access: kept in the entry, loops that small still made the entry slow to optimize, and
# outlined, identical ones (copies, fills) are compiled once.
MAX_OPS = 400
MIN_OPS = 4


def _size(op: Operation) -> int:
    return len(ops_within(op))


def kernels_of(block: Block) -> list[Operation]:
    """The region ops of `block`, or of the large ones inside it, to outline in order.

    A large op with nothing to outline inside (a loop whose body is one long block, a
    register tile unrolled) is outlined whole: left in the entry, it would be compiled
    as glue is, with LLVM's quick code generation (`codegen.llvm_split`)."""
    found: list[Operation] = []
    for op in block.ops:
        if not op.regions:
            continue
        size = _size(op)
        one_result = len(op.results) <= 1
        if size <= MAX_OPS or PARALLEL_ATTR in op.attributes:
            if size >= MIN_OPS and one_result:
                found.append(op)
            continue
        inner = [k for region in op.regions for b in region.blocks for k in kernels_of(b)]
        found.extend(inner if inner or not one_result else [op])
    return found


def outline_kernel(kernel: Operation, name: str, entry: EntryAliasing) -> func.FuncOp:
    """Replace `kernel` by a call to a new function `name` that runs it; return that."""
    outside = free_values(kernel, tuple(kernel.operands))
    passed = [v for v in outside if not rebuildable(v)]
    fn = move_into_function([kernel], (passed, outside), list(kernel.results), name)
    erase_unused(outside)
    aliased = entry.may_alias(passed)
    if aliased:
        metadata.set_ints(fn, metadata.MAY_ALIAS, aliased)
    return fn


def move_into_function(
    ops: list[Operation],
    uses: tuple[list[SSAValue], list[SSAValue]],
    returned: list[SSAValue],
    name: str,
) -> func.FuncOp:
    """Move `ops` (consecutive in one block) into a new private function `name`, called
    where they were. `uses` = (passed, outside): the values it takes as arguments, and all
    the values the ops use from outside, the others of which (constants) are rebuilt in
    it. It returns `returned`, whose uses become the call's results."""
    passed, outside = uses
    block = Block(arg_types=[v.type for v in passed])
    env: dict[SSAValue, SSAValue] = dict(zip(passed, block.args, strict=True))
    b = Builder(InsertPoint.at_end(block))
    for v in outside:
        if v not in env:
            rebuild(b, v, env)
    result_types = [r.type for r in returned]
    call = func_call_op(name, passed, result_types)
    parent = ops[0].parent_block()
    assert parent is not None
    parent.insert_op_before(call, ops[0])
    for old, new in zip(returned, call.results, strict=True):
        old.replace_all_uses_with(new)
    for op in ops:
        op.detach()
        block.add_op(op)
        for inner in ops_within(op):
            for i, v in enumerate(inner.operands):
                if v in env:
                    inner.operands[i] = env[v]
    block.add_op(func.ReturnOp(*returned))
    types = ([v.type for v in passed], result_types)
    return func.FuncOp(name, types, Region(block), visibility="private")


@dataclass(frozen=True)
class AotkOutlineKernelsPass(ModulePass):
    """Outline the kernels of functions marked `aotk.kernel` into functions of their own."""

    name = "aotk-outline-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        entries = [f for f in op.ops if isinstance(f, func.FuncOp) and _outlined_from(f)]
        taken = {f.sym_name.data for f in op.ops if isinstance(f, func.FuncOp | llvm.FuncOp)}
        first_of: dict[Hashable, str] = {}  # one function per distinct kernel
        for entry in entries:
            base = entry.sym_name.data
            after: Operation = entry
            same_as: dict[str, str] = {}
            aliasing = EntryAliasing.of(entry)
            for number, kernel in enumerate(kernels_of(entry.body.blocks[0])):
                name = f"{base}_k{number}"
                assert name not in taken, f"aotk-outline-kernels: @{name} is taken"
                fn = outline_kernel(kernel, name, aliasing)
                first = first_of.setdefault(structure_key(fn), name)
                if first != name:
                    same_as[name] = first
                    fn.erase()
                    continue
                op.body.block.insert_op_after(fn, after)
                after = fn
            _call_first_copies(entry, same_as)


def _outlined_from(fn: func.FuncOp) -> bool:
    """An entry, or the loops several ops of one share (`op_memo`)."""
    return metadata.KERNEL in fn.attributes or metadata.SHARED_LOOPS in fn.attributes


def _call_first_copies(entry: func.FuncOp, same_as: dict[str, str]) -> None:
    """Point the calls to kernels that were dropped as copies at the kernel kept."""
    for op in ops_within(entry):
        if isinstance(op, func.CallOp) and op.callee.string_value() in same_as:
            op.callee = SymbolRefAttr(same_as[op.callee.string_value()])


__all__ = [
    "AotkOutlineKernelsPass",
    "kernels_of",
    "move_into_function",
    "outline_kernel",
]
