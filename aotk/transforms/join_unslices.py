"""A sum of unslices that tile a tensor along one axis is a concatenation.

Autodiff writes the gradient of several slices of one value (an LSTM's four gates cut
from one pre-activation) as a sum of `aotk.unslice`s: each a zero-filled tensor of the
full shape holding one slice's gradient. When the windows tile one axis exactly, the sum
is `aotk.concat` of the gradients: one copy of each instead of n zero-filled tensors and
n - 1 full-size additions. On an LSTM's backward step that is 4 x 64 KiB of zeroing and
a 4-input sum per time step.
"""

from __future__ import annotations

from xdsl.ir import SSAValue
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern

from aotk.dialect.arithmetic import AddOp
from aotk.dialect.base import shape_of
from aotk.dialect.shape import FULL, ConcatOp
from aotk.dialect.unslice import UnsliceOp

Window = tuple[int, int, int]  # axis, start, stop


def summands(op: AddOp) -> list[SSAValue]:
    """The leaves of the tree of same-typed additions under `op` whose inner sums are read
    by nothing else."""
    leaves: list[SSAValue] = []
    for v in (op.lhs, op.rhs):
        inner = v.owner
        if isinstance(inner, AddOp) and v.type == op.result.type and v.has_one_use():
            leaves.extend(summands(inner))
        else:
            leaves.append(v)
    return leaves


def window(op: UnsliceOp) -> Window | None:
    """The one axis on which `op` writes less than the whole of `like`, with the static
    bounds it writes there; None for any other form (steps, negative bounds, several
    cut axes, a dynamic cut axis)."""
    attrs = op.attrs()
    shape = shape_of(op.result.type)
    cut: list[Window] = []
    for axis, (start, stop, step) in enumerate(
        zip(attrs["start"], attrs["stop"], attrs["step"], strict=True)
    ):
        dim = shape[axis]
        end = dim if stop == FULL else stop
        if step != 1 or start < 0 or (end is not None and end < 0):
            return None
        if start == 0 and end == dim:
            continue
        if dim is None or end is None or end > dim:
            return None
        cut.append((axis, start, end))
    return cut[0] if len(cut) == 1 else None


class JoinUnslices(RewritePattern):
    """unslice(g1) + ... + unslice(gn) -> concat(g1, ..., gn) when the windows tile an
    axis in order of their starts, without gaps or overlaps."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp, rewriter: PatternRewriter, /) -> None:
        owners = [v.owner for v in summands(op)]
        if not all(isinstance(u, UnsliceOp) and u.result.type == op.result.type for u in owners):
            return
        pieces: list[tuple[Window, UnsliceOp]] = []
        for u in owners:
            assert isinstance(u, UnsliceOp)
            bounds = window(u)
            if bounds is None:
                return
            pieces.append((bounds, u))
        pieces.sort(key=lambda piece: piece[0][1])
        axes = {axis for (axis, _, _), _ in pieces}
        if len(axes) != 1:
            return
        axis = axes.pop()
        reached = 0
        for (_, start, stop), _ in pieces:
            if start != reached:
                return
            reached = stop
        if reached != shape_of(op.result.type)[axis]:
            return
        rewriter.replace(op, ConcatOp.make([u.g for _, u in pieces], op.result.type, axis=axis))
