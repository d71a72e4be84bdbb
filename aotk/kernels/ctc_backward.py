"""Lowering of `aotk.ctc_forward_grad`: the CTC forward-backward recursion, in log space.

Per sample, the alpha recursion of ctc_forward.py fills a table in f64 scratch: row 0 is
the start, row t + 1 the log alpha after frame t (each row starts as a copy of the one
before and is advanced in place). Then, from each accepting state f whose final alpha is
not -inf, the beta recursion runs backwards in one f64 row: at frame t the row holds
beta_t, the posterior g[f] * exp(alpha_t + beta_t - alpha_final(f)) of each state is added
to its class in an f64 (time, classes) accumulator, and the row steps back across frame t
in place, visiting the states from the first to the last (a state reads itself and its
successors before they are overwritten). The accumulator is then stored in the output,
zeros past the input length included. Scratch is counted in the result's elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import math, ptr
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType, f64
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import ctc_common as cc
from aotk.kernels.ctc_forward import Sample
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import convert


def scratch_elems(k: Kernel, ins: Sequence[Buf], result_type: Attribute, **_: Any) -> DimV:
    """Result elements holding the alpha table, the beta row and the accumulator in f64."""
    x, labels = ins[1], ins[2]
    size = k.add(k.mul(labels.dims[1], 2), 1)
    slots = k.add(k.mul(k.add(x.dims[1], 2), size), k.mul(x.dims[1], x.dims[2]))
    assert isinstance(result_type, TensorType)
    return k.mul(slots, 8 // dtypes.byte_size(result_type.element_type))


def _as_f64(k: Kernel, buf: Buf) -> Buf:
    """The same memory as a flat f64 buffer (the workspace is 64-byte aligned)."""
    if buf.elem == f64:
        return buf
    raw = k.b.insert(ptr.ToPtrOp(buf.mem)).res
    mem = k.b.insert(ptr.FromPtrOp(raw, MemRefType(f64, [DYNAMIC_INDEX]))).res
    return Buf(mem, (k.div(buf.dims[0], 2),), f64)


class _Backward:
    """One sample's backward pass: the beta row, the alpha table and the accumulator."""

    def __init__(self, smp: Sample, g: Buf, beta: Buf, acc: Buf, b: SSAValue, tb: DimV, lb: DimV):
        self.smp, self.k, self.g, self.beta, self.acc = smp, smp.k, g, beta, acc
        self.b, self.tb, self.lb = b, tb, lb
        self.size = g.dims[1]

    def from_state(self, f: DimV) -> None:
        """Add the posteriors of the alignments ending in state f, weighted by g[b, f]."""
        k, smp = self.k, self.smp
        final = cc.load_f64(k, smp.out, k.add(k.mul(self.tb, self.size), f))
        weight = cc.load_f64(k, self.g, k.add(k.mul(self.b, self.size), f))

        def run() -> None:
            with k.loop(k.add(k.mul(self.lb, 2), 1)) as s:
                k.store_flat(self.beta, s, smp.ninf)
            k.store_flat(self.beta, f, cc.fconst(k, 0.0, f64))
            with k.loop(self.tb) as r:
                t = k.sub(k.sub(self.tb, 1), r)
                self.collect(t, final, weight)
                self.step_back(t)

        # "une": NaN inputs run (and give NaN) rather than being taken for -inf
        cc.when(k, cc.fcmp(k, "une", final, smp.ninf), run)

    def collect(self, t: DimV, final: SSAValue, weight: SSAValue) -> None:
        """acc[t, class of s] += weight * exp(alpha_t(s) + beta_t(s) - final), every s."""
        k, smp = self.k, self.smp
        row = k.mul(k.add(t, 1), self.size)
        classes = smp.x.dims[2]

        def add(s: DimV, c: DimV) -> None:
            log_post = cc.fsub(k, cc.fadd(k, smp.alpha(k.add(row, s)), self.beta_at(s)), final)
            post = k.b.insert(math.ExpOp(log_post)).result
            at = k.add(k.mul(t, classes), c)
            term = cc.fadd(k, k.load_flat(self.acc, at), cc.fmul(k, weight, post))
            k.store_flat(self.acc, at, term)

        with k.loop(k.add(self.lb, 1)) as j:
            add(k.mul(j, 2), k.sub(classes, 1))

            def label() -> None:
                _, lab_i, valid = smp.label(j)
                cc.when(k, valid, lambda: add(k.sub(k.mul(j, 2), 1), lab_i))

            cc.when(k, k.compare("sge", j, 1), label)

    def step_back(self, t: DimV) -> None:
        """beta_{t-1}(s) = log sum over successors s' of exp(lp_t(s') + beta_t(s'))."""
        k, smp = self.k, self.smp
        xrow = smp.xrow(self.b, t)
        lp_blank = cc.load_f64(k, smp.x, k.add(xrow, k.sub(smp.x.dims[2], 1)))
        with k.loop(k.add(self.lb, 1)) as j:
            blank = cc.fadd(k, lp_blank, self.beta_at(k.mul(j, 2)))
            has_next = k.compare("sle", k.add(j, 1), self.lb)
            nxt = self.label_term(k.add(j, 1), xrow, has_next)

            def label_state() -> None:
                s = k.sub(k.mul(j, 2), 1)
                own = cc.fadd(k, smp.label_lp(j, xrow), self.beta_at(s))
                # j >= 1 here, so can_skip reads labels in range even without a next one
                may_skip = k.both(has_next, smp.can_skip(k.add(j, 1)))
                skip = cc.sel(k, may_skip, nxt, smp.ninf)
                k.store_flat(self.beta, s, cc.lse(k, cc.lse(k, own, blank), skip))

            cc.when(k, k.compare("sge", j, 1), label_state)
            k.store_flat(self.beta, k.mul(j, 2), cc.lse(k, blank, nxt))

    def label_term(self, j: DimV, xrow: DimV, exists: SSAValue) -> SSAValue:
        """lp + beta of label state 2j - 1 where it `exists`, else -inf; labels past the
        length are never read."""
        k, smp = self.k, self.smp

        def term() -> list[SSAValue]:
            return [cc.fadd(k, smp.label_lp(j, xrow), self.beta_at(k.sub(k.mul(j, 2), 1)))]

        return cc.if_values(k, exists, term, lambda: [smp.ninf])[0]

    def beta_at(self, s: DimV) -> SSAValue:
        return self.k.load_flat(self.beta, s)


def _fill_alphas(smp: Sample, b: SSAValue, tb: DimV, lb: DimV, size: DimV) -> None:
    """Row t + 1 of the table = log alpha after frame t; row 0 = the start."""
    k = smp.k
    with k.loop(size) as s:
        smp.set_alpha(s, smp.ninf)
    smp.set_alpha(0, cc.fconst(k, 0.0, f64))
    used = k.add(k.mul(lb, 2), 1)
    with k.loop(tb) as t:
        before = k.mul(t, size)
        smp.row = k.add(before, size)
        with k.loop(used) as s:
            k.store_flat(smp.out, k.add(smp.row, s), k.load_flat(smp.out, k.add(before, s)))
        smp.frame(b, t, lb)
    smp.row = 0


def lower_ctc_forward_grad(
    k: Kernel, out: Buf, g: Buf, x: Buf, labels: Buf, il: Buf, ll: Buf, *, scratch: Buf
) -> None:
    """out[b] = the cotangent of sample b's log probabilities."""
    n_time, classes = x.dims[1], x.dims[2]
    size = g.dims[1]
    mem = _as_f64(k, scratch)
    table = k.view(mem, 0, [k.add(n_time, 1), size])
    beta = k.view(mem, k.mul(k.add(n_time, 1), size), [size])
    acc = k.view(mem, k.mul(k.add(n_time, 2), size), [n_time, classes])
    per_sample = k.mul(n_time, classes)
    with k.loop(x.dims[0]) as b:
        tb = cc.clamp(k, cc.load_index(k, il, b), 0, n_time)
        lb = cc.clamp(k, cc.load_index(k, ll, b), 0, labels.dims[1])
        smp = Sample(k, table, x, labels, b, 0)
        _fill_alphas(smp, b, tb, lb, size)
        with k.loop(per_sample) as i:
            k.store_flat(acc, i, cc.fconst(k, 0.0, f64))
        back = _Backward(smp, g, beta, acc, b, tb, lb)
        # the accepting states: the trailing blank 2lb, and the last label 2lb - 1 if any
        with k.loop(k.add(k.min(lb, 1), 1)) as q:
            back.from_state(k.sub(k.mul(lb, 2), q))
        base = k.mul(b, per_sample)
        with k.loop(per_sample) as i:
            value = convert(k.b, k.load_flat(acc, i), f64, out.elem)
            k.store_flat(out, k.add(base, i), value)
