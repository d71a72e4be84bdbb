"""`aotk-scan-accumulations`: a scan's summed weight gradients as one matmul after the
loop, its summed bias gradients as one sum, and no stacked output or carry that nobody
reads.

Backpropagation through time adds each step's weight gradient into a carry:
acc += x_t^T @ dz_t. Done per step, that is T matmuls with only `batch` rows to contract
and a read-modify-write of the whole gradient each step. Summed over the steps it is one
matmul, X^T @ dZ, of the sequences with their T and batch axes folded together
([T * batch, D]^T @ [T * batch, N]): a step's x_t is already a sequence, and dz_t becomes
a stacked output of the scan. The carry goes, and its final value is init + X^T @ dZ
(X^T @ dZ alone for an init of zeros, as a gradient starts). Likewise a bias gradient,
acc += sum over rows of dz_t, is the sum of dZ over its steps and rows after the loop;
and a concatenation of such terms (a GRU's recurrent weight, used in slices, gets the
slices' gradients joined) is the concatenation of their sums. The steps left then
treat the batch's rows apart, so they can run by blocks of rows (`dialect.scan_rows`).
(Only the order of the float additions changes.)

The gradient scan also stacks values nobody reads, such as the gradient of an input that
is a placeholder; such outputs go, so the ops computing them die. So do outputs that
stack a sequence's steps as they are (the forward scan saving x_t for the gradient):
their readers read the sequence. And carries whose final value nobody reads go when
no value the loop needs is computed from them (`scan_dead_carries`): the cotangent of
a dropout mask, accumulated when only the weights' gradients are wanted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, TensorType, i64
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass

from aotk.dialect import trace
from aotk.dialect.arithmetic import AddOp
from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.elementwise import is_zero_fill
from aotk.dialect.fused import YieldOp
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.reduce import ReduceSumOp
from aotk.dialect.scan import ScanOp, result_types
from aotk.dialect.shape import ConcatOp, ReshapeOp
from aotk.ir_walk import ops_within
from aotk.transforms.hoist_scan_matmuls import drop_unread_sequences
from aotk.transforms.scan_dead_carries import dead_carries

Term = tuple[SSAValue, SSAValue | None]  # lhs^T @ rhs a step; rhs None: the sum of lhs's rows


@dataclass(frozen=True)
class _Accumulation:
    """Carry `carry` of a scan becomes init + the sum over all steps of its term, or of
    its terms joined along `axis` (a concatenation)."""

    carry: int
    terms: tuple[Term, ...]  # of values one step of each, in the body
    axis: int | None


def scan_accumulations(module: ModuleOp) -> int:
    """Rewrite every scan; return how many accumulations left their loops."""
    hoisted = 0
    for scan in [op for op in ops_within(module) if isinstance(op, ScanOp)]:
        _forward_sequence_outputs(scan)
        dead = dead_carries(scan)
        found = [
            a for i in range(scan.num_carries) if i not in dead and (a := _accumulation(scan, i))
        ]
        unread = [j for j, r in enumerate(list(scan.results)[scan.num_carries :]) if not r.uses]
        if found or unread or dead:
            _rebuild(scan, found, unread, dead)
            hoisted += len(found)
    return hoisted


def _forward_sequence_outputs(scan: ScanOp) -> None:
    """Readers of a stacked output that is a step of a sequence, yielded as is, read
    the sequence instead (a forward scan saving its inputs for the gradient)."""
    outputs = list(_yield(scan).values)[scan.num_carries :]
    for value, result in zip(outputs, list(scan.results)[scan.num_carries :], strict=True):
        if (
            isinstance(value, BlockArgument)
            and value.block is scan.body.block
            and value.index < scan.num_seq
            and scan.sequences[value.index].type == result.type
        ):
            result.replace_all_uses_with(scan.sequences[value.index])


def _accumulation(scan: ScanOp, index: int) -> _Accumulation | None:
    """Carry `index` if its new value is carry + lhs^T @ rhs (or + the sum of a value's
    rows, or + a concatenation of such terms), read by nothing else, with the terms'
    values computed per step (from a sequence or in the body)."""
    block = scan.body.block
    carry = block.args[scan.num_seq + index]
    new = _yield(scan).values[index]
    add = new.owner
    if not isinstance(add, AddOp) or not carry.has_one_use() or not new.has_one_use():
        return None
    others = [v for v in add.operands if v is not carry]
    if len(others) != 1 or add.result.type != carry.type or others[0].type != carry.type:
        return None
    joined = others[0].owner
    if isinstance(joined, ConcatOp):  # a GRU's gradient of its recurrent weight
        parts = [_term(scan, v) for v in joined.operands]
        if any(p is None for p in parts):
            return None
        terms = tuple(p for p in parts if p is not None)
        return _Accumulation(index, terms, joined.axis.value.data)
    term = _term(scan, others[0])
    return None if term is None else _Accumulation(index, (term,), None)


def _term(scan: ScanOp, value: SSAValue) -> Term | None:
    """(lhs, rhs) if `value`, read once, is lhs^T @ rhs of per-step values, (x, None) if
    it is the sum of a per-step x over its rows (a bias gradient)."""
    op = value.owner
    if not isinstance(op, MatMulOp | ReduceSumOp) or not value.has_one_use():
        return None
    attrs = op.attrs()
    if isinstance(op, ReduceSumOp):
        if tuple(attrs["axes"]) != (0,) or attrs["keepdims"] or not _per_step(scan, op.x):
            return None
        return op.x, None
    if not attrs.get("transpose_lhs") or attrs.get("transpose_rhs"):
        return None
    if not all(_per_step(scan, v) for v in (op.lhs, op.rhs)):
        return None
    return op.lhs, op.rhs


def _per_step(scan: ScanOp, value: SSAValue) -> bool:
    """A step of one of the sequences, or a value the body computes (not a carry)."""
    if isinstance(value, BlockArgument):
        return value.block is scan.body.block and value.index < scan.num_seq
    op = value.owner
    return isinstance(op, Operation) and op.parent_block() is scan.body.block


def _yield(scan: ScanOp) -> YieldOp:
    end = scan.body.block.last_op
    assert isinstance(end, YieldOp)
    return end


def _rebuild(scan: ScanOp, found: list[_Accumulation], unread: list[int], dead: set[int]) -> None:
    """A new scan without the hoisted and `dead` carries and the unread outputs, and with
    the steps the hoisted matmuls need as new outputs; the matmuls follow it."""
    block, n_carry = scan.body.block, scan.num_carries
    end = _yield(scan)
    hoisted = {a.carry for a in found}
    carries = [i for i in range(n_carry) if i not in hoisted and i not in dead]
    outputs = [v for j, v in enumerate(list(end.values)[n_carry:]) if j not in unread]
    stacked = _Stacked(scan, _body_steps(found))
    new_values = [end.values[i] for i in carries] + outputs + list(stacked.new)
    end.operands = new_values
    trace.erase_dead_ops(block)  # the hoisted sums' adds and terms, what fed the dead carries
    for i in sorted(hoisted | dead, reverse=True):
        block.erase_arg(block.args[scan.num_seq + i])
    inits = [scan.inits[i] for i in carries]
    types = result_types(
        [_tensor_type(s) for s in scan.sequences],
        [_tensor_type(scan.results[i]) for i in carries],
        [_tensor_type(v) for v in [*outputs, *stacked.new]],
    )
    new = ScanOp.create(
        operands=[*scan.sequences, *inits],
        result_types=types,
        properties={"n_seq": IntegerAttr(scan.num_seq, i64)},
        regions=[scan.detach_region(scan.body)],
        attributes=dict(scan.attributes),
    )
    parent = scan.parent_block()
    assert parent is not None
    parent.insert_op_before(new, scan)
    kept = [scan.results[i] for i in carries] + [
        scan.results[n_carry + j] for j in range(len(scan.results) - n_carry) if j not in unread
    ]
    for old, value in zip(kept, new.results, strict=False):
        old.replace_all_uses_with(value)
    stacked.bind(list(new.results)[len(kept) :])
    for a in found:
        total = _summed(parent, scan, a, stacked)
        init, result = scan.inits[a.carry], scan.results[a.carry]
        if is_zero_fill(init) and total.results[0].type == result.type:
            result.replace_all_uses_with(total.results[0])  # a gradient summed from zero
            continue
        final = AddOp.make([init, total.results[0]], result.type)
        parent.insert_op_before(final, scan)
        result.replace_all_uses_with(final.result)
    scan.detach()
    scan.erase()
    drop_unread_sequences(new)


def _tensor_type(value: SSAValue) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


class _Stacked:
    """Where the scan's values stacked over all steps are: a step of a sequence is that
    sequence, another body value a new output of the rebuilt scan."""

    def __init__(self, scan: ScanOp, new: list[SSAValue]) -> None:
        self.scan, self.new = scan, new
        self._results: Sequence[SSAValue] = []

    def bind(self, results: Sequence[SSAValue]) -> None:
        self._results = results

    def sequence(self, step: SSAValue) -> SSAValue:
        if isinstance(step, BlockArgument):
            return self.scan.sequences[step.index]
        return self._results[self.new.index(step)]


def _body_steps(found: list[_Accumulation]) -> list[SSAValue]:
    """The body values (not sequence steps) the hoisted matmuls need stacked, each once."""
    new: list[SSAValue] = []
    for a in found:
        for v in (v for term in a.terms for v in term):
            if v is not None and not isinstance(v, BlockArgument) and v not in new:
                new.append(v)
    return new


def _summed_product(parent: Block, scan: ScanOp, lhs: SSAValue, rhs: SSAValue) -> MatMulOp:
    """sum over t of lhs[t]^T @ rhs[t], as one matmul of the steps folded into rows."""
    folded = []
    for seq in (lhs, rhs):
        steps, rows, cols = shape_of(_tensor_type(seq))
        n = steps * rows if steps is not None and rows is not None else None
        flat = ReshapeOp.make([seq], tensor(elem_of(seq.type), (n, cols)), shape=[-1, cols])
        parent.insert_op_before(flat, scan)
        folded.append(flat.result)
    m, n = shape_of(_tensor_type(lhs))[-1], shape_of(_tensor_type(rhs))[-1]
    product = MatMulOp.make(folded, tensor(elem_of(lhs.type), (m, n)), transpose_lhs=True)
    parent.insert_op_before(product, scan)
    return product


def _summed(parent: Block, scan: ScanOp, a: _Accumulation, stacked: _Stacked) -> Operation:
    """The sum over all steps of `a`'s terms (joined along its axis), before `scan`."""
    totals: list[Operation] = []
    for lhs, rhs in a.terms:
        seq = stacked.sequence(lhs)
        if rhs is None:
            totals.append(_summed_rows(parent, scan, seq))
        else:
            totals.append(_summed_product(parent, scan, seq, stacked.sequence(rhs)))
    if a.axis is None:
        return totals[0]
    result = scan.results[a.carry]
    joined = ConcatOp.make([t.results[0] for t in totals], result.type, axis=a.axis)
    parent.insert_op_before(joined, scan)
    return joined


def _summed_rows(parent: Block, scan: ScanOp, seq: SSAValue) -> ReduceSumOp:
    """sum over t of the rows of seq[t]: one reduction over the steps and rows."""
    shape = shape_of(_tensor_type(seq))
    total = ReduceSumOp.make(
        [seq], tensor(elem_of(seq.type), shape[2:]), axes=(0, 1), keepdims=False
    )
    parent.insert_op_before(total, scan)
    return total


@dataclass(frozen=True)
class AotkScanAccumulationsPass(ModulePass):
    """Sum each scan's per-step weight-gradient matmuls in one matmul after the loop, and
    drop the stacked outputs and carries nobody reads."""

    name = "aotk-scan-accumulations"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        scan_accumulations(op)
