"""`aotk-matmul-updates`: `w - c * (a @ b)` and its kin as one `aotk.matmul_update`.

A training step updates each weight by its gradient, `w - lr * x^T @ dz` for a dense
layer's. Left as a matmul and an elementwise update, the gradient goes out to memory and
comes back; as `aotk.matmul_update(w, x^T, dz, -lr)` the matmul adds it to w as it
stores each tile, and the update may then be computed in w's own buffer.

Forms matched, at a function's top level, with `m` a float32/float64 `aotk.matmul` read
by nothing else, `c` a scalar of its dtype and `w` of m's static type:
`w - c * m`, `w - m * c`, `w + c * m` (either order of the add, and of the multiply),
`w - m` and `w + m`. The product `c * m`, if any, must have no other reader either, and
w must not be a fill with zero (a sum started at zero is no update).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aotk import dtypes
from aotk.dialect.arithmetic import AddOp, MulOp, SubOp
from aotk.dialect.base import dtype_of, elem_of, shape_of, tensor
from aotk.dialect.elementwise import ConstantOp, is_zero_fill
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.matmul_update import MatMulUpdateOp
from aotk.dialect.unary import NegOp


@dataclass(frozen=True)
class _Match:
    """r = w + sign * scale * m, scale None for 1."""

    w: SSAValue
    m: MatMulOp
    scale: SSAValue | None
    sign: float


def _sole_reader(value: SSAValue, reader: Operation) -> bool:
    use = value.first_use
    return value.has_one_use() and use is not None and use.operation is reader


def _scaled_product(value: SSAValue, reader: Operation) -> tuple[MatMulOp, SSAValue | None] | None:
    """(m, c) when `value`, read by `reader` alone, is m or c * m (either order) with m
    a matmul read by nothing else."""
    if not _sole_reader(value, reader):
        return None
    owner = value.owner
    if isinstance(owner, MatMulOp):
        return owner, None
    if not isinstance(owner, MulOp):
        return None
    for m, c in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
        product = m.owner
        if isinstance(product, MatMulOp) and shape_of(c.type) == () and _sole_reader(m, owner):
            return product, c
    return None


def _match(op: AddOp | SubOp) -> _Match | None:
    sides = [(op.lhs, op.rhs)] if isinstance(op, SubOp) else [(op.lhs, op.rhs), (op.rhs, op.lhs)]
    for w, other in sides:
        found = _scaled_product(other, op)
        if found is not None:
            return _Match(w, found[0], found[1], -1.0 if isinstance(op, SubOp) else 1.0)
    return None


def _fits(match: _Match, op: Operation) -> bool:
    """Same static type for w, the product and the result; a float32/float64 product;
    everything at a function's top level."""
    m_type = match.m.result.type
    elem = elem_of(m_type)
    return (
        not is_zero_fill(match.w)
        and match.w.type == m_type == op.results[0].type
        and None not in shape_of(m_type)
        and dtypes.is_float(elem)
        and dtypes.byte_size(elem) >= 4
        and (match.scale is None or elem_of(match.scale.type) == elem)
        and isinstance(op.parent_op(), func.FuncOp)
        and match.m.parent_block() is op.parent_block()
    )


def _alpha(match: _Match, scalar: Attribute) -> tuple[list[Operation], SSAValue]:
    """The ops making alpha = sign * scale (none if it is the scale itself), and alpha:
    a negated constant is a constant, and no scale is 1."""
    scale = match.scale
    if scale is not None and not isinstance(scale.owner, ConstantOp):
        if match.sign > 0:
            return [], scale
        neg = NegOp.make([scale], scalar)
        return [neg], neg.results[0]
    value = match.sign
    if scale is not None:
        assert isinstance(scale.owner, ConstantOp)
        value *= scale.owner.attrs()["value"]
    const = ConstantOp.make([], scalar, value=value, dtype=dtype_of(scalar))
    return [const], const.results[0]


class MatMulUpdate(RewritePattern):
    """w +- [c *] (a @ b) -> aotk.matmul_update(w, a, b, +-c)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: AddOp | SubOp, rewriter: PatternRewriter, /) -> None:
        match = _match(op)
        if match is None or not _fits(match, op):
            return
        new, alpha = _alpha(match, tensor(elem_of(match.m.result.type), ()))
        operands = [match.w, match.m.lhs, match.m.rhs, alpha]
        new.append(MatMulUpdateOp.make(operands, op.results[0].type, **match.m.attrs()))
        rewriter.replace(op, new)


@dataclass(frozen=True)
class AotkMatmulUpdatesPass(ModulePass):
    """Fold a matmul and the elementwise update that reads it into `aotk.matmul_update`."""

    name = "aotk-matmul-updates"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MatMulUpdate(), apply_recursively=False).rewrite_module(op)
