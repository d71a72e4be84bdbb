"""`aotk-fuse`: merge chains of elementwise ops into `aotk.fused` kernels.

An elementwise op is a kernel of one op. A producer kernel is merged into a consumer over
the same shape (a result read elsewhere too becomes one more result of the merged
kernel); rank-0 constants are folded into the bodies that use them, and duplicate inputs
are read once. A kernel over a conv's output (a bias and an activation) then becomes the
conv's epilogue (`aotk.conv_fused`). Afterwards every elementwise op outside a fused body
is alone in its loop nest for a reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriterListener,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from aotk.dialect.base import AotkOp, elem_of, shape_of, tensor
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_fused import ConvFusedOp, per_channel
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.fused import FusedOp, YieldOp
from aotk.dialect.registry import REGISTRY, Kind
from aotk.ir_walk import ops_within
from aotk.transforms.block_order import BlockOrder

# LLVM's vectorizer leaves a loop scalar when it needs more overlap checks than this (its
# -vectorize-memory-check-threshold): a backward LSTM step's gates merged into one kernel
# of 14 outputs ran 8x slower than as 4 kernels.
MAX_OVERLAP_CHECKS = 128


def _is_elementwise(op: Operation) -> bool:
    opdef = REGISTRY.get(type(op))  # type: ignore[arg-type]
    return opdef is not None and opdef.kind is Kind.ELEMENTWISE


def _scalar_block(inputs: list[SSAValue]) -> Block:
    return Block(arg_types=[tensor(elem_of(v.type), ()) for v in inputs])


def _is_kernel(op: Operation) -> bool:
    """`op` is an `aotk.fused`, or an elementwise op (not a constant) outside one: a kernel
    of one op, put in an `aotk.fused` only when it merges. (Wrapping every op first made
    three ops for each, and most of them were merged away at once.)"""
    if isinstance(op, FusedOp):
        return True
    return (
        _is_elementwise(op)
        and not isinstance(op, ConstantOp)
        and not isinstance(op.parent_op(), FusedOp)
    )


def _inputs(kernel: Operation) -> Sequence[SSAValue]:
    return kernel.inputs if isinstance(kernel, FusedOp) else kernel.operands


@dataclass
class MergeProducer(RewritePattern):
    """Inline a fused producer over the same shape into this kernel. Results that other ops
    read too become extra results of the merged kernel: stored in the same pass, not read
    back. The merged kernel takes this kernel's place when every other reader comes after
    it, else the producer's place when this kernel's other inputs exist by then."""

    order: BlockOrder  # the pass inserts and erases ops, never moves one in its block

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not _is_kernel(op):
            return
        inputs = _inputs(op)
        # in operand order: a set of ops would go in the order of their addresses
        for producer in dict.fromkeys(v.owner for v in inputs if _is_kernel_result(v)):
            assert isinstance(producer, Operation)
            # no merging into a loop body: the producer would rerun every iteration
            if not _same_space(producer, op) or producer.parent_block() is not op.parent_block():
                continue
            shared = [r for r in producer.results if any(u.operation is not op for u in r.uses)]
            if all(self._runs_after(u.operation, op) for r in shared for u in r.uses):
                where = InsertPoint.before(op)
            elif all(self._defined_before(v, producer) for v in inputs if v.owner is not producer):
                where = InsertPoint.before(producer)
            else:
                continue
            inputs = _merged_inputs(producer, op)
            if _overlap_checks(len(op.results) + len(shared), len(inputs)) > MAX_OVERLAP_CHECKS:
                continue
            merged = _merge(producer, op, shared, inputs)
            rewriter.insert(merged, where)
            n = len(op.results)
            rewriter.replace(op, [], list(merged.results[:n]))
            by_shared = dict(zip(shared, merged.results[n:], strict=True))
            rewriter.replace(producer, [], [by_shared.get(r) for r in producer.results])
            return

    def _runs_after(self, user: Operation, op: Operation) -> bool:
        """`user` is `op`, or comes after it in its block, or is nested in an op that does."""
        block = op.parent_block()
        ancestor: Operation | None = user
        while ancestor is not None and ancestor.parent_block() is not block:
            ancestor = ancestor.parent_op()
        return ancestor is not None and (ancestor is op or self.order.is_before(op, ancestor))

    def _defined_before(self, value: SSAValue, op: Operation) -> bool:
        """`value` is available where `op` is: a block argument, or made by an op before it
        (in its block, or around it)."""
        owner = value.owner
        return not isinstance(owner, Operation) or not self._runs_after(owner, op)


def _overlap_checks(outs: int, ins: int) -> int:
    """Run-time checks LLVM's vectorizer makes before the loop of a kernel of `outs`
    results and `ins` inputs: each output against each input and each other output (its
    buffers all come through one context)."""
    return outs * ins + outs * (outs - 1) // 2


def _is_kernel_result(value: SSAValue) -> bool:
    return isinstance(value.owner, Operation) and _is_kernel(value.owner)


def _same_space(a: Operation, b: Operation) -> bool:
    shapes = {shape_of(r.type) for r in (*a.results, *b.results)}
    return len(shapes) == 1


def _merged_inputs(producer: Operation, consumer: Operation) -> list[SSAValue]:
    """The inputs of the two kernels merged: the producer's, then the consumer's others."""
    return list(_inputs(producer)) + [v for v in _inputs(consumer) if v.owner is not producer]


def _merge(
    producer: Operation, consumer: Operation, shared: Sequence[SSAValue], inputs: list[SSAValue]
) -> FusedOp:
    """The consumer's body after the producer's (both moved: the two are replaced next),
    reading `inputs` (`_merged_inputs`); yields the consumer's results, then the
    producer's `shared` ones."""
    block = _scalar_block(inputs)
    outer = dict(zip(inputs, block.args, strict=True))
    produced = _inline_body(producer, [outer[v] for v in _inputs(producer)], block)
    by_result: dict[SSAValue, SSAValue] = dict(zip(producer.results, produced, strict=True))
    args = [by_result[v] if v.owner is producer else outer[v] for v in _inputs(consumer)]
    yielded = [*_inline_body(consumer, args, block), *(by_result[v] for v in shared)]
    block.add_op(YieldOp(*yielded))
    return FusedOp.create(
        operands=inputs,
        result_types=[r.type for r in (*consumer.results, *shared)],
        regions=[Region(block)],
    )


def _inline_body(kernel: Operation, args: list[SSAValue], into: Block) -> list[SSAValue]:
    """Move the ops of `kernel`'s body to the end of `into`, its arguments replaced by
    `args`; what it yields. `kernel` is left for its caller to replace: moving, not
    cloning, keeps fusing a long chain (each merge takes the bodies so far) cheap. A
    kernel of one op is cloned onto rank-0 `args`."""
    if not isinstance(kernel, FusedOp):
        assert isinstance(kernel, AotkOp)
        elem = elem_of(kernel.results[0].type)
        clone = type(kernel).make(args, tensor(elem, ()), **kernel.attrs())
        into.add_op(clone)
        return [clone.results[0]]
    body = kernel.body.block
    for arg, value in zip(body.args, args, strict=True):
        arg.replace_all_uses_with(value)
    *ops, end = list(body.ops)
    assert isinstance(end, YieldOp), "aotk.fused body without aotk.yield"
    for inner in ops:
        inner.detach()
        into.add_op(inner)
    return list(end.values)


class FoldConstantInputs(RewritePattern):
    """Move rank-0 constant inputs into the body, and read each distinct input once."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not _is_kernel(op):
            return
        inputs = list(_inputs(op))
        constant = any(isinstance(v.owner, ConstantOp) for v in inputs)
        if not constant and len(set(inputs)) == len(inputs):
            return
        kept = list(dict.fromkeys(v for v in inputs if not isinstance(v.owner, ConstantOp)))
        block = _scalar_block(kept)
        args: list[SSAValue] = []
        for v in inputs:
            if isinstance(v.owner, ConstantOp):
                clone = v.owner.clone()
                block.add_op(clone)
                args.append(clone.results[0])
            else:
                args.append(block.args[kept.index(v)])
        block.add_op(YieldOp(*_inline_body(op, args, block)))
        rewriter.replace(
            op,
            FusedOp.create(
                operands=kept, result_types=[r.type for r in op.results], regions=[Region(block)]
            ),
        )


def _plain_conv(op: Any) -> bool:
    """A conv of no epilogue: an `aotk.conv`, or an `aotk.conv_fused` that only reads a
    packed kernel (`weight_packs`)."""
    return isinstance(op, ConvOp) or (isinstance(op, ConvFusedOp) and op.plain())


class MergeConvEpilogue(RewritePattern):
    """A kernel of one result over a conv's output (read by nothing else), of its shape
    and dtype, whose other inputs are scalars or per-channel values (a bias), becomes
    the conv's epilogue: applied as its tiles finish, not in a pass over the output."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not _is_kernel(op):
            return
        inputs = _inputs(op)
        conv = next((v for v in inputs if _plain_conv(v.owner)), None)
        if conv is None or len(op.results) != 1 or op.results[0].type != conv.type:
            return
        producer = conv.owner
        assert isinstance(producer, ConvOp | ConvFusedOp)
        if not conv.has_one_use() or producer.parent_block() is not op.parent_block():
            return
        extras = [v for v in inputs if v is not conv]
        channels = shape_of(conv.type)[-1]
        if not all(per_channel(shape_of(v.type), channels) for v in extras):
            return
        block = _scalar_block([conv, *extras])
        by_input = dict(zip([conv, *extras], block.args, strict=True))
        block.add_op(YieldOp(*_inline_body(op, [by_input[v] for v in inputs], block)))
        packed, properties = None, dict(producer.properties)
        if isinstance(producer, ConvFusedOp):
            packed, properties = producer.packed, producer.window_properties()
        fused = ConvFusedOp.assemble(
            (producer.x, producer.kernel, packed, extras),
            op.results[0].type,
            properties,
            Region(block),
        )
        rewriter.replace(op, fused)
        rewriter.erase(producer)


class UnwrapSingleton(RewritePattern):
    """A kernel of one op on distinct inputs is just that op."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: FusedOp, rewriter: PatternRewriter, /) -> None:
        ops = list(op.body.block.ops)
        if len(ops) != 2 or len(op.results) != 1:
            return
        inner = ops[0]
        if list(inner.operands) != list(op.body.block.args):
            return
        assert isinstance(inner, AotkOp)
        rewriter.replace(op, type(inner).make(list(op.inputs), op.results[0].type, **inner.attrs()))


@dataclass(frozen=True)
class AotkFusePass(ModulePass):
    """Fuse elementwise chains into `aotk.fused` kernels."""

    name = "aotk-fuse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _merge_kernels(op)
        PatternRewriteWalker(MergeConvEpilogue(), apply_recursively=False).rewrite_module(op)
        PatternRewriteWalker(UnwrapSingleton(), apply_recursively=False).rewrite_module(op)


def _merge_kernels(module: ModuleOp) -> None:
    """`MergeProducer` and `FoldConstantInputs` to a fixpoint, in sweeps over the kernels
    in program order: a kernel is offered to them again, as the kernel that replaced it,
    for as long as one rewrites it. xDSL's greedy walker got the same kernels with a
    worklist of every op, the ops of kernel bodies included, in twice the time."""
    kernels = [o for o in ops_within(module) if _is_kernel(o)]
    if not kernels:
        return
    made: list[Operation] = []
    rewriter = PatternRewriter(kernels[0])
    rewriter.extend_from_listener(
        PatternRewriterListener(operation_insertion_handler=[made.append])
    )
    patterns = (MergeProducer(BlockOrder()), FoldConstantInputs())
    changed = True
    while changed:
        changed = False
        for kernel in kernels:
            current: Operation | None = kernel
            while current is not None and current.parent is not None:
                made.clear()
                if not _rewrite(current, patterns, rewriter):
                    break
                changed = True
                current = next((o for o in made if isinstance(o, FusedOp) and o.parent), None)
        kernels = [o for o in ops_within(module) if _is_kernel(o)]
    for op in ops_within(module):
        if isinstance(op, ConstantOp) and not op.results[0].uses and op.parent:
            op.parent.erase_op(op)  # folded into the kernels that read it


def _rewrite(op: Operation, patterns: Sequence[RewritePattern], rewriter: PatternRewriter) -> bool:
    """Offer `op` to `patterns` until one rewrites it; whether one did."""
    rewriter.current_operation = op
    rewriter.insertion_point = InsertPoint.before(op)
    rewriter.has_done_action = False
    for pattern in patterns:
        pattern.match_and_rewrite(op, rewriter)
        if rewriter.has_done_action:
            return True
    return False
