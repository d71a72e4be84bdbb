"""Lowering of `aotk.ctc_forward`: the CTC alpha recursion in log space, one row per sample.

The extended label sequence is blank, l0, blank, l1, ..., blank (2L + 1 states). Each row of
the output holds one sample's log alpha and is updated in place, frame by frame: visiting
the states from the last to the first, a state reads itself and its one or two
predecessors before they are overwritten, so no second row is needed. At the end only the
two accepting states (the last label and the trailing blank) keep their values. The
arithmetic is f64; the row keeps the dtype of the log probabilities.
"""

from __future__ import annotations

from xdsl.dialects.builtin import f64
from xdsl.ir import SSAValue

from aotk.kernels import ctc_common as cc
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compare, convert


class Sample:
    """The buffers and per-sample values one recursion step needs."""

    def __init__(self, k: Kernel, out: Buf, x: Buf, labels: Buf, b: SSAValue, row: DimV):
        self.k, self.out, self.x, self.labels = k, out, x, labels
        self.row, self.lab_row = row, k.mul(b, labels.dims[1])
        self.ninf = cc.fconst(k, cc.NEG_INF, f64)

    def alpha(self, s: DimV) -> SSAValue:
        return cc.load_f64(self.k, self.out, self.k.add(self.row, s))

    def alpha_if(self, ok: SSAValue, s: DimV) -> SSAValue:
        """alpha[s] where `ok`, else -inf; `s` is clamped so the load stays in the row."""
        return cc.sel(self.k, ok, self.alpha(cc.imax(self.k, s, 0)), self.ninf)

    def set_alpha(self, s: DimV, v: SSAValue) -> None:
        """Store an f64 value, rounded to the row's dtype."""
        v = convert(self.k.b, v, f64, self.out.elem)
        self.k.store_flat(self.out, self.k.add(self.row, s), v)

    def blank_state(self, j: SSAValue, lp_blank: SSAValue) -> None:
        """State 2j (a blank): stay, or come from label j - 1."""
        k = self.k
        s = k.mul(j, 2)
        prev = self.alpha_if(k.compare("sge", j, 1), k.sub(s, 1))
        self.set_alpha(s, cc.fadd(k, lp_blank, cc.lse(k, self.alpha(s), prev)))

    def label(self, j: DimV) -> tuple[SSAValue, SSAValue, SSAValue]:
        """Label j - 1 of the sample (j >= 1): its raw value, as an index, and whether it
        is a class (in [0, classes))."""
        k = self.k
        raw = k.load_flat(self.labels, k.add(self.lab_row, k.sub(j, 1)))
        lab_i = cc.to_index(k, raw, self.labels.elem)
        classes = self.x.dims[2]
        valid = k.both(k.compare("sge", lab_i, 0), k.compare("slt", lab_i, classes))
        return raw, lab_i, valid

    def label_lp(self, j: DimV, xrow: DimV) -> SSAValue:
        """Log probability of label j - 1 in the frame at `xrow`; -inf if not a class."""
        k = self.k
        _, lab_i, valid = self.label(j)
        col = cc.clamp(k, lab_i, 0, k.sub(self.x.dims[2], 1))
        lp_at = cc.load_f64(k, self.x, k.add(xrow, col))
        return cc.sel(k, valid, lp_at, self.ninf)

    def can_skip(self, j: DimV) -> SSAValue:
        """Whether label state 2j - 1 may be entered from 2j - 3, skipping a blank: j >= 2
        and labels j - 1 and j - 2 differ. Only for j in [1, label length]."""
        k = self.k
        last = k.sub(self.labels.dims[1], 1)
        raw = k.load_flat(self.labels, k.add(self.lab_row, cc.clamp(k, k.sub(j, 1), 0, last)))
        before = k.load_flat(self.labels, k.add(self.lab_row, cc.clamp(k, k.sub(j, 2), 0, last)))
        differs = compare(k.b, "ne", raw, before, self.labels.elem)
        return k.both(k.compare("sge", j, 2), differs)

    def label_state(self, j: SSAValue, xrow: DimV) -> None:
        """State 2j - 1 (label j - 1): stay, come from the blank before, or skip it."""
        k = self.k
        s = k.sub(k.mul(j, 2), 1)
        skip = self.alpha_if(self.can_skip(j), k.sub(s, 2))
        total = cc.lse(k, cc.lse(k, self.alpha(s), self.alpha(k.sub(s, 1))), skip)
        self.set_alpha(s, cc.fadd(k, self.label_lp(j, xrow), total))

    def frame(self, b: DimV, t: DimV, lb: DimV) -> None:
        """Advance the row across frame t of sample b, whose label length is lb."""
        k = self.k
        xrow = self.xrow(b, t)
        lp_blank = cc.load_f64(k, self.x, k.add(xrow, k.sub(self.x.dims[2], 1)))
        with k.loop(k.add(lb, 1)) as r:
            j = k.index(k.sub(lb, r))
            self.blank_state(j, lp_blank)
            cc.when(k, k.compare("sge", j, 1), lambda j=j: self.label_state(j, xrow))

    def xrow(self, b: DimV, t: DimV) -> DimV:
        """Offset of frame t of sample b in x."""
        k = self.k
        return k.mul(k.add(k.mul(b, self.x.dims[1]), t), self.x.dims[2])

    def keep_accepting(self, lb: SSAValue) -> None:
        k = self.k
        last = k.mul(lb, 2)
        with k.loop(self.out.dims[1]) as s:
            keep = k.either(k.compare("eq", s, last), k.compare("eq", s, k.sub(last, 1)))
            self.set_alpha(s, cc.sel(k, keep, self.alpha(s), self.ninf))


def lower_ctc_forward(k: Kernel, out: Buf, x: Buf, labels: Buf, il: Buf, ll: Buf) -> None:
    """out[b] = log alpha of sample b after its last frame, at the accepting states only."""
    n_time = x.dims[1]
    with k.loop(x.dims[0]) as b:
        tb = cc.clamp(k, cc.load_index(k, il, b), 0, n_time)
        lb = cc.clamp(k, cc.load_index(k, ll, b), 0, labels.dims[1])
        row = k.mul(b, out.dims[1])
        smp = Sample(k, out, x, labels, b, row)
        with k.loop(out.dims[1]) as s:
            smp.set_alpha(s, smp.ninf)
        smp.set_alpha(0, cc.fconst(k, 0.0, f64))
        with k.loop(tb) as t:
            smp.frame(b, t, lb)
        smp.keep_accepting(lb)
