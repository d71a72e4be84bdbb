"""K.ctc_batch_cost, K.ctc_decode and K.ctc_label_dense_to_sparse against NumPy written here.

Expectations are independent of aotk: the loss by enumerating every alignment (tiny T) or a
textbook alpha recursion in probability space, greedy decoding frame by frame, beam search
by enumerating every labelling (a beam wide enough never prunes) or a textbook dictionary
prefix beam search (narrow beams). Compilation dominates, so each test compiles once.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import assert_close

from aotk import backend as K

EPS = 1e-7  # K.epsilon()


def collapse(path, blank):
    """The labelling of one alignment: repeats merged, blanks dropped."""
    out, prev = [], None
    for c in path:
        if c != prev and c != blank:
            out.append(int(c))
        prev = c
    return tuple(out)


def frame_probs(y):
    """TensorFlow's per-frame softmax of log(y + eps)."""
    return (y + EPS) / (y + EPS).sum(-1, keepdims=True)


def brute_loss(y, labels):
    """-log of the total probability of the alignments of `labels`."""
    n_time, classes = y.shape
    p = frame_probs(y)
    total = 0.0
    for path in itertools.product(range(classes), repeat=n_time):
        if collapse(path, classes - 1) == tuple(labels):
            total += np.prod(p[np.arange(n_time), list(path)])
    return -np.log(total) if total > 0 else np.inf


def dp_loss(y, labels):
    """The textbook alpha recursion, in probability space."""
    p = frame_probs(y)
    blank = y.shape[1] - 1
    ext = [blank]
    for c in labels:
        ext += [int(c), blank]
    alpha = np.zeros(len(ext))
    alpha[0] = 1.0
    for t in range(len(y)):
        new = np.zeros_like(alpha)
        for s, c in enumerate(ext):
            acc = alpha[s] + (alpha[s - 1] if s >= 1 else 0.0)
            if s >= 2 and c != blank and c != ext[s - 2]:
                acc += alpha[s - 2]
            new[s] = acc * p[t, c]
        alpha = new
    total = alpha[-1] + (alpha[-2] if len(ext) > 1 else 0.0)
    return -np.log(total) if total > 0 else np.inf


def probabilities(rng, shape, dtype="float64"):
    return rng.dirichlet(np.full(shape[-1], 0.7), size=shape[:-1]).astype(dtype)


def test_ctc_batch_cost_matches_every_alignment_with_dynamic_dims(rng):
    classes = 3
    y_pred = K.placeholder((None, None, classes), dtype="float64")
    y_true = K.placeholder((None, None), dtype="int32")
    input_length = K.placeholder((None, 1), dtype="int32")
    label_length = K.placeholder((None, 1), dtype="int64")
    loss = K.ctc_batch_cost(y_true, y_pred, input_length, label_length)
    assert K.int_shape(loss) == (None, 1)
    f = K.function([y_true, y_pred, input_length, label_length], [loss])
    cases = [  # (labels, input length, label length) per sample
        ([[0, 1, 0], [1, 1, 2], [0, 0, 2], [1, 2, 2], [2, 2, 2]], [5, 5, 4, 3, 0], [2, 2, 1, 0, 0]),
        ([[1, 0], [0, 0], [1, 1]], [4, 3, 2], [2, 2, 2]),  # 0 0 needs 3 frames; 1 1 never fits
    ]
    for labels, il, ll in cases:
        y = probabilities(rng, (len(labels), 5, classes))
        labels = np.array(labels)
        got = f([labels, y, np.array(il)[:, None], np.array(ll)[:, None]])[0]
        want = [brute_loss(y[b, : il[b]], labels[b, : ll[b]]) for b in range(len(labels))]
        assert_close(got, np.array(want)[:, None])
    assert np.isinf(got[2, 0]) and np.isfinite(got[1, 0])


def test_ctc_batch_cost_dtypes_clamping_and_float_labels(rng):
    """float32 and float16 y_pred; float labels and lengths; lengths past the padding."""
    batch, n_time, classes, width = 4, 12, 5, 4
    y32 = K.placeholder((batch, n_time, classes), dtype="float32")
    y16 = K.placeholder((batch, n_time, classes), dtype="float16")
    labels = K.placeholder((batch, width), dtype="float32")
    il = K.placeholder((batch, 1), dtype="float32")
    ll = K.placeholder((batch, 1), dtype="int32")
    out32 = K.ctc_batch_cost(labels, y32, il, ll)
    out16 = K.ctc_batch_cost(labels, y16, il, ll)
    assert (K.dtype(out32), K.dtype(out16)) == ("float32", "float16")
    f = K.function([labels, y32, y16, il, ll], [out32, out16])
    y = probabilities(rng, (batch, n_time, classes))
    lab = rng.integers(0, classes - 1, (batch, width)).astype(np.float32)
    ilv = np.array([[12], [20], [7.9], [9]], np.float32)  # 20 is clamped to 12, 7.9 truncated
    llv = np.array([[4], [3], [9], [1]], np.int32)  # 9 is clamped to 4
    got32, got16 = f([lab, y.astype(np.float32), y.astype(np.float16), ilv, llv])
    t_eff, l_eff = [12, 12, 7, 9], [4, 3, 4, 1]
    want = np.array([[dp_loss(y[b, : t_eff[b]], lab[b, : l_eff[b]].astype(int))] for b in range(4)])
    np.testing.assert_allclose(got32, want, rtol=2e-5)
    want16 = [
        dp_loss(y.astype(np.float16)[b, : t_eff[b]].astype(np.float64), lab[b, : l_eff[b]])
        for b in range(4)
    ]
    np.testing.assert_allclose(got16.astype(np.float64)[:, 0], want16, rtol=2e-3)


def dp_loss_grad(y, labels, h=1e-6):
    """Central differences of the textbook loss, entry by entry."""
    grad = np.zeros_like(y)
    for idx in np.ndindex(y.shape):
        step = np.zeros_like(y)
        step[idx] = h
        grad[idx] = (dp_loss(y + step, labels) - dp_loss(y - step, labels)) / (2 * h)
    return grad


@pytest.mark.slow  # compiling the loss and its gradient twice takes about 15 s
def test_ctc_batch_cost_gradient_matches_differences_of_the_textbook_loss(rng):
    """float64 with dynamic dims and float32, one sample without any alignment (its loss
    is inf and its gradient zero) and one input length past the padding."""
    y64 = K.placeholder((None, None, 4), dtype="float64")
    y32 = K.placeholder((4, 6, 4), dtype="float32")
    labels = K.placeholder((None, 3), dtype="int32")
    il, ll = K.placeholder((None, 1), dtype="int32"), K.placeholder((None, 1), dtype="int32")
    weights = K.placeholder((None, 1), dtype="float64")
    losses = [K.ctc_batch_cost(labels, y, il, ll) for y in (y64, y32)]
    grads = [
        K.gradients(K.sum(loss * K.cast(weights, K.dtype(y))), [y])[0]
        for loss, y in zip(losses, (y64, y32), strict=True)
    ]
    f = K.function([labels, y64, y32, il, ll, weights], [*losses, *grads])
    lab = np.array([[0, 1, 1], [2, 2, 0], [1, 0, 2], [0, 1, 2]])
    ilv, llv = np.array([6, 4, 9, 2]), np.array([3, 2, 1, 3])  # sample 3 cannot fit
    y = probabilities(rng, (4, 6, 4))
    w = rng.uniform(0.5, 1.5, (4, 1))
    loss64, _, g64, g32 = f([lab, y, y.astype(np.float32), ilv[:, None], llv[:, None], w])
    want = np.zeros_like(y)
    for b in range(3):
        t = min(ilv[b], 6)
        want[b, :t] = w[b, 0] * dp_loss_grad(y[b, :t], lab[b, : llv[b]])
    assert np.isinf(loss64[3, 0]) and np.isfinite(loss64[:3]).all()
    np.testing.assert_allclose(g64, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g32, want, rtol=1e-4, atol=1e-4)


def greedy(y, length):
    """TensorFlow's best path: argmax per frame, repeats merged, blanks dropped."""
    scores = np.log(y[:length].astype(np.float64) + EPS)
    best = scores.argmax(-1)
    return collapse(best, y.shape[-1] - 1), -scores.max(-1).sum()


def dense(paths, width):
    out = np.full((len(paths), width), -1, np.int64)
    for b, p in enumerate(paths):
        out[b, : len(p)] = p
    return out


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_ctc_decode_greedy_with_dynamic_dims(rng, dtype):
    classes = 4
    y_pred = K.placeholder((None, None, classes), dtype=dtype)
    input_length = K.placeholder((None,), dtype="int32")
    decoded, log_prob = K.ctc_decode(y_pred, input_length)
    assert len(decoded) == 1 and K.int_shape(decoded[0]) == (None, None)
    assert K.int_shape(log_prob) == (None, 1) and K.dtype(log_prob) == dtype
    f = K.function([y_pred, input_length], [decoded[0], log_prob])
    for batch, n_time in [(3, 9), (5, 4)]:
        y = rng.dirichlet(np.full(classes, 0.4), size=(batch, n_time)).astype(dtype)
        y[0, 1:3] = y[0, 0]  # a repeat to merge
        lengths = rng.integers(0, n_time + 1, batch).astype(np.int32)
        lengths[0] = n_time
        got_paths, got_log_prob = f([y, lengths])
        want = [greedy(y[b], lengths[b]) for b in range(batch)]
        assert_close(got_paths, dense([w[0] for w in want], n_time))
        np.testing.assert_allclose(got_log_prob[:, 0], [w[1] for w in want], rtol=1e-6)


def every_labelling(y):
    """Each labelling's summed alignment score, with TF's per-frame max subtracted."""
    q = (y + EPS) / (y + EPS).max(-1, keepdims=True)
    n_time, classes = y.shape
    scores = {}
    for path in itertools.product(range(classes), repeat=n_time):
        key = collapse(path, classes - 1)
        scores[key] = scores.get(key, 0.0) + np.prod(q[np.arange(n_time), list(path)])
    return sorted(scores.items(), key=lambda kv: -kv[1])


def _add(table, prefix, pb, pl):
    b0, l0 = table.get(prefix, (0.0, 0.0))
    table[prefix] = (b0 + pb, l0 + pl)


def prefix_beam_search(y, width):
    """The textbook dictionary prefix beam search (probability space, scaled frames)."""
    q = (y + EPS) / (y + EPS).max(-1, keepdims=True)
    blank = y.shape[1] - 1
    beams = {(): (1.0, 0.0)}  # prefix -> (ends in blank, ends in label)
    for frame in q:
        nxt: dict = {}
        for prefix, (pb, pl) in beams.items():
            _add(nxt, prefix, (pb + pl) * frame[blank], 0.0)
            if prefix:
                _add(nxt, prefix, 0.0, pl * frame[prefix[-1]])
            for c in range(blank):
                via = pb if prefix and prefix[-1] == c else pb + pl
                _add(nxt, (*prefix, c), 0.0, via * frame[c])
        ranked = sorted(nxt.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
        beams = dict(ranked[:width])
    return [(p, np.log(b + c)) for p, (b, c) in beams.items()]


def test_ctc_decode_beam_search_is_exact_when_nothing_is_pruned(rng):
    classes, top = 3, 4
    y_pred = K.placeholder((None, None, classes), dtype="float64")
    input_length = K.placeholder((None,), dtype="int64")
    decoded, log_prob = K.ctc_decode(
        y_pred, input_length, greedy=False, beam_width=40, top_paths=top
    )
    assert len(decoded) == top and K.int_shape(log_prob) == (None, top)
    f = K.function([y_pred, input_length], [*decoded, log_prob])
    for batch, n_time in [(3, 5), (2, 3)]:
        y = rng.dirichlet(np.full(classes, 0.8), size=(batch, n_time))
        lengths = np.array([n_time, 2, 1][:batch])
        *paths, log_probs = f([y, lengths])
        for b in range(batch):
            want = every_labelling(y[b, : lengths[b]])
            want += [((), 0.0)] * (top - len(want))  # fewer labellings than paths: -inf
            for p in range(top):
                assert tuple(int(v) for v in paths[p][b] if v >= 0) == want[p][0]
                assert (paths[p][b, len(want[p][0]) :] == -1).all()
            with np.errstate(divide="ignore"):
                scores = np.log([w[1] for w in want[:top]])
            assert_close(log_probs[b], scores)


def test_ctc_decode_narrow_beams_prune_like_a_prefix_beam_search(rng):
    classes, n_time, width, top = 5, 10, 3, 2
    y_pred = K.placeholder((None, n_time, classes), dtype="float32")
    input_length = K.placeholder((None,), dtype="int32")
    decoded, log_prob = K.ctc_decode(
        y_pred, input_length, greedy=False, beam_width=width, top_paths=top
    )
    f = K.function([y_pred, input_length], [*decoded, log_prob])
    y = rng.dirichlet(np.full(classes, 0.5), size=(6, n_time)).astype(np.float32)
    lengths = np.array([10, 10, 10, 7, 4, 1], np.int32)
    *paths, log_probs = f([y, lengths])
    for b in range(6):
        want = prefix_beam_search(y[b, : lengths[b]].astype(np.float64), width)[:top]
        for p, (labels, score) in enumerate(want):
            assert tuple(int(v) for v in paths[p][b] if v >= 0) == labels
            np.testing.assert_allclose(log_probs[b, p], score, rtol=1e-5, atol=1e-6)


def test_ctc_label_dense_to_sparse_with_dynamic_dims():
    labels = K.placeholder((None, None), dtype="int32")
    lengths = K.placeholder((None,), dtype="int64")
    sparse = K.ctc_label_dense_to_sparse(labels, lengths)
    assert sparse.dense_shape == (None, None) and sparse.dtype == "int32"
    assert K.dtype(sparse.indices) == "int64"
    f = K.function([labels, lengths], [sparse.indices, sparse.values])
    for dense_labels, lens in [
        (np.array([[3, 1, 4], [1, 5, 9]], np.int32), np.array([2, 3])),
        (np.arange(1, 9, dtype=np.int32).reshape(4, 2), np.array([0, 1, 2, 5])),
    ]:
        indices, values = f([dense_labels, lens])
        rows, cols = np.indices(dense_labels.shape)
        want_indices = np.stack([rows.ravel(), cols.ravel()], 1)
        keep = cols < np.minimum(lens, dense_labels.shape[1])[:, None]
        assert_close(indices, want_indices.astype(np.int64))
        assert_close(values, np.where(keep, dense_labels, 0).ravel())
        dense_again = np.zeros(dense_labels.shape, np.int32)
        dense_again[indices[:, 0], indices[:, 1]] = values
        assert_close(dense_again, np.where(keep, dense_labels, 0))


def test_errors_name_the_function_and_argument():
    y3 = K.placeholder((2, 5, 4))
    lab = K.placeholder((2, 3), dtype="int32")
    col = K.placeholder((2, 1), dtype="int32")
    vec = K.placeholder((2,), dtype="int32")
    with pytest.raises(ValueError, match=r"K.ctc_batch_cost: the number of samples differs: .*3"):
        K.ctc_batch_cost(K.placeholder((3, 3), dtype="int32"), y3, col, col)
    with pytest.raises(ValueError, match=r"K.ctc_batch_cost: y_pred must be \(samples, time_st"):
        K.ctc_batch_cost(lab, K.placeholder((2, 5)), col, col)
    with pytest.raises(TypeError, match=r"K.ctc_batch_cost: y_pred must be a float tensor"):
        K.ctc_batch_cost(lab, K.placeholder((2, 5, 4), dtype="int32"), col, col)
    with pytest.raises(ValueError, match=r"K.ctc_batch_cost: input_length must have shape \(sa"):
        K.ctc_batch_cost(lab, y3, vec, col)
    with pytest.raises(ValueError, match=r"K.ctc_batch_cost: label_length must have shape"):
        K.ctc_batch_cost(lab, y3, col, K.placeholder((2, 2), dtype="int32"))
    with pytest.raises(ValueError, match=r"K.ctc_batch_cost: y_true must have shape"):
        K.ctc_batch_cost(vec, y3, col, col)
    with pytest.raises(ValueError, match=r"K.ctc_decode: beam_width must be >= 1, got 0"):
        K.ctc_decode(y3, vec, greedy=False, beam_width=0)
    with pytest.raises(ValueError, match=r"K.ctc_decode: top_paths 3 is more than beam_width 2"):
        K.ctc_decode(y3, vec, greedy=False, beam_width=2, top_paths=3)
    with pytest.raises(ValueError, match=r"K.ctc_decode: top_paths must be >= 1, got 0"):
        K.ctc_decode(y3, vec, greedy=False, top_paths=0)
    with pytest.raises(TypeError, match=r"K.ctc_decode: beam_width must be an int, got 2.5"):
        K.ctc_decode(y3, vec, greedy=False, beam_width=2.5)  # pyright: ignore[reportArgumentType]
    with pytest.raises(
        ValueError, match=r"K.ctc_decode: input_length must have shape \(samples,\)"
    ):
        K.ctc_decode(y3, col)
    with pytest.raises(ValueError, match=r"K.ctc_decode: the number of samples differs"):
        K.ctc_decode(y3, K.placeholder((4,), dtype="int32"))
    with pytest.raises(ValueError, match=r"K.ctc_decode: y_pred needs at least one category"):
        K.ctc_decode(K.placeholder((2, 5, 0)), vec)
    with pytest.raises(ValueError, match=r"K.ctc_label_dense_to_sparse: labels must be \(samp"):
        K.ctc_label_dense_to_sparse(vec, vec)
    with pytest.raises(ValueError, match=r"K.ctc_label_dense_to_sparse: label_lengths must have"):
        K.ctc_label_dense_to_sparse(lab, col)
    with pytest.raises(TypeError, match=r"K.ctc_label_dense_to_sparse: label_lengths must be an"):
        K.ctc_label_dense_to_sparse(lab, K.placeholder((2,), dtype="bool"))


def test_greedy_ignores_beam_arguments_and_call_time_batch_mismatch_is_an_error(rng):
    y_pred = K.placeholder((None, 4, 3))
    input_length = K.placeholder((None,), dtype="int32")
    decoded, _ = K.ctc_decode(y_pred, input_length, greedy=True, beam_width=0, top_paths=7)
    assert len(decoded) == 1
    f = K.function([y_pred, input_length], decoded)
    with pytest.raises(ValueError, match=r"batch sizes differ: x 2, input_length 3"):
        f([probabilities(rng, (2, 4, 3), "float32"), np.array([4, 4, 4], np.int32)])
