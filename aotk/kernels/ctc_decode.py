"""The layout of the CTC decoding state, its greedy decoder and the two readers of it.

`aotk.ctc_decode` writes one flat f64 tensor: the decoded label sequences of every sample
and path, [batch, top_paths, time], padded with -1; then their log probabilities,
[batch, top_paths]; then, for beam search only, the scratch memory of the search (the
prefix trie and the beams, shared by all samples, which run one after the other), which
the kernel zeroes when it is done. `aotk.ctc_decoded_path` and
`aotk.ctc_decoded_log_probs` read the two results out of it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.dialects.builtin import f64
from xdsl.ir import SSAValue

from aotk.kernels import ctc_common as cc
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import convert

NODE_FIELDS = 6  # label, parent, first child, next sibling, beam slot, depth
BEAM_FIELDS = 10  # see ctc_beam.Scratch


def scratch_size(
    add: Callable[..., Any], mul: Callable[..., Any], time: Any, classes: Any, width: int
) -> Any:
    """Slots of the beam search scratch: the trie of at most 1 + time * width prefixes,
    ten arrays of `width` beams and the width * classes candidate scores."""
    nodes = add(mul(time, width), 1)
    return add(add(mul(nodes, NODE_FIELDS), BEAM_FIELDS * width), mul(classes, width))


def state_size(
    add: Callable[..., Any],
    mul: Callable[..., Any],
    dims: Sequence[Any],
    greedy: bool,
    beam_width: int,
    top_paths: int,
) -> Any:
    """Total slots of the decoding state for x of dims (batch, time, classes)."""
    batch, time, classes = dims
    results = mul(mul(batch, top_paths), add(time, 1))
    if greedy:
        return results
    return add(results, scratch_size(add, mul, time, classes, beam_width))


def static_state_size(dims: Sequence[int], greedy: bool, beam_width: int, top_paths: int) -> int:
    return state_size(operator.add, operator.mul, dims, greedy, beam_width, top_paths)


def lower_greedy(k: Kernel, state: Buf, x: Buf, il: Buf) -> None:
    """Best path: the first most likely class per frame; repeats merged, blanks dropped."""
    batch, n_time, classes = x.dims
    blank = k.index(k.sub(classes, 1))
    log_probs = k.mul(batch, n_time)
    with k.loop(batch) as b:
        tb = cc.clamp(k, cc.load_index(k, il, b), 0, n_time)
        path = k.mul(b, n_time)
        with k.loop(n_time) as t:
            k.store_flat(state, k.add(path, t), cc.fconst(k, -1.0, f64))

        def frame(t: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            prev, count, acc = carried
            xrow = k.mul(k.add(k.mul(b, n_time), t), classes)
            best, arg = _row_max(k, x, xrow, classes)
            keep = k.both(k.compare("ne", arg, blank), k.compare("ne", arg, prev))
            cc.when(
                k, keep, lambda: k.store_flat(state, k.add(path, count), cc.index_to_f64(k, arg))
            )
            return [arg, cc.sel(k, keep, k.index(k.add(count, 1)), count), cc.fsub(k, acc, best)]

        inits = [k.index(-1), k.index(0), cc.fconst(k, 0.0, f64)]
        acc = k.fold_loop(tb, inits, frame)[2]
        k.store_flat(state, k.add(log_probs, b), acc)


def _row_max(k: Kernel, x: Buf, xrow: DimV, classes: DimV) -> tuple[SSAValue, SSAValue]:
    """(max, first argmax) of one frame; a NaN only wins in column 0, as in TensorFlow."""

    def step(c: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        best, arg = carried
        col = k.index(k.add(c, 1))
        v = cc.load_f64(k, x, k.add(xrow, col))
        better = cc.fcmp(k, "ogt", v, best)
        return [cc.sel(k, better, v, best), cc.sel(k, better, col, arg)]

    first = cc.load_f64(k, x, xrow)
    best, arg = k.fold_loop(k.sub(classes, 1), [first, k.index(0)], step)
    return best, arg


def lower_decoded_path(
    k: Kernel, out: Buf, state: Buf, x: Buf, *, path: int, top_paths: int
) -> None:
    """out[b, t] = label t of path `path` of sample b (int64, -1 padded)."""
    batch, n_time = x.dims[0], x.dims[1]
    with k.loop(batch) as b:
        src = k.mul(k.add(k.mul(b, top_paths), path), n_time)
        with k.loop(n_time) as t:
            v = cc.f64_to_i64(k, k.load_flat(state, k.add(src, t)))
            k.store_flat(out, k.add(k.mul(b, n_time), t), v)


def lower_decoded_log_probs(k: Kernel, out: Buf, state: Buf, x: Buf, *, top_paths: int) -> None:
    """out[b, p] = log probability of path p of sample b, in x's dtype."""
    batch, n_time = x.dims[0], x.dims[1]
    start = k.mul(k.mul(batch, top_paths), n_time)
    with k.loop(k.mul(batch, top_paths)) as i:
        v = k.load_flat(state, k.add(start, i))
        k.store_flat(out, i, convert(k.b, v, f64, out.elem))
