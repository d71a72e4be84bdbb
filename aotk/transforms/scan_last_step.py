"""A scan's last stacked output that is also a carry is the carry's final value.

`K.rnn` returns its last output as `outputs[-1]`, and in an LSTM or GRU step the output is
the new state: the step yields one value as both a carry and an output. Then
`outputs[-1:]` is the final carry (for at least one step), and the stack of all T outputs,
written one copy per step, is left unread: `aotk-scan-accumulations` drops it. A Keras RNN
without `return_sequences` no longer stores its whole output sequence.
"""

from __future__ import annotations

from xdsl.ir import OpResult
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from aotk.dialect.base import shape_of
from aotk.dialect.fused import YieldOp
from aotk.dialect.scan import ScanOp
from aotk.dialect.shape import FULL, ReshapeOp, SliceOp


def _takes_last_step(op: SliceOp, steps: int) -> bool:
    """Whether `op` is x[-1:] (or x[T-1:T]) on axis 0 and whole on every other axis."""
    attrs, shape = op.attrs(), shape_of(op.x.type)
    bounds = list(zip(attrs["start"], attrs["stop"], attrs["step"], strict=True))
    first, *rest = bounds
    if first[0] not in (-1, steps - 1) or first[1] not in (FULL, steps) or first[2] != 1:
        return False
    return all(
        (start, step) == (0, 1) and stop in (FULL, dim)
        for (start, stop, step), dim in zip(rest, shape[1:], strict=True)
    )


class LastStepIsCarry(RewritePattern):
    """outputs[-1:] -> reshape(final carry) when the step yields the output as a carry."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: SliceOp, rewriter: PatternRewriter, /) -> None:
        stacked = op.x
        scan = stacked.owner
        if not isinstance(scan, ScanOp) or not isinstance(stacked, OpResult):
            return
        steps = shape_of(stacked.type)[0]
        if stacked.index < scan.num_carries or steps is None or steps < 1:
            return
        if not _takes_last_step(op, steps):
            return
        last = scan.body.block.last_op
        assert isinstance(last, YieldOp)
        value = last.values[stacked.index]
        carry = next((i for i in range(scan.num_carries) if last.values[i] is value), None)
        dims = shape_of(op.result.type)
        if carry is None or dims.count(None) > 1:
            return
        shape = [-1 if d is None else d for d in dims]
        rewriter.replace(op, ReshapeOp.make([scan.results[carry]], op.result.type, shape=shape))
