"""CTC loss and decoding of the Keras API, as Keras 2 computes them with TensorFlow.

`y_pred` holds softmax outputs; like Keras, these functions take `log(y_pred + epsilon)`.
The blank is the last class. The loss normalizes each frame again (TF's ctc_loss applies a
softmax to its inputs) and is +inf where no alignment exists. Decoding follows TF's
decoders, log probabilities included: greedy returns the negated sum of each frame's best
log score; beam search (without merging repeats, as Keras calls it) scores each frame
relative to its best class. float16 inputs are computed in float32 and cast back.

Shapes cannot depend on values here: decoded sequences are (samples, time_steps) padded
with -1 (Keras trims them to the longest decoded sequence), and the sparse labels hold one
entry per padded position, zero past each label's length (Keras keeps only the labels).
Lengths past the padded size are clamped (TF raises for input lengths past time_steps).
"""

from __future__ import annotations

from typing import Any

from aotk import dtypes
from aotk.backend.config import epsilon
from aotk.backend.sparse import KSparseTensor
from aotk.backend.tensors import as_tensor, cast, scalar
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import ctc, trace
from aotk.dialect import ctc_decode as decoder
from aotk.dialect import elementwise as ew
from aotk.dialect import reduce as rd
from aotk.dialect import shape as sh
from aotk.dialect import unary as un
from aotk.dialect.along_axis import CumSumOp
from aotk.dialect.trace import KTensor


def _tensor(x: Any, name: str, where: str) -> KTensor:
    try:
        return as_tensor(x, where=where)
    except TypeError:
        raise TypeError(f"{where}: {name} must be a tensor, got {type(x).__name__}") from None


def _probabilities(y_pred: Any, where: str) -> tuple[KTensor, str]:
    """y_pred as a float32/float64 tensor (samples, time_steps, num_categories), and its
    own dtype."""
    y = _tensor(y_pred, "y_pred", where)
    if y.ndim != 3:
        raise ValueError(
            f"{where}: y_pred must be (samples, time_steps, num_categories), got shape {y.shape}"
        )
    if not dtypes.is_float(dtypes.element_type(y.dtype)):
        raise TypeError(f"{where}: y_pred must be a float tensor, got dtype {y.dtype}")
    if y.shape[2] == 0:
        raise ValueError(f"{where}: y_pred needs at least one category (the blank), got 0")
    return (y if y.dtype != "float16" else cast(y, "float32")), y.dtype


def _ints(x: Any, name: str, shape: tuple[str, ...], where: str) -> KTensor:
    """An int32 tensor of the given shape (floats truncate, as Keras' to_int32 does)."""
    t = _tensor(x, name, where)
    if t.ndim != len(shape) or any(
        s == "1" and d != 1 for s, d in zip(shape, t.shape, strict=True)
    ):
        text = "(" + ", ".join(shape) + ("," if len(shape) == 1 else "") + ")"
        raise ValueError(f"{where}: {name} must have shape {text}, got shape {t.shape}")
    if t.dtype == "bool":
        raise TypeError(f"{where}: {name} must be an integer or float tensor, got dtype bool")
    return t if t.dtype == "int32" else cast(t, "int32")


def _column(x: KTensor) -> KTensor:
    """(samples, 1) -> (samples,)."""
    return trace.emit(sh.ReshapeOp, x, where="K.ctc_batch_cost", shape=(-1,))


def _check_batch(where: str, **tensors: KTensor) -> None:
    known = {name: t.shape[0] for name, t in tensors.items() if t.shape[0] is not None}
    if len(set(known.values())) > 1:
        sizes = ", ".join(f"{name} has {n}" for name, n in known.items())
        raise ValueError(f"{where}: the number of samples differs: {sizes}")


def _log_scores(y: KTensor, where: str) -> KTensor:
    """log(y_pred + epsilon), as Keras feeds TensorFlow's CTC ops."""
    shifted = trace.emit(ar.AddOp, y, scalar(epsilon(), y.dtype), where=where)
    return trace.emit(un.LogOp, shifted, where=where)


def _logsumexp(x: KTensor, axis: int, where: str) -> KTensor:
    """log(sum(exp(x), axis, keepdims)); -inf where every term is -inf."""
    top = trace.emit(rd.ReduceMaxOp, x, where=where, axes=(axis,), keepdims=True)
    none = trace.emit(cmp.EqualOp, top, scalar(float("-inf"), x.dtype), where=where)
    top = trace.emit(cmp.SelectOp, none, scalar(0.0, x.dtype), top, where=where)
    terms = trace.emit(un.ExpOp, trace.emit(ar.SubOp, x, top, where=where), where=where)
    total = trace.emit(rd.ReduceSumOp, terms, where=where, axes=(axis,), keepdims=True)
    return trace.emit(ar.AddOp, top, trace.emit(un.LogOp, total, where=where), where=where)


def ctc_batch_cost(y_true: Any, y_pred: Any, input_length: Any, label_length: Any) -> KTensor:
    """The CTC loss of each sample, (samples, 1); +inf where the labels cannot fit."""
    where = "K.ctc_batch_cost"
    y, dtype = _probabilities(y_pred, where)
    labels = _ints(y_true, "y_true", ("samples", "max_string_length"), where)
    il = _ints(input_length, "input_length", ("samples", "1"), where)
    ll = _ints(label_length, "label_length", ("samples", "1"), where)
    _check_batch(where, y_true=labels, y_pred=y, input_length=il, label_length=ll)
    scores = _log_scores(y, where)
    log_probs = trace.emit(ar.SubOp, scores, _logsumexp(scores, 2, where), where=where)
    alpha = trace.emit(ctc.CtcForwardOp, log_probs, labels, _column(il), _column(ll), where=where)
    loss = trace.emit(un.NegOp, _logsumexp(alpha, 1, where), where=where)
    return loss if loss.dtype == dtype else cast(loss, dtype)


def _check_beam(beam_width: Any, top_paths: Any, where: str) -> tuple[int, int]:
    for name, value in (("beam_width", beam_width), ("top_paths", top_paths)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where}: {name} must be an int, got {value!r}")
        if value < 1:
            raise ValueError(f"{where}: {name} must be >= 1, got {value}")
    if top_paths > beam_width:
        raise ValueError(
            f"{where}: top_paths {top_paths} is more than beam_width {beam_width} "
            "(requested more paths than the beam width)"
        )
    return beam_width, top_paths


def ctc_decode(
    y_pred: Any, input_length: Any, greedy: bool = True, beam_width: int = 100, top_paths: int = 1
) -> tuple[list[KTensor], KTensor]:
    """Decode softmax outputs: (list of top_paths (samples, time_steps) int64 label
    sequences padded with -1, (samples, top_paths) log probabilities)."""
    where = "K.ctc_decode"
    y, dtype = _probabilities(y_pred, where)
    il = _ints(input_length, "input_length", ("samples",), where)
    _check_batch(where, y_pred=y, input_length=il)
    width, paths = (1, 1) if greedy else _check_beam(beam_width, top_paths, where)
    scores = _log_scores(y, where)
    attrs = {"greedy": bool(greedy), "beam_width": width, "top_paths": paths}
    state = trace.emit(decoder.CtcDecodeOp, scores, il, where=where, **attrs)
    decoded = [
        trace.emit(decoder.CtcDecodedPathOp, state, scores, where=where, path=p, top_paths=paths)
        for p in range(paths)
    ]
    log_prob = trace.emit(decoder.CtcDecodedLogProbsOp, state, scores, where=where, top_paths=paths)
    return decoded, log_prob if log_prob.dtype == dtype else cast(log_prob, dtype)


def _positions(like: KTensor, axis: int, where: str) -> KTensor:
    """int64 index along `axis` at every position of `like`."""
    ones = trace.emit(ew.FillLikeOp, like, where=where, value=1.0, dtype="int64")
    count = trace.emit(CumSumOp, ones, where=where, axis=axis)
    return trace.emit(ar.SubOp, count, scalar(1, "int64"), where=where)


def ctc_label_dense_to_sparse(labels: Any, label_lengths: Any) -> KSparseTensor:
    """Dense (samples, max_length) labels as a sparse tensor: entry (b, j) is labels[b, j]
    for j < label_lengths[b] and 0 past it."""
    where = "K.ctc_label_dense_to_sparse"
    dense = _tensor(labels, "labels", where)
    if dense.ndim != 2:
        raise ValueError(f"{where}: labels must be (samples, max_length), got shape {dense.shape}")
    lengths = _ints(label_lengths, "label_lengths", ("samples",), where)
    _check_batch(where, labels=dense, label_lengths=lengths)
    rows, cols = _positions(dense, 0, where), _positions(dense, 1, where)
    wide = trace.emit(sh.ReshapeOp, cast(lengths, "int64"), where=where, shape=(-1, 1))
    inside = trace.emit(cmp.LessOp, cols, wide, where=where)
    zero = scalar(0, dense.dtype)
    values = trace.emit(cmp.SelectOp, inside, dense, zero, where=where)
    pairs = [trace.emit(sh.ReshapeOp, t, where=where, shape=(-1, 1)) for t in (rows, cols)]
    indices = trace.emit(sh.ConcatOp, *pairs, where=where, axis=1)
    flat = trace.emit(sh.ReshapeOp, values, where=where, shape=(-1,))
    return KSparseTensor(indices, flat, dense.shape)


__all__ = ["ctc_batch_cost", "ctc_decode", "ctc_label_dense_to_sparse"]
