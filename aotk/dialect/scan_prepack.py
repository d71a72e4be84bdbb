"""A scan's loop-invariant matmul operands, packed once before its steps.

A float `aotk.matmul` in a scan body whose right operand is defined outside the scan (a
recurrent weight, as `x_t @ W + h @ U` makes it, or its transpose in the gradient) has
that operand packed into slivers once, before the loop (`matmul_prepacked`), and runs on
the packed copy at every step: no per-step copy of the weight, and no read of it in
place with its rows N apart. Where the product's only use is an add of a value of its
shape already computed (`x_t @ W + h @ U`), the matmul starts from that value and the
add is not run: no pass over the sum per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import Float32Type, Float64Type, IntegerAttr
from xdsl.ir import Block, Operation, SSAValue

from aotk.dialect import scan_epilogue, strided_views
from aotk.dialect.arithmetic import AddOp
from aotk.dialect.base import elem_of, tensor
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.registry import BodyLowering
from aotk.kernels import library, matmul_prepacked
from aotk.kernels.kernel import Buf


@dataclass
class Packs:
    """What `plan` found: each prepacked matmul's packed operand (one per weight and
    layout, however many matmuls read it), and the adds that matmuls do."""

    packed: dict[Operation, Buf] = field(default_factory=dict)
    adds: dict[Operation, AddOp] = field(default_factory=dict)  # matmul -> its add
    absorbed: set[Operation] = field(default_factory=set)  # those adds
    epilogues: dict[Operation, scan_epilogue.Epilogue] = field(default_factory=dict)
    done: set[Operation] = field(default_factory=set)  # lowered with their matmul


def plan(low: BodyLowering, scan: Operation) -> Packs:
    """A packed buffer for each prepackable matmul of `scan`'s body, filled (when
    emitting code) at the insertion point, before the loop."""
    packs, by_weight = Packs(), dict[tuple[SSAValue, bool], Buf]()
    for op in scan.regions[0].block.ops:
        if not prepackable(op, scan):
            continue
        assert isinstance(op, MatMulOp)
        add = _sole_add(op, scan)
        if add is not None:
            packs.adds[op] = add
            packs.absorbed.add(add)
        epilogue = scan_epilogue.find((add or op).results[0], op)
        if epilogue is not None:
            packs.epilogues[op] = epilogue
            packs.done.update([*epilogue.views, epilogue.fused])
        key = (op.rhs, _flag(op.transpose_rhs))
        if key not in by_weight:
            by_weight[key] = _pack(low, *key)
        packs.packed[op] = by_weight[key]
    return packs


def _pack(low: BodyLowering, weight: SSAValue, b_t: bool) -> Buf:
    """A workspace slice holding `weight` packed (B stored [N, K] with `b_t`), filled at
    the insertion point when emitting code."""
    b, elem = low.bufs[weight], elem_of(weight.type)
    n, kdim = (b.dims[0], b.dims[1]) if b_t else (b.dims[1], b.dims[0])
    count = matmul_prepacked.packed_elems(low.k, elem, n, kdim)
    buf = low.alloc(tensor(elem, [None]), [count])
    if low.code:
        library.call(low.k, matmul_prepacked.pack_name(elem, b_t), [buf, b, n, kdim])
    return buf


def lower_op(low: BodyLowering, op: Operation, targets: dict[SSAValue, Buf], packs: Packs) -> None:
    """Lower one op of the body: a prepacked matmul by a call on its packed operand
    (writing its add's result, when it does the add), an add done by a matmul not at all."""
    packed = packs.packed.get(op)
    if packed is None:
        if op not in packs.absorbed and op not in packs.done:
            low.lower_op(op, targets)
        return
    assert isinstance(op, MatMulOp)
    a = low.bufs[op.lhs]
    dims = low.result_dims(op, [a, low.bufs[op.rhs]])
    add = packs.adds.get(op)
    (out,) = low.bind_results(add or op, dims, targets)
    low.bufs[op.result] = out
    epilogue = packs.epilogues.get(op)
    if epilogue is not None:
        scan_epilogue.bind(low, epilogue, targets)
    if not low.code:
        return
    m, n, kdim = low.k.product(out.dims[:-1]), out.dims[-1], a.dims[-1]
    addend = [] if add is None else [low.bufs[_other(add, op.result)]]
    name = matmul_prepacked.matmul_name(a.elem, add is not None)
    if epilogue is None:
        library.call(low.k, name, [out, a, packed, *addend, m, n, kdim])
    else:
        rows = matmul_prepacked.row_tile(a.elem)
        scan_epilogue.emit(low, epilogue, (name, out, a, packed, addend), (m, n, kdim), rows)


def _sole_add(op: MatMulOp, scan: Operation) -> AddOp | None:
    """The add that is `op`'s only use, if its other operand has the product's type
    (no broadcast) and is computed before `op` (so the matmul can start from it)."""
    uses = list(op.result.uses)
    add = uses[0].operation if len(uses) == 1 else None
    if not isinstance(add, AddOp) or add.parent is not op.parent:
        return None
    other = _other(add, op.result)
    if other is op.result or other.type != op.result.type or add.result.type != other.type:
        return None
    if strided_views.is_view_value(other):  # the kernel reads its addend dense
        return None
    block = op.parent
    assert block is not None
    if isinstance(other.owner, Operation) and other.owner.parent is block:
        return (
            add if block.get_operation_index(other.owner) < block.get_operation_index(op) else None
        )
    return add  # a block argument, or a value from outside the scan


def _other(add: AddOp, value: SSAValue) -> SSAValue:
    return add.rhs if add.lhs is value else add.lhs


def prepackable(op: Operation, scan: Operation) -> bool:
    """Whether `op` is a float matmul of `scan`'s body by a weight from outside it."""
    return (
        isinstance(op, MatMulOp)
        and not _flag(op.transpose_lhs)
        and isinstance(elem_of(op.rhs.type), Float32Type | Float64Type)
        and not defined_within(op.rhs, scan)
    )


def _flag(attr: IntegerAttr | None) -> bool:
    return attr is not None and attr.value.data != 0


def defined_within(value: SSAValue, scan: Operation) -> bool:
    """Whether `value` is computed inside `scan` (at any depth)."""
    owner = value.owner
    op = owner.parent_op() if isinstance(owner, Block) else owner
    while op is not None:
        if op is scan:
            return True
        op = op.parent_op()
    return False
