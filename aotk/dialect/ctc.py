"""Connectionist temporal classification: the loss's forward recursion.

`aotk.ctc_forward` runs the alpha recursion (log space) of each sample; the loss is a
composition on top of it (its gradient: the forward-backward op of ctc_grad.py). The
decoders are in ctc_decode.py. The blank is the last class. Lengths are clamped to
[0, the padded size]; a label outside [0, classes) has probability 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, Dim, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.ctc_forward import lower_ctc_forward
from aotk.kernels.dim_arith import STATIC, DimArith
from aotk.kernels.dim_arith import Dim as AnyDim

NEG_INF = float("-inf")


@irdl_op_definition
class CtcForwardOp(AotkOp):
    """Log CTC forward variables after each sample's last frame, at the accepting states
    (the last label and the trailing blank; -inf elsewhere): (batch, 2 * labels + 1)."""

    name = "aotk.ctc_forward"
    log_probs = operand_def(TensorType)
    labels = operand_def(TensorType)
    input_length = operand_def(TensorType)
    label_length = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def scores_dims(x: Attribute, name: str) -> tuple[Dim, Dim, Dim]:
    """Check a (batch, time, classes) float32/float64 tensor."""
    shape = shape_of(x)
    if len(shape) != 3:
        raise ValueError(f"{name} must be (batch, time, classes), got shape {fmt_shape(shape)}")
    if not isinstance(elem_of(x), Float32Type | Float64Type):
        raise TypeError(f"{name} must be float32 or float64, got {dtype_of(x)}")
    if shape[2] == 0:
        raise ValueError(f"{name} needs at least one class (the blank), got shape {shape}")
    return shape  # type: ignore[return-value]


def int_dims(t: Attribute, name: str, rank: int) -> tuple[Dim, ...]:
    shape = shape_of(t)
    if len(shape) != rank:
        raise ValueError(f"{name} must have rank {rank}, got shape {fmt_shape(shape)}")
    if not dtypes.is_int(elem_of(t)):
        raise TypeError(f"{name} must have an integer dtype, got {dtype_of(t)}")
    return shape


def check_batch(**dims: Dim) -> None:
    """Check that the named operands' batch sizes agree where known."""
    known = {name: d for name, d in dims.items() if d is not None}
    if len(set(known.values())) > 1:
        sizes = ", ".join(f"{name} {d}" for name, d in known.items())
        raise ValueError(f"batch sizes differ: {sizes}")


def infer_forward(x: Attribute, labels: Attribute, il: Attribute, ll: Attribute, **_: Any) -> Any:
    operands = [
        scores_dims(x, "log_probs"),
        int_dims(labels, "labels", 2),
        int_dims(il, "input_length", 1),
        int_dims(ll, "label_length", 1),
    ]
    names = ("log_probs", "labels", "input_length", "label_length")
    check_batch(**{name: d[0] for name, d in zip(names, operands, strict=True)})
    return tensor(elem_of(x), forward_shape(STATIC, operands))


def forward_shape(a: DimArith, dims: Sequence[Sequence[AnyDim]]) -> list[AnyDim]:
    """(batch, 2 * labels + 1); batch from whichever operand knows it."""
    batch = next((d[0] for d in dims if isinstance(d[0], int)), dims[0][0])
    return [batch, a.add(a.mul(dims[1][1], 2), 1)]


def log_add(a: float, b: float) -> float:
    """log(exp(a) + exp(b)), as the kernels compute it."""
    return float(_lse_v(np.float64(a), np.float64(b)))


def _lse_v(a: Any, b: Any) -> Any:
    hi, lo = np.maximum(a, b), np.minimum(a, b)
    joined = hi + np.log(1.0 + np.exp(lo - hi))
    return np.where(hi == NEG_INF, NEG_INF, joined)


def _alpha(x: np.ndarray, lab: np.ndarray, size: int) -> np.ndarray:
    """Log alpha at the accepting states after the frames of x (time, classes); f64
    arithmetic, rounded to x's dtype after each frame as the kernel stores it."""
    dt, classes, n = x.dtype, x.shape[1], len(lab)
    alpha = np.full(size, NEG_INF)
    alpha[0] = 0.0
    lp_index = np.clip(lab, 0, classes - 1)
    valid = (lab >= 0) & (lab < classes)
    skips = np.zeros(n, bool)
    skips[1:] = lab[1:] != lab[:-1]
    end = 2 * n + 1
    for row in x.astype(np.float64):
        new = alpha.copy()
        from_label = np.concatenate([[NEG_INF], alpha[1:end:2]])
        new[0:end:2] = row[classes - 1] + _lse_v(alpha[0:end:2], from_label)
        skip = np.full(n, NEG_INF)
        skip[1:] = np.where(skips[1:], alpha[1 : max(end - 2, 1) : 2], NEG_INF)
        stay = _lse_v(_lse_v(alpha[1:end:2], alpha[0 : end - 1 : 2]), skip)
        new[1:end:2] = np.where(valid, row[lp_index], NEG_INF) + stay
        alpha = new.astype(dt).astype(np.float64)
    keep = np.zeros(size, bool)
    keep[2 * n] = True
    keep[max(2 * n - 1, 0)] = True
    return np.where(keep, alpha, NEG_INF).astype(dt)


def _np_forward(x: np.ndarray, labels: np.ndarray, il: np.ndarray, ll: np.ndarray) -> np.ndarray:
    batch, n_time, _ = x.shape
    width = labels.shape[1]
    out = np.empty((batch, 2 * width + 1), x.dtype)
    with np.errstate(all="ignore"):
        for b in range(batch):
            tb = int(np.clip(il[b], 0, n_time))
            lb = int(np.clip(ll[b], 0, width))
            out[b] = _alpha(x[b, :tb], labels[b, :lb].astype(np.int64), out.shape[1])
    return out


def _grad_forward(g: Any, y: Any, x: Any, labels: Any, il: Any, ll: Any) -> tuple[Any, ...]:
    """Only the log probabilities have a gradient (ctc_grad.py)."""
    from aotk.dialect import gradlib
    from aotk.dialect.ctc_grad import CtcForwardGradOp

    return gradlib.emit(CtcForwardGradOp, g, x, labels, il, ll), None, None, None


register(
    OpDef(
        ir=CtcForwardOp,
        kind=Kind.OPAQUE,
        infer=infer_forward,
        numpy=_np_forward,
        lower=lower_ctc_forward,
        grad=_grad_forward,
        shape=forward_shape,
    )
)

__all__ = ["CtcForwardOp"]
