"""A scan's loop-invariant matmul operands, packed once before its steps.

A float `aotk.matmul` in a scan body whose right operand is defined outside the scan (a
recurrent weight, as `x_t @ W + h @ U` makes it, or its transpose in the gradient) has
that operand packed into slivers once, before the loop (`matmul_prepacked`), and runs on
the packed copy at every step: no per-step copy of the weight, and no read of it in
place with its rows N apart.
"""

from __future__ import annotations

from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from aotk.dialect.base import elem_of, tensor
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.registry import BodyLowering
from aotk.kernels import library, matmul_prepacked
from aotk.kernels.kernel import Buf

Packs = dict[Operation, Buf]


def plan(low: BodyLowering, scan: Operation) -> Packs:
    """A packed buffer for each prepackable matmul of `scan`'s body, filled (when
    emitting code) at the insertion point, before the loop."""
    packs: Packs = {}
    for op in scan.regions[0].block.ops:
        if not _prepackable(op, scan):
            continue
        assert isinstance(op, MatMulOp)
        b, elem = low.bufs[op.rhs], elem_of(op.rhs.type)
        b_t = _flag(op.transpose_rhs)
        n, kdim = (b.dims[0], b.dims[1]) if b_t else (b.dims[1], b.dims[0])
        count = matmul_prepacked.packed_elems(low.k, elem, n, kdim)
        packs[op] = buf = low.alloc(tensor(elem, [None]), [count])
        if low.code:
            library.call(low.k, matmul_prepacked.pack_name(elem, b_t), [buf, b, n, kdim])
    return packs


def lower_op(low: BodyLowering, op: Operation, targets: dict[SSAValue, Buf], packs: Packs) -> None:
    """Lower one op of the body: a prepacked matmul by a call on its packed operand."""
    packed = packs.get(op)
    if packed is None:
        low.lower_op(op, targets)
        return
    assert isinstance(op, MatMulOp)
    a = low.bufs[op.lhs]
    (out,) = low.bind_results(op, low.result_dims(op, [a, low.bufs[op.rhs]]), targets)
    if low.code:
        m, n, kdim = low.k.product(out.dims[:-1]), out.dims[-1], a.dims[-1]
        library.call(low.k, matmul_prepacked.matmul_name(a.elem), [out, a, packed, m, n, kdim])


def _prepackable(op: Operation, scan: Operation) -> bool:
    return (
        isinstance(op, MatMulOp)
        and not _flag(op.transpose_lhs)
        and isinstance(elem_of(op.rhs.type), Float32Type | Float64Type)
        and not _defined_within(op.rhs, scan)
    )


def _flag(attr: IntegerAttr | None) -> bool:
    return attr is not None and attr.value.data != 0


def _defined_within(value: SSAValue, scan: Operation) -> bool:
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op is scan:
            return True
        op = op.parent_op()
    return False
