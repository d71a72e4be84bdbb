"""The gradient of `aotk.scan`: backpropagation through time as another scan.

A second forward scan also stacks the state before every step, and the result of every
contraction (matmul) of the body. The backward scan runs over the steps in reverse (on
reversed sequences): each iteration rebuilds its step's forward body from the saved
state, applies the body ops' gradient rules, passes the state cotangent back and
accumulates the cotangents of loop invariants (weights). In the rebuilt body, the
contractions' results are the saved ones: their recomputation is left unused and erased,
and only the cheap elementwise ops run again. Only the values the gradient needs get a
cotangent. The backward graph is a loop too: it does not grow with the number of steps.
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
from aotk.dialect.registry import Kind, kind_of
from aotk.dialect.scan import ScanOp, result_types
from aotk.dialect.trace import KTensor

Backprop = Callable[
    [list[Operation], dict[SSAValue, KTensor], set[SSAValue]], dict[SSAValue, KTensor]
]


def scan_vjp(
    op: ScanOp, g_results: list[KTensor | None], backprop: Backprop, wanted: set[SSAValue]
) -> dict[SSAValue, KTensor]:
    """Cotangents of the scan's inits, and of those of its sequences and of the outer
    values its body uses that are `wanted`; `backprop` applies the body ops' rules
    (autodiff's walker). Only wanted values get a carry or an output: a value asked of
    no one would cost a carry, and its rules may refuse shapes the call is free to use."""
    n_c = op.num_carries
    block = op.body.block
    outer = [
        v for v in trace.used_values(op) if v not in op.operands and _is_float(v) and v in wanted
    ]
    wanted_seqs = [i for i, v in enumerate(op.sequences) if _is_float(v) and v in wanted]
    results = [KTensor(r) for r in op.results]
    g = [
        gr if gr is not None else lib.zeros_like(r)
        for gr, r in zip(g_results, results, strict=True)
    ]
    kept = _contractions(block)
    saved, products = _saved_states(op, kept)  # [T, ...] state before each step
    seqs = [KTensor(v)[::-1] for v in op.sequences]
    rev_saved = [s[::-1] for s in saved]
    rev_g_out = [go[::-1] for go in g[n_c:]]
    rev_products = [p[::-1] for p in products]
    seq_inputs = [*seqs, *rev_saved, *rev_g_out, *rev_products]
    n_seq_in = len(seq_inputs)
    carries = [*g[:n_c], *(lib.zeros_like(KTensor(v)) for v in outer)]

    step_types = [
        tensor(elem_of(s.type), shape_of(s.type)[1:]) for s in (x.value for x in seq_inputs)
    ]
    with trace.body([*step_types, *(c.type for c in carries)]) as bwd:
        args = list(bwd.args)
        xs = args[: op.num_seq]
        states = args[op.num_seq : op.num_seq + n_c]
        g_out_t = args[op.num_seq + n_c : n_seq_in - len(kept)]
        product_t = args[n_seq_in - len(kept) : n_seq_in]
        g_state, g_outer = args[n_seq_in : n_seq_in + n_c], args[n_seq_in + n_c :]
        mapping = _rebuild(block, [*xs, *states])
        yielded = [mapping.get(v, v) for v in _yielded(block)]
        grads: dict[SSAValue, KTensor] = {}
        for v, c in zip(yielded, [*g_state, *g_out_t], strict=True):
            lib.accumulate(grads, v, KTensor(c))
        sources = {*states, *(xs[i] for i in wanted_seqs), *outer}
        grads = backprop(_body_ops(bwd), grads, sources)
        for v, step in zip(kept, product_t, strict=True):
            mapping[v].replace_all_uses_with(step)  # the recomputation is now dead
        new_state = [_or_zeros(grads.get(s), s) for s in states]
        new_outer = [
            _add(KTensor(acc), grads.get(v)) for acc, v in zip(g_outer, outer, strict=True)
        ]
        g_x = [_or_zeros(grads.get(xs[i]), xs[i]) for i in wanted_seqs]
        bwd.add_op(YieldOp(*(t.value for t in [*new_state, *new_outer, *g_x])))
        trace.erase_dead_ops(bwd)  # the recomputed contractions, cotangents not wanted
    back = ScanOp.create(
        operands=[t.value for t in [*seq_inputs, *carries]],
        result_types=result_types(
            [t.type for t in seq_inputs],  # type: ignore[misc]
            [c.type for c in carries],  # type: ignore[misc]
            [tensor(elem_of(xs[i].type), shape_of(xs[i].type)) for i in wanted_seqs],
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
    for i, c in zip(wanted_seqs, out[n_c + len(outer) :], strict=True):
        cotangents[op.sequences[i]] = c[::-1]
    return cotangents


def _contractions(block) -> list[SSAValue]:
    """The float results of the body's contractions, which the backward reads saved."""
    return [
        r
        for inner in block.ops
        if kind_of(inner) is Kind.CONTRACTION
        for r in inner.results
        if _is_float(r)
    ]


def _saved_states(op: ScanOp, kept: list[SSAValue]) -> tuple[list[KTensor], list[KTensor]]:
    """Run the scan again, also stacking the state each step starts from and the values
    `kept` of each step."""
    n_c = op.num_carries
    block = op.body.block
    with trace.body([a.type for a in block.args]) as body:
        mapping = _rebuild(block, list(body.args))
        yielded = [mapping.get(v, v) for v in _yielded(block)]
        products = [mapping[v] for v in kept]
        body.add_op(YieldOp(*yielded, *body.args[op.num_seq :], *products))
    extra = [tensor(elem_of(c.type), shape_of(c.type)) for c in op.inits]
    types = result_types(
        [s.type for s in op.sequences],  # type: ignore[misc]
        [c.type for c in op.inits],  # type: ignore[misc]
        [*(v.type for v in yielded[n_c:]), *extra, *(v.type for v in kept)],  # type: ignore[misc]
    )
    twin = ScanOp.create(
        operands=list(op.operands),
        result_types=types,
        properties=dict(op.properties),
        regions=[_region(body)],
    )
    trace.append(twin)
    stacked = [KTensor(r) for r in twin.results[len(op.results) :]]
    return stacked[:n_c], stacked[n_c:]


def _rebuild(block, args: list[SSAValue]) -> dict[SSAValue, SSAValue]:
    """Clone `block`'s ops but its yield at the current insertion point; return the map
    from its values to their copies."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args, strict=True))
    for inner in block.ops:
        if not isinstance(inner, YieldOp):
            trace.append(inner.clone(value_mapper=mapping))
    return mapping


def _yielded(block) -> list[SSAValue]:
    end = block.last_op
    if not isinstance(end, YieldOp):
        raise AssertionError("aotk.scan body without aotk.yield")
    return list(end.values)


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
