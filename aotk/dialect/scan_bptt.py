"""The gradient of `aotk.scan`: backpropagation through time as another scan.

A second forward scan also stacks the state before every step. The backward scan runs
over the steps in reverse (on reversed sequences): each iteration recomputes its step's
forward body from the saved state, applies the body ops' gradient rules, passes the
state cotangent back and accumulates the cotangents of loop invariants (weights). The
backward graph is a loop too: it does not grow with the number of steps.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Operation, Region, SSAValue

from aotk import dtypes
from aotk.dialect import gradlib as lib
from aotk.dialect import trace
from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.fused import YieldOp
from aotk.dialect.scan import ScanOp, result_types
from aotk.dialect.trace import KTensor

Backprop = Callable[[list[Operation], dict[SSAValue, KTensor]], dict[SSAValue, KTensor]]


def scan_vjp(
    op: ScanOp, g_results: list[KTensor | None], backprop: Backprop
) -> dict[SSAValue, KTensor]:
    """Cotangents of the scan's operands and of the outer values its body uses; `backprop`
    applies the body ops' rules (autodiff's walker)."""
    n_c = op.num_carries
    block = op.body.block
    outer = [v for v in trace.used_values(op) if v not in op.operands and _is_float(v)]
    results = [KTensor(r) for r in op.results]
    g = [
        gr if gr is not None else lib.zeros_like(r)
        for gr, r in zip(g_results, results, strict=True)
    ]
    saved = _saved_states(op)  # [T, ...] state before each step
    seqs = [KTensor(v)[::-1] for v in op.sequences]
    rev_saved = [s[::-1] for s in saved]
    rev_g_out = [go[::-1] for go in g[n_c:]]
    seq_inputs = [*seqs, *rev_saved, *rev_g_out]
    carries = [*g[:n_c], *(lib.zeros_like(KTensor(v)) for v in outer)]

    step_types = [
        tensor(elem_of(s.type), shape_of(s.type)[1:]) for s in (x.value for x in seq_inputs)
    ]
    with trace.body([*step_types, *(c.type for c in carries)]) as bwd:
        args = list(bwd.args)
        xs = args[: op.num_seq]
        states = args[op.num_seq : op.num_seq + n_c]
        g_out_t = args[op.num_seq + n_c : len(seq_inputs)]
        g_state, g_outer = (
            args[len(seq_inputs) : len(seq_inputs) + n_c],
            args[len(seq_inputs) + n_c :],
        )
        yielded = _recompute(block, [*xs, *states])
        grads: dict[SSAValue, KTensor] = {}
        for v, c in zip(yielded, [*g_state, *g_out_t], strict=True):
            lib.accumulate(grads, v, KTensor(c))
        grads = backprop(_body_ops(bwd), grads)
        new_state = [_or_zeros(grads.get(s), s) for s in states]
        new_outer = [
            _add(KTensor(acc), grads.get(v)) for acc, v in zip(g_outer, outer, strict=True)
        ]
        g_x = [_or_zeros(grads.get(x), x) for x in xs]
        bwd.add_op(YieldOp(*(t.value for t in [*new_state, *new_outer, *g_x])))
    back = ScanOp.create(
        operands=[t.value for t in [*seq_inputs, *carries]],
        result_types=result_types(
            [t.type for t in seq_inputs],  # type: ignore[misc]
            [c.type for c in carries],  # type: ignore[misc]
            [tensor(elem_of(x.type), shape_of(x.type)) for x in xs],
        ),
        properties={"n_seq": IntegerAttr(len(seq_inputs), i64)},
        regions=[_region(bwd)],
    )
    trace.append(back)
    out = [KTensor(r) for r in back.results]
    cotangents: dict[SSAValue, KTensor] = {}
    for v, c in zip(op.inits, out[:n_c], strict=True):
        cotangents[v] = c
    for v, c in zip(outer, out[n_c : n_c + len(outer)], strict=True):
        cotangents[v] = c
    for v, c in zip(op.sequences, out[n_c + len(outer) :], strict=True):
        if _is_float(v):
            cotangents[v] = c[::-1]
    return cotangents


def _saved_states(op: ScanOp) -> list[KTensor]:
    """Run the scan again, also stacking the state each step starts from."""
    n_c = op.num_carries
    block = op.body.block
    with trace.body([a.type for a in block.args]) as body:
        yielded = _recompute(block, list(body.args))
        body.add_op(YieldOp(*yielded, *body.args[op.num_seq :]))
    extra = [tensor(elem_of(c.type), shape_of(c.type)) for c in op.inits]
    types = result_types(
        [s.type for s in op.sequences],  # type: ignore[misc]
        [c.type for c in op.inits],  # type: ignore[misc]
        [*(v.type for v in yielded[n_c:]), *extra],  # type: ignore[misc]
    )
    twin = ScanOp.create(
        operands=list(op.operands),
        result_types=types,
        properties=dict(op.properties),
        regions=[_region(body)],
    )
    trace.append(twin)
    return [KTensor(r) for r in twin.results[len(op.results) :]]


def _recompute(block, args: list[SSAValue]) -> list[SSAValue]:
    """Clone `block`'s ops at the current insertion point; return what it yields."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args, strict=True))
    for inner in block.ops:
        if isinstance(inner, YieldOp):
            return [mapping.get(v, v) for v in inner.values]
        clone = inner.clone(value_mapper=mapping)
        trace.append(clone)
    raise AssertionError("aotk.scan body without aotk.yield")


def _body_ops(block) -> list[Operation]:
    return list(block.ops)


def _or_zeros(c: KTensor | None, like: SSAValue) -> KTensor:
    return c if c is not None else lib.zeros_like(KTensor(like))


def _add(acc: KTensor, c: KTensor | None) -> KTensor:
    return acc if c is None else lib.add(acc, c)


def _is_float(v: SSAValue) -> bool:
    return dtypes.is_float(elem_of(v.type))


def _region(block) -> Region:
    return Region(block)
