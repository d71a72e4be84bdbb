"""Loops of the Keras API: K.rnn, map_fn, foldl and foldr.

The step function is traced once into the body of an `aotk.scan`, which lowers to one
`scf.for`: a 1000-step RNN is the same IR as a 10-step one. Only `unroll=True` unrolls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aotk.backend.math_ops import where
from aotk.backend.shape_ops import permute_dimensions, reshape
from aotk.backend.tensors import as_tensor, cast, zeros_like
from aotk.dialect import trace
from aotk.dialect.base import tensor
from aotk.dialect.fused import YieldOp
from aotk.dialect.scan import ScanOp, result_types
from aotk.dialect.trace import KTensor


def scan(
    body: Callable[[list[KTensor], list[KTensor]], tuple[list[KTensor], list[KTensor]]],
    sequences: Sequence[KTensor],
    inits: Sequence[KTensor],
    where_name: str = "K.rnn",
) -> tuple[list[KTensor], list[KTensor]]:
    """Trace `body(steps, carries) -> (new carries, outputs)` once into an aotk.scan."""
    step_types = [tensor(s.type.element_type, s.shape[1:]) for s in sequences]  # type: ignore[attr-defined]
    with trace.body([*step_types, *(c.type for c in inits)]) as block:
        args = [KTensor(a) for a in block.args]
        new_carries, outputs = body(args[: len(sequences)], args[len(sequences) :])
        for old, new in zip(inits, new_carries, strict=True):
            if old.dtype != new.dtype or old.ndim != new.ndim:
                raise ValueError(
                    f"{where_name}: a state of shape {old.shape} {old.dtype} became "
                    f"{new.shape} {new.dtype} in the step function"
                )
        block.add_op(YieldOp(*(v.value for v in [*new_carries, *outputs])))
    types = result_types(
        [s.type for s in sequences],  # type: ignore[misc]
        [c.type for c in inits],  # type: ignore[misc]
        [o.type for o in outputs],  # type: ignore[misc]
    )
    op = ScanOp.create(
        operands=[s.value for s in [*sequences, *inits]],
        result_types=types,
        properties={"n_seq": _int(len(sequences))},
        regions=[_region(block)],
    )
    trace.append(op)
    results = [KTensor(r) for r in op.results]
    return results[: len(inits)], results[len(inits) :]


def _int(value: int) -> Any:
    from xdsl.dialects.builtin import IntegerAttr, i64

    return IntegerAttr(value, i64)


def _region(block: Any) -> Any:
    from xdsl.ir import Region

    return Region(block)


def _time_major(x: KTensor) -> KTensor:
    return permute_dimensions(x, (1, 0, *range(2, x.ndim)))


def rnn(
    step_function: Callable[..., Any],
    inputs: Any,
    initial_states: Sequence[Any],
    go_backwards: bool = False,
    mask: Any = None,
    constants: Sequence[Any] | None = None,
    unroll: bool = False,
    input_length: int | None = None,
) -> tuple[KTensor, KTensor, list[KTensor]]:
    """Iterate `step_function` over the time axis (axis 1) of `inputs`."""
    x = as_tensor(inputs, where="K.rnn")
    if x.ndim < 3:
        raise ValueError(
            f"K.rnn: inputs must be at least 3D (samples, time, ...), got shape {x.shape}"
        )
    states = [as_tensor(s, where="K.rnn") for s in initial_states]
    if mask is not None and not states:
        raise ValueError("K.rnn: a mask needs at least one state")
    if unroll and x.shape[1] is None:
        raise ValueError("K.rnn: unroll=True needs a fixed number of time steps, got None")
    if x.shape[1] == 0:
        raise ValueError(f"K.rnn: inputs of shape {x.shape} have no time steps, expected 1 or more")
    if input_length is not None and x.shape[1] is not None and input_length != x.shape[1]:
        raise ValueError(
            f"K.rnn: input_length {input_length} does not match time axis {x.shape[1]}"
        )
    consts = list(constants or [])
    seqs = [_time_major(x)]
    if go_backwards:
        seqs = [seqs[0][::-1]]
    if mask is not None:
        m = as_tensor(mask, where="K.rnn")
        if m.ndim != 2:
            raise ValueError(f"K.rnn: mask should have shape (samples, time), got {m.shape}")
        m = _time_major(cast(m, "bool") if m.dtype != "bool" else m)
        seqs.append(m[::-1] if go_backwards else m)
    if unroll:
        return _unrolled(step_function, seqs, states, consts)
    # As the reference (and Keras's TensorFlow backend): one call on step 0 before the
    # loop. Tensors a step function makes once and keeps (a Keras cell's dropout masks)
    # are then made here, outside the loop: the same for every step, not one a step.
    # The call's own ops are dead but for the zeros of a masked output (its shape).
    sample, _ = step_function(seqs[0][0], states + consts)
    out_init = [] if mask is None else [zeros_like(sample)]

    def body(steps: list[KTensor], carries: list[KTensor]) -> tuple[list[KTensor], list[KTensor]]:
        return _step(step_function, steps, carries, consts, mask is not None)

    final, (outputs,) = scan(body, seqs, states + out_init)
    final_states = final[: len(states)]
    batch_major = _time_major(outputs)
    return _mark_phase(outputs[-1]), batch_major, final_states


def _mark_phase(last: KTensor) -> KTensor:
    """Mark the last output as using the learning phase when it does (a cell's dropout):
    Keras's RNN layer reads that to feed the phase."""
    phase = trace.graph().learning_phase
    if phase is not None and trace.depends_on(last.value, phase.value):
        last._uses_learning_phase = True
    return last


def _step(
    fn: Callable[..., Any],
    steps: list[KTensor],
    carries: list[KTensor],
    consts: list[Any],
    masked: bool,
) -> tuple[list[KTensor], list[KTensor]]:
    n_states = len(carries) - (1 if masked else 0)
    states = carries[:n_states]
    output, new_states = fn(steps[0], states + consts)
    new_states = [as_tensor(s, where="K.rnn") for s in new_states]
    if len(new_states) != n_states:
        raise ValueError(
            f"K.rnn: the step function returned {len(new_states)} states, expected {n_states}"
        )
    if not masked:
        return new_states, [output]
    m = steps[1]
    output = where(_expand(m, output), output, carries[-1], "K.rnn")
    new_states = [
        where(_expand(m, s), s, old, "K.rnn") for s, old in zip(new_states, states, strict=True)
    ]
    return [*new_states, output], [output]


def _expand(mask_t: KTensor, like: KTensor) -> KTensor:
    """(samples,) -> (samples, 1, ...) so it broadcasts against `like`."""
    return reshape(mask_t, (-1, *([1] * (like.ndim - 1))))


def _unrolled(
    fn: Callable[..., Any],
    seqs: list[KTensor],
    states: list[KTensor],
    consts: list[Any],
) -> tuple[KTensor, KTensor, list[KTensor]]:
    from aotk.backend.data_ops import stack

    steps = range(seqs[0].shape[0] or 0)
    masked = len(seqs) > 1
    carries = list(states)
    if masked:
        sample, _ = fn(seqs[0][0], states + consts)
        carries.append(zeros_like(sample))
    outputs = []
    for t in steps:
        carries, (output,) = _step(fn, [s[t] for s in seqs], carries, consts, masked)
        outputs.append(output)
    return _mark_phase(outputs[-1]), stack(outputs, axis=1), carries[: len(states)]


def map_fn(
    fn: Callable[[KTensor], KTensor], elems: Any, name: str | None = None, dtype: Any = None
) -> KTensor:
    """fn applied to each element of `elems` along its first axis, stacked."""
    xs = _sequence(elems, "K.map_fn")
    _, (out,) = scan(
        lambda steps, carries: ([], [as_tensor(fn(steps[0]), where="K.map_fn")]),
        [xs],
        [],
        where_name="K.map_fn",
    )
    return out if dtype is None else cast(out, dtype)


def _sequence(elems: Any, where: str) -> KTensor:
    """`elems` as a tensor whose first axis is steps."""
    xs = as_tensor(elems, where=where)
    if xs.ndim == 0:
        raise ValueError(f"{where}: elems must have rank >= 1 (steps on axis 0), got a scalar")
    return xs


def _fold(
    fn: Callable[[KTensor, KTensor], KTensor],
    elems: Any,
    initializer: Any,
    reverse: bool,
    where_name: str,
) -> KTensor:
    xs = _sequence(elems, where_name)
    if reverse:
        xs = xs[::-1]
    if initializer is None:
        if xs.shape[0] == 0:
            raise ValueError(f"{where_name}: elems is empty and there is no initializer")
        acc, xs = xs[0], xs[1:]
    else:
        acc = as_tensor(initializer, xs.dtype, where_name)

    def body(steps: list[KTensor], carries: list[KTensor]) -> tuple[list[KTensor], list[KTensor]]:
        return [as_tensor(fn(carries[0], steps[0]), where=where_name)], []

    (final,), _ = scan(body, [xs], [acc], where_name=where_name)
    return final


def foldl(
    fn: Callable[[KTensor, KTensor], KTensor],
    elems: Any,
    initializer: Any = None,
    name: str | None = None,
) -> KTensor:
    """Reduce `elems` along its first axis from the left: acc = fn(acc, x)."""
    return _fold(fn, elems, initializer, False, "K.foldl")


def foldr(
    fn: Callable[[KTensor, KTensor], KTensor],
    elems: Any,
    initializer: Any = None,
    name: str | None = None,
) -> KTensor:
    """Reduce `elems` along its first axis from the right: acc = fn(acc, x)."""
    return _fold(fn, elems, initializer, True, "K.foldr")


__all__ = ["foldl", "foldr", "map_fn", "rnn"]
