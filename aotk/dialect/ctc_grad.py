"""`aotk.ctc_forward_grad`: the gradient of `aotk.ctc_forward` by the forward-backward
(alpha-beta) recursion.

The result is d(sum(g * ctc_forward(log_probs, ...))) / d(log_probs). An output of the
forward op at an accepting state f is log alpha_T(f), the log of the total probability of
the alignments ending in f; its derivative at frame t and class c is the posterior
probability that such an alignment is in a state of class c at t:
sum over states s of class c of exp(alpha_t(s) + beta_t(s) - alpha_T(f)). Outputs that are
-inf are constants, so their cotangents are ignored; frames past a sample's input length
get zeros. Lengths are clamped and invalid labels treated as in ctc.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import (
    AotkOp,
    dtype_of,
    elem_of,
    fmt_shape,
    shape_of,
    tensor,
    types_compatible,
)
from aotk.dialect.ctc import infer_forward
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.ctc_backward import lower_ctc_forward_grad, scratch_elems
from aotk.kernels.dim_arith import STATIC, Dim, DimArith

NEG_INF = float("-inf")


@irdl_op_definition
class CtcForwardGradOp(AotkOp):
    """The cotangent of ctc_forward's log_probs, (batch, time, classes), given the
    cotangent g (batch, 2 * labels + 1) of its result."""

    name = "aotk.ctc_forward_grad"
    g = operand_def(TensorType)
    log_probs = operand_def(TensorType)
    labels = operand_def(TensorType)
    input_length = operand_def(TensorType)
    label_length = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def infer_forward_grad(
    g: Attribute, x: Attribute, labels: Attribute, il: Attribute, ll: Attribute, **_: Any
) -> Attribute:
    forward = infer_forward(x, labels, il, ll)
    if not types_compatible(forward, g) and not types_compatible(g, forward):
        raise ValueError(
            f"g must be like ctc_forward's result {fmt_shape(shape_of(forward))} "
            f"{dtype_of(forward)}, got {fmt_shape(shape_of(g))} {dtype_of(g)}"
        )
    operands = [shape_of(t) for t in (g, x, labels, il, ll)]
    return tensor(elem_of(x), forward_grad_shape(STATIC, operands))


def forward_grad_shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    """log_probs's dims."""
    return list(dims[1])


def _shift(v: np.ndarray, n: int) -> np.ndarray:
    """v moved n states later (n < 0: earlier), -inf filling the gap."""
    out = np.full_like(v, NEG_INF)
    if n >= 0:
        out[n:] = v[: len(v) - n]
    else:
        out[:n] = v[-n:]
    return out


def _states(lab: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class of each state of blank, l0, blank, l1, ..., blank; whether it is a real class;
    and whether the state may be entered from two states back (skipping a blank)."""
    cls = np.full(2 * len(lab) + 1, classes - 1, np.int64)
    cls[1::2] = lab
    valid = (cls >= 0) & (cls < classes)
    skip = np.zeros(len(cls), bool)
    skip[3::2] = lab[1:] != lab[:-1]
    return cls, valid, skip


def _alphas(emit: np.ndarray, skip: np.ndarray) -> np.ndarray:
    """Log alpha after each frame: (frames, states)."""
    prev = np.full(emit.shape[1], NEG_INF)
    prev[0] = 0.0
    rows = []
    for e in emit:
        into = np.logaddexp(
            np.logaddexp(prev, _shift(prev, 1)), np.where(skip, _shift(prev, 2), NEG_INF)
        )
        prev = e + into
        rows.append(prev)
    return np.array(rows)


def _betas(emit: np.ndarray, skip: np.ndarray, final: int) -> np.ndarray:
    """Log probability of the frames after t, from each state at t to `final` at the end."""
    nxt = np.full(emit.shape[1], NEG_INF)
    nxt[final] = 0.0
    rows = [nxt]
    for e in emit[:0:-1]:
        v = e + nxt
        nxt = np.logaddexp(np.logaddexp(v, _shift(v, -1)), _shift(np.where(skip, v, NEG_INF), -2))
        rows.append(nxt)
    return np.array(rows[::-1])


def _sample_grad(g: np.ndarray, x: np.ndarray, lab: np.ndarray) -> np.ndarray:
    """The (frames, classes) cotangent of one sample's f64 log probabilities."""
    frames, classes = x.shape
    cls, valid, skip = _states(lab, classes)
    emit = np.where(valid, x[:, np.clip(cls, 0, classes - 1)], NEG_INF)
    grad = np.zeros(x.shape)
    if frames == 0:
        return grad
    alpha = _alphas(emit, skip)
    for f in sorted({2 * len(lab), max(2 * len(lab) - 1, 0)}):
        final = alpha[-1, f]
        if final == NEG_INF:
            continue
        post = g[f] * np.exp(alpha + _betas(emit, skip, f) - final)
        for s in np.flatnonzero(valid):
            grad[:, cls[s]] += post[:, s]
    return grad


def _np_forward_grad(
    g: np.ndarray, x: np.ndarray, labels: np.ndarray, il: np.ndarray, ll: np.ndarray
) -> np.ndarray:
    _, n_time, _ = x.shape
    out = np.zeros(x.shape)
    with np.errstate(all="ignore"):
        for b in range(x.shape[0]):
            tb = int(np.clip(il[b], 0, n_time))
            lb = int(np.clip(ll[b], 0, labels.shape[1]))
            lab = labels[b, :lb].astype(np.int64)
            out[b, :tb] = _sample_grad(g[b].astype(np.float64), x[b, :tb].astype(np.float64), lab)
    return out.astype(x.dtype)


register(
    OpDef(
        ir=CtcForwardGradOp,
        kind=Kind.OPAQUE,
        infer=infer_forward_grad,
        numpy=_np_forward_grad,
        lower=lower_ctc_forward_grad,
        grad=None,  # second derivatives of the CTC loss are not needed
        shape=forward_grad_shape,
        scratch=scratch_elems,
    )
)

__all__ = ["CtcForwardGradOp"]
