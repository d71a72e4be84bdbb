"""The CTC decoders: `aotk.ctc_decode` runs the greedy or the beam search decoder into a
flat f64 state (see `aotk/kernels/ctc_decode.py` for its layout), from which
`aotk.ctc_decoded_path` and `aotk.ctc_decoded_log_probs` read the results. The blank is
the last class; lengths are clamped to [0, the padded size].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType, f64, i64
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import AotkOp, Dim, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.ctc import NEG_INF, check_batch, int_dims, log_add, scores_dims
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.ctc_beam import lower_beam_search
from aotk.kernels.ctc_decode import (
    lower_decoded_log_probs,
    lower_decoded_path,
    lower_greedy,
    state_size,
    static_state_size,
)
from aotk.kernels.dim_arith import STATIC, DimArith
from aotk.kernels.dim_arith import Dim as AnyDim
from aotk.kernels.kernel import Buf, Kernel


@irdl_op_definition
class CtcDecodeOp(AotkOp):
    """Greedy or beam search CTC decoding of (batch, time, classes) log scores, into the
    flat f64 decoding state."""

    name = "aotk.ctc_decode"
    x = operand_def(TensorType)
    input_length = operand_def(TensorType)
    result = result_def(TensorType)
    greedy = prop_def(IntegerAttr)
    beam_width = prop_def(IntegerAttr)
    top_paths = prop_def(IntegerAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class CtcDecodedPathOp(AotkOp):
    """Path `path` of a decoding state: (batch, time) int64 labels, padded with -1."""

    name = "aotk.ctc_decoded_path"
    state = operand_def(TensorType)
    x = operand_def(TensorType)
    result = result_def(TensorType)
    path = prop_def(IntegerAttr)
    top_paths = prop_def(IntegerAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class CtcDecodedLogProbsOp(AotkOp):
    """The (batch, top_paths) log probabilities of a decoding state, in x's dtype."""

    name = "aotk.ctc_decoded_log_probs"
    state = operand_def(TensorType)
    x = operand_def(TensorType)
    result = result_def(TensorType)
    top_paths = prop_def(IntegerAttr)
    traits = traits_def(Pure())


def _check_search(greedy: bool, beam_width: int, top_paths: int) -> None:
    if beam_width < 1:
        raise ValueError(f"beam_width must be >= 1, got {beam_width}")
    if not 1 <= top_paths <= (1 if greedy else beam_width):
        limit = "1 for greedy decoding" if greedy else f"beam_width {beam_width}"
        raise ValueError(f"top_paths must be in [1, {limit}], got {top_paths}")


def infer_decode(
    x: Attribute, il: Attribute, *, greedy: bool, beam_width: int, top_paths: int, **_: Any
) -> Any:
    dims = scores_dims(x, "x")
    check_batch(x=dims[0], input_length=int_dims(il, "input_length", 1)[0])
    _check_search(greedy, beam_width, top_paths)
    search = {"greedy": greedy, "beam_width": beam_width, "top_paths": top_paths}
    return tensor(f64, decode_shape(STATIC, [dims, shape_of(il)], **search))


def decode_shape(
    a: DimArith,
    dims: Sequence[Sequence[AnyDim]],
    *,
    greedy: bool,
    beam_width: int,
    top_paths: int,
) -> list[AnyDim]:
    """The slots of the decoding state (see `kernels/ctc_decode.py`)."""
    return [state_size(a.add, a.mul, dims[0], greedy, beam_width, top_paths)]


def _check_state(state: Attribute, x: Attribute, top_paths: int) -> tuple[Dim, Dim, Dim]:
    dims = scores_dims(x, "x")
    shape = shape_of(state)
    if len(shape) != 1 or elem_of(state) != f64:
        raise TypeError(f"state must be a flat float64 decoding state, got {state}")
    if top_paths < 1:
        raise ValueError(f"top_paths must be >= 1, got {top_paths}")
    if None not in (*dims, shape[0]) and shape[0] < static_state_size(dims, True, 1, top_paths):  # type: ignore[arg-type]
        raise ValueError(f"a state of {shape[0]} slots is too small for x {fmt_shape(dims)}")
    return dims


def infer_path(state: Attribute, x: Attribute, *, path: int, top_paths: int, **_: Any) -> Any:
    dims = _check_state(state, x, top_paths)
    if not 0 <= path < top_paths:
        raise ValueError(f"path {path} is out of range for {top_paths} paths")
    return tensor(i64, path_shape(STATIC, [shape_of(state), dims]))


def path_shape(a: DimArith, dims: Sequence[Sequence[AnyDim]], **_: Any) -> list[AnyDim]:
    """(batch, time) of x."""
    return [dims[1][0], dims[1][1]]


def infer_log_probs(state: Attribute, x: Attribute, *, top_paths: int, **_: Any) -> Any:
    dims = _check_state(state, x, top_paths)
    return tensor(elem_of(x), log_probs_shape(STATIC, [shape_of(state), dims], top_paths=top_paths))


def log_probs_shape(
    a: DimArith, dims: Sequence[Sequence[AnyDim]], *, top_paths: int
) -> list[AnyDim]:
    """(batch, top_paths)."""
    return [dims[1][0], top_paths]


def _first_max(row: np.ndarray) -> int:
    """TensorFlow's RowMax: the first strictly greater value wins, starting from column 0."""
    if not np.isnan(row).any():
        return int(np.argmax(row))
    best, arg = row[0], 0
    for i in range(1, len(row)):
        if row[i] > best:
            best, arg = row[i], i
    return arg


def _greedy(x: np.ndarray) -> list[tuple[list[int], float]]:
    blank, prev, acc, out = x.shape[1] - 1, -1, 0.0, []
    for row in x.astype(np.float64):
        arg = _first_max(row)
        acc -= float(row[arg])
        if arg not in (blank, prev):
            out.append(arg)
        prev = arg
    return [(out, acc)]


Beam = tuple[tuple[int, ...], float, float]  # prefix, log p(ends in blank), log p(ends in label)


def _beam(x: np.ndarray, width: int) -> list[tuple[list[int], float]]:
    """The prefix beam search of ctc_beam.py, with the same ranking and ties."""
    classes = x.shape[1]
    blank = classes - 1
    beams: list[Beam] = [((), 0.0, NEG_INF)]
    for row in x.astype(np.float64):
        lp = row - np.max(row)
        slot = {pre: j for j, (pre, _, _) in enumerate(beams)}
        cand = np.full(len(beams) * classes, NEG_INF)
        same: list[tuple[float, float]] = []
        for j, (pre, pb, pl) in enumerate(beams):
            tot, last = log_add(pb, pl), (pre[-1] if pre else -1)
            prev = np.full(classes - 1, tot)
            if 0 <= last < classes - 1:
                prev[last] = pb
            cand[j * classes : j * classes + blank] = lp[:blank] + prev
            same_pl = NEG_INF
            if pre:
                i = slot.get(pre[:-1])
                if i is not None:
                    ppre, ppb, ppl = beams[i]
                    plast = ppre[-1] if ppre else -1
                    pl = log_add(pl, ppb if plast == last else log_add(ppb, ppl))
                same_pl = pl + float(lp[last])
            same.append((tot + float(lp[blank]), same_pl))
            cand[j * classes + blank] = log_add(*same[-1])
        for pre, _, _ in beams:
            if pre and pre[:-1] in slot:
                cand[slot[pre[:-1]] * classes + pre[-1]] = NEG_INF
        kept = [int(q) for q in np.argsort(-cand, kind="stable") if cand[q] > NEG_INF][:width]
        beams = [
            (beams[q // classes][0], *same[q // classes])
            if q % classes == blank
            else ((*beams[q // classes][0], q % classes), NEG_INF, float(cand[q]))
            for q in kept
        ]
    return [(list(pre), log_add(pb, pl)) for pre, pb, pl in beams]


def _np_decode(
    x: np.ndarray, il: np.ndarray, *, greedy: bool, beam_width: int, top_paths: int
) -> np.ndarray:
    batch, n_time, _ = x.shape
    paths = np.full((batch, top_paths, n_time), -1.0)
    log_probs = np.full((batch, top_paths), NEG_INF)
    with np.errstate(all="ignore"):
        for b in range(batch):
            frames = x[b, : int(np.clip(il[b], 0, n_time))]
            found = _greedy(frames) if greedy else _beam(frames, beam_width)
            for p, (labels, log_prob) in enumerate(found[:top_paths]):
                paths[b, p, : len(labels)] = labels
                log_probs[b, p] = log_prob
    state = np.zeros(static_state_size(x.shape, greedy, beam_width, top_paths))
    state[: paths.size] = paths.ravel()
    state[paths.size : paths.size + log_probs.size] = log_probs.ravel()
    return state


def _np_results(state: np.ndarray, x: np.ndarray, top_paths: int) -> tuple[np.ndarray, np.ndarray]:
    batch, n_time = x.shape[0], x.shape[1]
    size = batch * top_paths * n_time
    paths = state[:size].reshape(batch, top_paths, n_time)
    log_probs = state[size : size + batch * top_paths].reshape(batch, top_paths)
    return paths, log_probs


def _np_path(state: np.ndarray, x: np.ndarray, *, path: int, top_paths: int) -> np.ndarray:
    return _np_results(state, x, top_paths)[0][:, path].astype(np.int64)


def _np_log_probs(state: np.ndarray, x: np.ndarray, *, top_paths: int) -> np.ndarray:
    return _np_results(state, x, top_paths)[1].astype(x.dtype)


def _lower_decode(
    k: Kernel, state: Buf, x: Buf, il: Buf, *, greedy: bool, beam_width: int, top_paths: int
) -> None:
    if greedy:
        lower_greedy(k, state, x, il)
    else:
        lower_beam_search(k, state, x, il, beam_width=beam_width, top_paths=top_paths)


register(
    OpDef(
        ir=CtcDecodeOp,
        kind=Kind.OPAQUE,
        infer=infer_decode,
        numpy=_np_decode,
        lower=_lower_decode,
        grad=None,
        shape=decode_shape,
    )
)
register(
    OpDef(
        ir=CtcDecodedPathOp,
        kind=Kind.OPAQUE,
        infer=infer_path,
        numpy=_np_path,
        lower=lower_decoded_path,
        grad=None,
        shape=path_shape,
    )
)
register(
    OpDef(
        ir=CtcDecodedLogProbsOp,
        kind=Kind.OPAQUE,
        infer=infer_log_probs,
        numpy=_np_log_probs,
        lower=lower_decoded_log_probs,
        grad=None,
        shape=log_probs_shape,
    )
)


__all__ = ["CtcDecodeOp", "CtcDecodedLogProbsOp", "CtcDecodedPathOp"]
