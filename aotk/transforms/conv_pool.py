"""`aotk-conv-pool`: a pool over a convolution's output as one `aotk.conv_pool`.

A CNN's conv and max pool otherwise write the conv's whole output for the pool to read
back. Runs after `aotk-fuse`, so the conv may carry an epilogue (`aotk.conv_fused`: a
bias, an activation), which the pooled conv applies before pooling. Matched: an
`aotk.pool` (max or average) with strides equal to its window over a 2-D conv it alone
reads, in the same block; its padding "valid", or "same" where the conv's spatial dims
are static multiples of the window (the same windows). The conv must be one the register
tiles compute (`dialect.conv_pool.check_tiled`).

An activation that `aotk-simplify` moved after a max pool (`pool_first`: f(max_pool(y))
== max_pool(f(y)) for a non-decreasing f) then joins the epilogue again: a kernel whose
body is a chain of such ops on the pooled value alone. Applied to the conv's values in
registers it costs nothing, where after the pool it was one more pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_fused import ConvFusedOp, identity_body
from aotk.dialect.conv_pool import ConvPoolOp, check_tiled
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.fused import FusedOp, YieldOp
from aotk.dialect.pool import PoolMode, PoolOp
from aotk.kernels import conv_winograd
from aotk.transforms.pool_first import MONOTONE_UNARY, monotone_operand


def _same_windows(op: PoolOp) -> bool:
    """Whether the pool's windows are the non-overlapping, unpadded ones."""
    attrs = op.attrs()
    window = attrs["window"]
    if len(window) != 2 or tuple(attrs["strides"]) != tuple(window):
        return False
    if attrs["padding"] == "valid":
        return True
    sizes = shape_of(op.x.type)[1:-1]
    return all(s is not None and s % w == 0 for s, w in zip(sizes, window, strict=True))


class PoolIntoConv(RewritePattern):
    """pool(conv(x, w)) or pool(conv_fused(x, w, extras)) -> conv_pool(x, w, extras)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: PoolOp, rewriter: PatternRewriter, /) -> None:
        conv = op.x.owner
        if not isinstance(conv, ConvOp | ConvFusedOp) or not op.x.has_one_use():
            return
        if conv.parent_block() is not op.parent_block() or not _same_windows(op):
            return
        packed = conv.packed if isinstance(conv, ConvFusedOp) else None
        if packed is not None:
            assert isinstance(conv, ConvFusedOp)
            if not _reads_as_pooled(conv, packed, op.attrs()["window"]):
                return
        try:
            check_tiled(conv.results[0].type, conv.kernel.type, **conv.attrs())
        except (ValueError, TypeError):
            return
        if isinstance(conv, ConvFusedOp):
            extras, body = list(conv.extras), conv.body.clone()
        else:
            extras, body = [], identity_body(conv.result.type)
        window = conv.window_properties() if isinstance(conv, ConvFusedOp) else conv.properties
        properties = {
            **window,
            "pool_window": DenseArrayBase.from_list(i64, list(op.attrs()["window"])),
            "pool_mode": op.properties["mode"],
        }
        pooled = ConvPoolOp.assemble(
            (conv.x, conv.kernel, packed, extras), op.result.type, properties, body
        )
        rewriter.replace(op, pooled)
        rewriter.erase(conv)


def _reads_as_pooled(conv: ConvFusedOp, packed: SSAValue, window: Any) -> bool:
    """Whether the conv pooled over `window` takes Winograd's path with the same U."""
    kernel, elem = shape_of(conv.kernel.type), elem_of(conv.kernel.type)
    image = shape_of(conv.x.type)[1:-1]
    dims = conv_winograd.weight_shape(elem, kernel, conv.conv_attrs(), window, image)
    return dims == tuple(shape_of(packed.type))


# (the epilogue's block, the value f applies to, the op to insert before) -> f's value
Append = Callable[[Block, SSAValue, Operation], SSAValue]


def _monotone(op: Operation) -> tuple[SSAValue, Append] | None:
    """(x, how to apply f in an epilogue) when op is y = f(x) for a non-decreasing f: a
    lone tanh, exp or sigmoid, or a one-input kernel whose body is a chain of such ops
    (`pool_first.monotone_operand`) from its input to what it yields, constants aside."""
    if isinstance(op, MONOTONE_UNARY):

        def lone(block: Block, value: SSAValue, before: Operation) -> SSAValue:
            scalar = type(op).make([value], tensor(elem_of(op.results[0].type), ()))
            block.insert_op_before(scalar, before)
            return scalar.results[0]

        return op.operands[0], lone
    if not isinstance(op, FusedOp) or len(op.inputs) != 1 or len(op.results) != 1:
        return None
    chain = _monotone_chain(op.body.block)
    if chain is None:
        return None

    def inline(block: Block, value: SSAValue, before: Operation) -> SSAValue:
        mapping: dict[SSAValue, SSAValue] = {op.body.block.args[0]: value}
        for inner in chain:
            block.insert_op_before(inner.clone(value_mapper=mapping), before)
        done = op.body.block.last_op
        assert isinstance(done, YieldOp)
        return mapping[done.values[0]]

    return op.inputs[0], inline


def _monotone_chain(body: Block) -> list[Operation] | None:
    """The body's ops but its yield, if they are constants and a chain of non-decreasing
    ops from its one argument to what it yields."""
    value: SSAValue = body.args[0]
    ops = list(body.ops)
    for inner in ops:
        if isinstance(inner, ConstantOp):
            continue
        if isinstance(inner, YieldOp):
            return ops[:-1] if list(inner.operands) == [value] else None
        position = monotone_operand(inner)
        if position is None or inner.operands[position] is not value:
            return None
        value = inner.results[0]
    return None


class MonotoneIntoEpilogue(RewritePattern):
    """f(conv_pool(...)) with a non-decreasing f, for a max pool: f joins the epilogue
    (f(max_pool(y)) == max_pool(f(y)))."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        found = _monotone(op)
        if found is None:
            return
        pooled_value, append = found
        pooled = pooled_value.owner
        if not isinstance(pooled, ConvPoolOp) or not pooled_value.has_one_use():
            return
        if pooled.attrs()["pool_mode"] != PoolMode.MAX or op.results[0].type != pooled.result.type:
            return
        body = pooled.body.clone()
        done = body.block.last_op
        assert isinstance(done, YieldOp)
        result = append(body.block, done.values[0], done)
        body.block.insert_op_before(YieldOp(result), done)
        body.block.erase_op(done)
        rewriter.replace(
            op,
            ConvPoolOp.assemble(
                (pooled.x, pooled.kernel, pooled.packed, list(pooled.extras)),
                op.results[0].type,
                pooled.window_properties(),
                body,
            ),
        )
        rewriter.erase(pooled)


@dataclass(frozen=True)
class AotkConvPoolPass(ModulePass):
    """Pool convolutions' outputs as their tiles finish."""

    name = "aotk-conv-pool"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([PoolIntoConv(), MonotoneIntoEpilogue()])
        ).rewrite_module(op)
