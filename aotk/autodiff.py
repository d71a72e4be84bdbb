"""`K.gradients`: reverse-mode differentiation on the traced graph.

Walks the graph block backwards from the loss, applying each op's `OpDef.grad` and summing
fan-in with `add`; the backward graph is ordinary aotk IR appended to the same block.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import Operation, SSAValue

from aotk import dtypes, gc_pause
from aotk.dialect import elementwise as ew
from aotk.dialect import gradlib as lib
from aotk.dialect import reduce as rd
from aotk.dialect import trace
from aotk.dialect.base import AotkOp
from aotk.dialect.registry import Kind, lookup
from aotk.dialect.trace import KTensor

WHERE = "K.gradients"


def gradients(loss: KTensor, variables: Sequence[Any]) -> list[KTensor | None]:
    """d(sum(loss))/d(v) for each v; None where the loss does not depend on v."""
    if not isinstance(loss, KTensor):
        raise TypeError(f"{WHERE}: loss must be a tensor, got {type(loss).__name__}")
    single = isinstance(variables, KTensor)
    targets = [variables] if single else list(variables)
    for i, v in enumerate(targets):
        if not isinstance(v, KTensor):
            raise TypeError(
                f"{WHERE}: variables[{i}] must be a tensor or variable, got {type(v).__name__}"
            )
    if not dtypes.is_float(dtypes.element_type(loss.dtype)):
        raise TypeError(f"{WHERE}: the loss must be a float tensor, got {loss.dtype}")
    if loss.ndim:
        loss = trace.emit(
            rd.ReduceSumOp, loss, where=WHERE, axes=tuple(range(loss.ndim)), keepdims=False
        )
    with gc_pause.paused():  # the backward graph is as large as the forward: see gc_pause
        cotangents = _backward(loss, {v.value for v in targets})
    return [cotangents.get(v.value) for v in targets]


def _backward(loss: KTensor, wanted: set[SSAValue]) -> dict[SSAValue, KTensor]:
    ops = list(trace.graph().block.ops)
    seed = trace.emit(ew.ConstantOp, where=WHERE, value=1.0, dtype=loss.dtype)
    return backprop(ops, {loss.value: seed}, wanted)


def backprop(
    ops: list[Operation], grads: dict[SSAValue, KTensor], sources: set[SSAValue]
) -> dict[SSAValue, KTensor]:
    """Apply, in reverse, the gradient rules of the ops of `ops` on a path from a value of
    `sources` to one with a cotangent in `grads`; return `grads` with the cotangents of
    `sources` (and of the values on those paths) added."""
    reaches = _reaching(ops, sources)
    for op in reversed(_path_ops(ops, list(grads), reaches)):
        gs = [grads.get(r) for r in op.results]
        if any(g is not None for g in gs):
            for v, c in _cotangents(op, gs, reaches):
                if v in reaches:
                    lib.accumulate(grads, v, c)
    return grads


def _cotangents(
    op: Operation, gs: list[KTensor | None], reaches: set[SSAValue]
) -> list[tuple[SSAValue, KTensor]]:
    """What `op` contributes to the cotangents of the values it uses (an operand used
    twice, as in `x * x`, contributes twice)."""
    opdef = lookup(op)  # type: ignore[arg-type]
    if opdef.grad is None:
        raise ValueError(
            f"{WHERE}: {op.name} has no gradient, but the loss depends on it through its inputs"
        )
    if opdef.kind is Kind.REGION:
        return list(opdef.grad(op, gs, backprop, reaches).items())
    assert isinstance(op, AotkOp)
    inputs = [KTensor(v) for v in op.operands]
    contributions = opdef.grad(gs[0], KTensor(op.results[0]), *inputs, **op.attrs())
    return [(v, c) for v, c in zip(op.operands, contributions, strict=True) if c is not None]


def _reaching(ops: list[Operation], sources: set[SSAValue]) -> set[SSAValue]:
    """`sources` and the values of `ops` that depend on one of them."""
    reaches: set[SSAValue] = set(sources)
    for op in ops:
        if any(v in reaches for v in trace.used_values(op)):
            reaches.update(op.results)
    return reaches


def _path_ops(
    ops: list[Operation], targets: list[SSAValue], reaches: set[SSAValue]
) -> list[Operation]:
    """The ops (of `ops`, in order) on some path from a value of `reaches` to a target."""
    needed: set[Operation] = set()
    stack = list(targets)
    while stack:
        v = stack.pop()
        owner = v.owner
        if isinstance(owner, Operation) and owner not in needed and v in reaches:
            needed.add(owner)
            stack.extend(trace.used_values(owner))
    return [op for op in ops if op in needed]


def stop_gradient(variables: Any) -> Any:
    """The same tensor(s), with no gradient flowing through."""
    from aotk.dialect.identity import StopGradientOp

    if isinstance(variables, list | tuple):
        return [stop_gradient(v) for v in variables]
    if not isinstance(variables, KTensor):
        raise TypeError(
            "K.stop_gradient: expected a tensor or a list of tensors, "
            f"got {type(variables).__name__}"
        )
    return trace.emit(StopGradientOp, variables, where="K.stop_gradient")
