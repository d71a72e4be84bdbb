"""`aotk-parallelize`: outline each `scf.for` marked `aotk.parallel` into a task that the
runtime's thread pool (`runtime/aotk_pool_internal.h`) runs over chunks of its iterations.

Expects buffers as `!llvm.ptr` (after `aotk-memory-to-llvm`), loops still `scf.for`, and
marked loops without iter_args. A marked loop `scf.for %i = %lb to %ub step %s
{aotk.parallel = m}` becomes: the values its body uses from outside stored into a stack
context; n = its trip count; `aotk_parallel_for(@f_parK, ctx, n)` if n >= m, else a plain
call `@f_parK(ctx, 0, n)`. `func.func @f_parK(ctx, begin, end)` loads the values back and
runs iterations [begin, end). Loops are outlined outermost first, so a marked loop nested
in another lands in the outer task, with its context on that task's own stack. A task of
two or more pointers some of which are `noalias` where the loop was (`aliasing`) passes
them to `@f_parK_body`, which runs the iterations and takes those as `noalias` again.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, llvm, scf
from xdsl.dialects.builtin import (
    FixedBitwidthType,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    VectorType,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint
from xdsl.traits import is_side_effect_free

from aotk.dialect import metadata
from aotk.ir_walk import ops_in_region, ops_within
from aotk.kernels.kernel import PARALLEL_ATTR
from aotk.kernels.loop_cost import static_trips
from aotk.kernels.make import constant_op, func_call_op, gep_op, load_op, store_op
from aotk.lowering.aliasing import EntryAliasing

RUNTIME_FN = "aotk_parallel_for"
PTR = llvm.LLVMPointerType()
WORD = 8  # context slots are 8-byte aligned


def min_trips(loop: scf.ForOp) -> int:
    """The smallest trip count worth splitting over threads, from the loop's mark."""
    attr = loop.attributes[PARALLEL_ATTR]
    assert isinstance(attr, IntegerAttr), f"{PARALLEL_ATTR} must be an integer attribute"
    return max(int(attr.value.data), 1)


def _worth_it(loop: scf.ForOp) -> bool:
    """Whether a marked loop may repay the threads; if not (its trip count became known
    and small once its dims were folded: `generic_loops`), drop its mark."""
    known = static_trips(loop)
    if known is not None and known < min_trips(loop):
        del loop.attributes[PARALLEL_ATTR]
        return False
    return True


def free_values(op: Operation, seed: tuple[SSAValue, ...] = ()) -> list[SSAValue]:
    """`seed`, then the values `op`'s regions use but do not define, in order of first use."""
    walked = ops_within(op)
    return used_from_outside(walked[1:], set(walked), seed)


def used_from_outside(
    walked: list[Operation], inside: set[Operation], seed: tuple[SSAValue, ...] = ()
) -> list[SSAValue]:
    """`seed`, then the values the ops `walked` use that neither an op of `inside` nor a
    block of one defines, in order of first use."""
    seen: dict[SSAValue, None] = dict.fromkeys(seed)
    for op in walked:
        for v in op.operands:
            owner = v.owner
            defined = owner if isinstance(owner, Operation) else owner.parent_op()
            if defined not in inside:
                seen.setdefault(v, None)
    return list(seen)


def outside_values(loop: scf.ForOp) -> list[SSAValue]:
    """Values the loop's body uses but does not define, plus the lower bound and step
    (the task recomputes its induction variable from them)."""
    return free_values(loop, (loop.lb, loop.step))


def rebuildable(v: SSAValue, depth: int = 0) -> bool:
    """Constants, and pure ops of constants (a splat of 0.0), are rebuilt in the task, not
    passed: LLVM must still see them (a loaded element size or step would stop it from
    vectorizing, a loaded vector constant costs a load)."""
    op = v.owner
    if not isinstance(op, Operation) or op.regions or depth > 3:
        return False
    if isinstance(op, arith.ConstantOp):
        return True
    return (
        bool(op.operands)
        and is_side_effect_free(op)
        and all(rebuildable(o, depth + 1) for o in op.operands)
    )


def rebuild(b: Builder, v: SSAValue, env: dict[SSAValue, SSAValue]) -> SSAValue:
    """A copy of `v`'s defining ops at `b` (each copied once, per `env`)."""
    if v not in env:
        op = v.owner
        assert isinstance(op, Operation)
        mapping = {o: rebuild(b, o, env) for o in op.operands}
        copy = b.insert(op.clone(value_mapper=mapping))
        env.update(zip(op.results, copy.results, strict=True))
    return env[v]


def erase_unused(values: list[SSAValue]) -> None:
    """Erase the rebuildable ops defining `values`, and what only they used, once nothing
    uses them: what an outlined function rebuilt is often dead where it came from."""
    work = [v for v in values if rebuildable(v)]
    while work:
        op = work.pop().owner
        if not isinstance(op, Operation) or (block := op.parent_block()) is None:
            continue
        if all(r.first_use is None for r in op.results):
            work.extend(op.operands)
            block.erase_op(op)


def _slot_words(t: Attribute) -> int:
    """8-byte words one captured value of type `t` takes in the context."""
    if isinstance(t, IndexType | llvm.LLVMPointerType):
        return 1
    if isinstance(t, VectorType):
        elem = t.get_element_type()
        assert isinstance(elem, FixedBitwidthType)
        return -(-elem.size * t.element_count() // WORD)
    if isinstance(t, FixedBitwidthType) and t.size <= WORD:
        return 1
    raise ValueError(f"aotk-parallelize: cannot pass a value of type {t} to a parallel loop")


def _stored_type(t: Attribute) -> Attribute:
    return i64 if isinstance(t, IndexType) else t


def _alignment(t: Attribute) -> int:
    if isinstance(t, VectorType):
        elem = t.get_element_type()
        assert isinstance(elem, FixedBitwidthType)
        return elem.size
    return WORD if isinstance(t, IndexType | llvm.LLVMPointerType) else _byte_size(t)


def _byte_size(t: Attribute) -> int:
    assert isinstance(t, FixedBitwidthType)
    return max(t.size, 1)


def _const(b: Builder, value: int, t: IndexType | IntegerType) -> SSAValue:
    return b.insert(constant_op(value, t)).result


def _slot(b: Builder, ctx: SSAValue, word: int) -> SSAValue:
    return b.insert(gep_op(ctx, word, i64, inbounds=False)).results[0]


@dataclass
class _Layout:
    """Where each captured value lives in the context, in 8-byte words."""

    values: list[SSAValue]
    offsets: list[int]
    words: int

    @staticmethod
    def of(values: list[SSAValue]) -> _Layout:
        offsets, words = [], 0
        for v in values:
            offsets.append(words)
            words += _slot_words(v.type)
        return _Layout(values, offsets, max(words, 1))


def _entry_alloca(fn: func.FuncOp, words: int) -> SSAValue:
    """A context on `fn`'s stack, allocated once in its entry block (an alloca inside a
    loop would grow the stack at every iteration)."""
    entry = fn.body.blocks[0]
    b = Builder(InsertPoint.at_start(entry))
    size = _const(b, words, i64)
    slots = b.insert(llvm.AllocaOp(size, i64, alignment=16)).results[0]
    # llvmlite types an alloca `i64*` and then refuses to store a pointer or a float
    # through it; a no-op cast gives the untyped `ptr` its stores accept.
    return b.insert(llvm.BitcastOp(slots, PTR)).results[0]


def _store_context(b: Builder, ctx: SSAValue, layout: _Layout) -> None:
    for v, word in zip(layout.values, layout.offsets, strict=True):
        value = v
        if isinstance(v.type, IndexType):
            value = b.insert(arith.IndexCastOp(v, i64)).result
        b.insert(store_op(value, _slot(b, ctx, word), alignment=_alignment(v.type)))


def _load_context(
    b: Builder, ctx: SSAValue, layout: _Layout, constants: list[SSAValue]
) -> dict[SSAValue, SSAValue]:
    loaded: dict[SSAValue, SSAValue] = {}
    for v in constants:
        rebuild(b, v, loaded)
    for v, word in zip(layout.values, layout.offsets, strict=True):
        slot = _slot(b, ctx, word)
        raw = b.insert(
            load_op(slot, _stored_type(v.type), alignment=_alignment(v.type))
        ).dereferenced_value
        if isinstance(v.type, IndexType):
            raw = b.insert(arith.IndexCastOp(raw, IndexType())).result
        loaded[v] = raw
    return loaded


def _constant_index(v: SSAValue) -> int | None:
    op = v.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return int(op.value.value.data)
    return None


def _trip_count(b: Builder, loop: scf.ForOp) -> tuple[SSAValue, int | None]:
    """ceil((ub - lb) / step), at least 0, as i64, and as an int when the bounds are
    constants."""
    lb, ub, step = (_constant_index(v) for v in (loop.lb, loop.ub, loop.step))
    if lb is not None and ub is not None and step is not None:
        trips = max(-(-(ub - lb) // step), 0)
        return _const(b, trips, i64), trips
    span = b.insert(arith.SubiOp(loop.ub, loop.lb)).result
    span = b.insert(arith.MaxSIOp(span, _const(b, 0, IndexType()))).result
    if step != 1:
        bumped = b.insert(arith.SubiOp(loop.step, _const(b, 1, IndexType()))).result
        span = b.insert(arith.AddiOp(span, bumped)).result
        span = b.insert(arith.DivUIOp(span, loop.step)).result
    return b.insert(arith.IndexCastOp(span, i64)).result, None


def _task(
    name: str, loop: scf.ForOp, layout: _Layout, constants: list[SSAValue], aliasing: EntryAliasing
) -> list[func.FuncOp]:
    """`func.func @name(ctx, begin, end)`: iterations [begin, end) of `loop`, whose body
    region it takes over; with the function it calls, if any (`_takes_pointers_apart`)."""
    entry = Block(arg_types=[PTR, i64, i64])
    ctx, begin, end = entry.args
    b = Builder(InsertPoint.at_end(entry))
    may_alias = aliasing.may_alias(layout.values)
    if not _takes_pointers_apart(layout, may_alias):
        _iterations(b, loop, _load_context(b, ctx, layout, constants), (begin, end))
        return [_function(name, entry, [])]
    loaded = _load_context(b, ctx, layout, [])
    body = Block(arg_types=[*(v.type for v in layout.values), i64, i64])
    b.insert(func_call_op(f"{name}_body", [*(loaded[v] for v in layout.values), begin, end], []))
    b.insert(func.ReturnOp())
    inner = Builder(InsertPoint.at_end(body))
    env: dict[SSAValue, SSAValue] = dict(zip(layout.values, body.args[:-2], strict=True))
    for v in constants:
        rebuild(inner, v, env)
    _iterations(inner, loop, env, (body.args[-2], body.args[-1]))
    task = _function(name, entry, [])
    work = _function(f"{name}_body", body, may_alias)
    return [task, work]


def _takes_pointers_apart(layout: _Layout, may_alias: list[int]) -> bool:
    """Whether the iterations go in a function of their own that takes the context's
    pointers as arguments: when two or more, some of them `noalias` (not in `may_alias`,
    from `aliasing`).

    Loaded from the context, no pointer is known apart from another, and LLVM's loop
    vectorizer checked every pair of them at run time before each vector loop: on
    ResNet50's training step, 40 of 468 functions held such checks, 31% of the IR
    after optimization."""
    pointers = [i for i, v in enumerate(layout.values) if isinstance(v.type, llvm.LLVMPointerType)]
    return len(pointers) >= 2 and not set(pointers) <= set(may_alias)


def _iterations(
    b: Builder, loop: scf.ForOp, env: dict[SSAValue, SSAValue], span: tuple[SSAValue, SSAValue]
) -> None:
    """At `b`, iterations [begin, end) = `span` (i64) of `loop`, its body region moved
    here, the values it used from outside replaced as `env` says; then a return."""
    lb, step = env[loop.lb], env[loop.step]
    bounds = []
    for it in span:
        index = b.insert(arith.IndexCastOp(it, IndexType())).result
        offset = b.insert(arith.MuliOp(index, step)).result
        bounds.append(b.insert(arith.AddiOp(lb, offset)).result)
    body = Region()
    loop.body.move_blocks(body)
    for op in ops_in_region(body):
        for i, v in enumerate(op.operands):
            if v in env:
                op.operands[i] = env[v]
    b.insert(scf.ForOp(bounds[0], bounds[1], step, [], body))
    b.insert(func.ReturnOp())


def _function(name: str, block: Block, may_alias: list[int]) -> func.FuncOp:
    fn = func.FuncOp(name, ([a.type for a in block.args], []), Region(block), visibility="private")
    if may_alias:
        metadata.set_ints(fn, metadata.MAY_ALIAS, may_alias)
    return fn


def _launch(b: Builder, name: str, ctx: SSAValue, n: SSAValue, threshold: int) -> None:
    """aotk_parallel_for(@name, ctx, n), or @name(ctx, 0, n) when n < threshold."""
    task = b.insert(llvm.AddressOfOp(name, PTR)).result

    if threshold <= 1:
        b.insert(func_call_op(RUNTIME_FN, [task, ctx, n], []))
        return
    enough = b.insert(arith.CmpiOp(n, _const(b, threshold, i64), "sge")).result
    zero = _const(b, 0, i64)
    parallel = [func_call_op(RUNTIME_FN, [task, ctx, n], []), scf.YieldOp()]
    serial = [func_call_op(name, [ctx, zero, n], []), scf.YieldOp()]
    b.insert(scf.IfOp(enough, [], Region(Block(parallel)), Region(Block(serial))))


def outline(module: ModuleOp, loop: scf.ForOp, name: str) -> list[func.FuncOp]:
    """Replace `loop` by a launch of a new task function `name`; return the task, and
    the function it calls if any (`_task`)."""
    if loop.iter_args:
        raise ValueError("aotk-parallelize: a parallel scf.for cannot carry iter_args")
    parent = _enclosing_func(loop)
    outside = outside_values(loop)
    constants = [v for v in outside if rebuildable(v)]
    layout = _Layout.of([v for v in outside if not rebuildable(v)])
    ctx = _entry_alloca(parent, layout.words)
    b = Builder(InsertPoint.before(loop))
    _store_context(b, ctx, layout)
    n, known = _trip_count(b, loop)
    made = _task(name, loop, layout, constants, EntryAliasing.of(parent))
    threshold = min_trips(loop)
    if known is not None and known >= threshold:
        threshold = 1  # no need to check at run time
    _launch(b, name, ctx, n, threshold)
    upper = loop.ub
    loop.detach()
    loop.erase()
    erase_unused([*constants, upper])
    after: Operation = parent
    for fn in made:
        module.body.block.insert_op_after(fn, after)
        after = fn
    return made


def _declare_runtime(module: ModuleOp) -> None:
    names = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
    if RUNTIME_FN in names:
        return
    decl = func.FuncOp.external(RUNTIME_FN, [PTR, PTR, i64], [])
    first = module.body.block.first_op
    if first is None:
        module.body.block.add_op(decl)
    else:
        module.body.block.insert_op_before(decl, first)


def _enclosing_func(loop: scf.ForOp) -> func.FuncOp:
    parent = loop.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        raise ValueError("aotk-parallelize: a parallel scf.for outside any func.func")
    return parent


@dataclass(frozen=True)
class AotkParallelizePass(ModulePass):
    """Outline loops marked `aotk.parallel` into tasks run by `aotk_parallel_for`."""

    name = "aotk-parallelize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = [
            o
            for o in ops_within(op)
            if isinstance(o, scf.ForOp) and PARALLEL_ATTR in o.attributes and _worth_it(o)
        ]
        if not loops:
            return
        _declare_runtime(op)
        taken = {o.sym_name.data for o in op.ops if isinstance(o, func.FuncOp | llvm.FuncOp)}
        for loop in loops:  # pre-order: outer loops first
            base = _enclosing_func(loop).sym_name.data
            name = next(  # free, with the name of its function of iterations (`_task`)
                f"{base}_par{i}"
                for i in range(len(taken) + 1)
                if not {f"{base}_par{i}", f"{base}_par{i}_body"} & taken
            )
            taken.update(fn.sym_name.data for fn in outline(op, loop, name))


__all__ = ["PARALLEL_ATTR", "AotkParallelizePass", "erase_unused", "outline"]
