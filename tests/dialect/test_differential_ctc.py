"""Compiled == interpreted for the CTC primitives, over dtypes, dynamic dims and edge cases.

Inputs include lengths past the padding and below zero, labels outside [0, classes), NaN
frames, frames whose classes tie (the beam search's stable order must agree), and beams
narrow enough to prune. One compiled function per test serves two calls of different sizes.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import check_one_op, emit, placeholder, run_both

from aotk import dtypes
from aotk.dialect import REGISTRY, ctc, ctc_decode, ctc_grad
from aotk.dialect.base import tensor

COVERED_OPS = {
    ctc.CtcForwardOp,
    ctc_decode.CtcDecodeOp,
    ctc_decode.CtcDecodedPathOp,
    ctc_decode.CtcDecodedLogProbsOp,
    ctc_grad.CtcForwardGradOp,
}


def log_scores(rng, shape, dtype):
    """Log softmax outputs, as the K functions feed the primitives."""
    return np.log(rng.dirichlet(np.full(shape[-1], 0.6), size=shape[:-1])).astype(dtype)


def test_ctc_forward(rng):
    # (x dtype, labels dtype, lengths dtypes, x shape, labels shape); None dims are dynamic
    specs = [
        ("float32", "int32", ("int32", "int64"), (None, None, 5), (None, None)),
        ("float64", "uint8", ("int8", "int16"), (None, 7, 4), (None, 3)),
        ("float64", "int64", ("uint8", "int32"), (3, 6, 3), (3, 4)),
    ]
    inputs, outputs = [], []
    for i, (xd, ld, (id_, lld), xs, ls) in enumerate(specs):
        xs_ = [placeholder(xs, xd, f"x{i}"), placeholder(ls, ld, f"lab{i}")]
        xs_ += [placeholder((xs[0],), id_, f"il{i}"), placeholder((xs[0],), lld, f"ll{i}")]
        inputs += xs_
        outputs.append(emit(ctc.CtcForwardOp, *xs_))
    assert outputs[0].shape == (None, None) and outputs[2].shape == (3, 9)
    calls = []
    for batch, n_time, width in [(4, 8, 3), (2, 5, 6)]:
        arrays = []
        for xd, ld, (id_, lld), xs, ls in specs:
            b, t = xs[0] or batch, xs[1] or n_time
            w, classes = ls[1] or width, xs[2]
            low = 0 if ld == "uint8" else -1
            labels = rng.integers(low, classes + 1, (b, w))  # classes itself is invalid
            labels[0, :2] = [1, 1]  # a repeat needs a blank between
            il = rng.integers(0 if id_ == "uint8" else -2, t + 3, b)
            ll = rng.integers(0 if lld == "uint8" else -1, w + 2, b)
            il[0], ll[0] = t, 2
            arrays += [log_scores(rng, (b, t, classes), xd), labels.astype(ld)]
            arrays += [il.astype(id_), ll.astype(lld)]
        calls.append(arrays)
    run_both(inputs, outputs, calls)


def test_ctc_forward_grad(rng):
    # (x dtype, labels dtype, lengths dtype, x shape, labels shape); None dims are dynamic
    specs = [
        ("float32", "int32", "int64", (None, None, 4), (None, None)),
        ("float64", "int64", "int8", (5, 6, 3), (5, 3)),
    ]
    inputs, outputs = [], []
    for i, (xd, ld, nd, xs, ls) in enumerate(specs):
        width = None if ls[1] is None else 2 * ls[1] + 1
        ins = [placeholder((xs[0], width), xd, f"g{i}"), placeholder(xs, xd, f"x{i}")]
        ins += [placeholder(ls, ld, f"lab{i}")]
        ins += [placeholder((xs[0],), nd, f"{name}{i}") for name in ("il", "ll")]
        inputs += ins
        outputs.append(emit(ctc_grad.CtcForwardGradOp, *ins))
    calls = []
    for batch, n_time, width in [(5, 7, 3), (2, 4, 0)]:
        arrays = []
        for xd, ld, nd, xs, ls in specs:
            b, t, w, classes = xs[0] or batch, xs[1] or n_time, ls[1] or width, xs[2]
            labels = rng.integers(-1, classes + 1, (b, w))  # -1 and classes are invalid
            labels[0, :2] = [1, 1][:w]  # a repeat: no skip
            il, ll = rng.integers(-2, t + 3, b), rng.integers(-1, w + 2, b)
            il[:2], ll[:2] = t, (min(w, 2), 0)
            arrays += [rng.standard_normal((b, 2 * w + 1)).astype(xd)]
            arrays += [log_scores(rng, (b, t, classes), xd), labels.astype(ld)]
            arrays += [il.astype(nd), ll.astype(nd)]
        calls.append(arrays)
    run_both(inputs, outputs, calls)


def _alignments_grad(x, labels, ends_in_blank):
    """d log(total probability of the alignments of `labels` ending in a blank or not) / dx,
    by enumerating every path."""
    n_time, classes = x.shape
    total, grad = 0.0, np.zeros_like(x)
    for path in itertools.product(range(classes), repeat=n_time):
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in merged if c != classes - 1] != list(labels):
            continue
        if labels and (path[-1] == classes - 1) != ends_in_blank:
            continue
        p = np.exp(x[np.arange(n_time), list(path)].sum())
        total += p
        grad[np.arange(n_time), list(path)] += p
    return grad / total if total > 0 else grad


@pytest.mark.parametrize("labels", [[0, 1], [1, 1], [1, 0, 1], [], [0, 5], [0, 1, 0, 1]])
def test_ctc_forward_grad_oracle_against_every_alignment(rng, labels):
    x = log_scores(rng, (1, 5, 3), "float64")
    g = rng.standard_normal((1, 2 * len(labels) + 1))
    lab = np.array([labels], np.int64).reshape(1, len(labels))
    got = REGISTRY[ctc_grad.CtcForwardGradOp].numpy(g, x, lab, np.array([5]), np.array([9]))
    n = len(labels)
    want = g[0, 2 * n] * _alignments_grad(x[0], labels, True)
    if n:
        want += g[0, 2 * n - 1] * _alignments_grad(x[0], labels, False)
    np.testing.assert_allclose(got[0], want, rtol=1e-12, atol=1e-14)


def test_ctc_forward_grad_by_hand():
    # classes (0, blank); label [0]; accepting states 1 (ends in 0) and 2 (ends in a blank).
    # One frame: only the path "0", which ends in state 1. Two frames: "0b" ends in state
    # 2; "00" and "b0" in state 1, and frame 0 is "0" with probability 0.6 / (0.6 + 0.4).
    x = np.log(np.array([[[0.6, 0.4], [0.3, 0.7], [0.5, 0.5]]] * 2))
    g = np.array([[7.0, 2.0, 9.0], [5.0, 2.0, 3.0]])
    specs = [((2, 3), "float64"), ((2, 3, 2), "float64"), ((2, 1), "int32")]
    specs += [((2,), "int32"), ((2,), "int32")]
    lengths = [np.array([1, 2], np.int32), np.array([1, 1], np.int32)]
    arrays = [g, x, np.zeros((2, 1), np.int32), *lengths]
    [got] = check_one_op(ctc_grad.CtcForwardGradOp, specs, arrays)
    want = [[[2.0, 0.0], [0.0, 0.0], [0.0, 0.0]], [[3 + 2 * 0.6, 2 * 0.4], [2.0, 3.0], [0.0, 0.0]]]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_ctc_greedy_decode(rng):
    x32 = placeholder((None, None, 4), "float32", "x32")
    il32 = placeholder((None,), "int64", "il32")
    x64 = placeholder((3, 5, 6), "float64", "x64")
    il64 = placeholder((3,), "int8", "il64")
    outputs = []
    for x, il in [(x32, il32), (x64, il64)]:
        state = emit(ctc_decode.CtcDecodeOp, x, il, greedy=True, beam_width=1, top_paths=1)
        outputs += [state, emit(ctc_decode.CtcDecodedPathOp, state, x, path=0, top_paths=1)]
        outputs.append(emit(ctc_decode.CtcDecodedLogProbsOp, state, x, top_paths=1))
    calls = []
    for batch, n_time in [(3, 9), (5, 2)]:
        a = log_scores(rng, (batch, n_time, 4), "float32")
        a[0, 1] = np.nan  # NaN frame: RowMax keeps column 0 unless it is NaN itself
        a[1, 0, 0] = np.nan
        b = log_scores(rng, (3, 5, 6), "float64")
        b[0, :, :] = b[0, 0, :]  # one class all along: merged into one label
        il_a = rng.integers(-1, n_time + 2, batch)
        calls.append([a, il_a, b, np.array([5, 9, 0], np.int8)])
    run_both([x32, il32, x64, il64], outputs, calls)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_beam_search_decode(rng, dtype):
    x = placeholder((None, None, 4), dtype, "x")
    il = placeholder((None,), "int32", "il")
    outputs = []
    for width, top in [(2, 2), (6, 3)]:
        state = emit(ctc_decode.CtcDecodeOp, x, il, greedy=False, beam_width=width, top_paths=top)
        outputs.append(state)
        outputs += [
            emit(ctc_decode.CtcDecodedPathOp, state, x, path=p, top_paths=top) for p in range(top)
        ]
        outputs.append(emit(ctc_decode.CtcDecodedLogProbsOp, state, x, top_paths=top))
    calls = []
    for batch, n_time in [(4, 9), (3, 4)]:
        a = log_scores(rng, (batch, n_time, 4), dtype)
        a[1] = np.log(0.25)  # every class ties in every frame
        a[2, 1] = a[2, 0]
        il_a = np.array([n_time, n_time, n_time + 3, 0][:batch], np.int32)
        calls.append([a, il_a])
    f = run_both([x, il], outputs, calls)
    log_probs = f(calls[0])[-1]
    assert np.isneginf(log_probs[3, 1:]).all() and log_probs[3, 0] == 0  # no frames: ""


def test_covered_ops_are_registered():
    assert set(REGISTRY) >= COVERED_OPS


def test_infer_rules_reject_bad_operands():
    f32, f16 = dtypes.element_type("float32"), dtypes.element_type("float16")
    i32, f64 = dtypes.element_type("int32"), dtypes.element_type("float64")
    x, vec = tensor(f32, (2, 5, 4)), tensor(i32, (2,))
    forward = ctc.infer_forward
    with pytest.raises(TypeError, match="log_probs must be float32 or float64, got float16"):
        forward(tensor(f16, (2, 5, 4)), tensor(i32, (2, 3)), vec, vec)
    with pytest.raises(TypeError, match="labels must have an integer dtype, got float32"):
        forward(x, tensor(f32, (2, 3)), vec, vec)
    with pytest.raises(ValueError, match="batch sizes differ: log_probs 2, labels 3"):
        forward(x, tensor(i32, (3, 3)), vec, vec)
    with pytest.raises(ValueError, match=r"g must be like ctc_forward's result \(2, 7\)"):
        ctc_grad.infer_forward_grad(tensor(f32, (2, 5)), x, tensor(i32, (2, 3)), vec, vec)
    with pytest.raises(ValueError, match=r"log_probs needs at least one class"):
        forward(tensor(f32, (2, 5, 0)), tensor(i32, (2, 3)), vec, vec)
    with pytest.raises(ValueError, match=r"top_paths must be in \[1, beam_width 2\], got 3"):
        ctc_decode.infer_decode(x, vec, greedy=False, beam_width=2, top_paths=3)
    with pytest.raises(ValueError, match=r"top_paths must be in \[1, 1 for greedy decoding\]"):
        ctc_decode.infer_decode(x, vec, greedy=True, beam_width=1, top_paths=2)
    with pytest.raises(ValueError, match="a state of 4 slots is too small"):
        ctc_decode.infer_path(tensor(f64, (4,)), x, path=0, top_paths=1)
    with pytest.raises(ValueError, match="path 2 is out of range for 2 paths"):
        ctc_decode.infer_path(tensor(f64, (None,)), x, path=2, top_paths=2)
    assert ctc_decode.infer_decode(x, vec, greedy=True, beam_width=1, top_paths=1) == tensor(
        f64, (12,)
    )
