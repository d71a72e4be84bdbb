"""Lowering of beam search in `aotk.ctc_decode`: TensorFlow's CTC prefix beam search.

A sample keeps at most `beam_width` prefixes (beams), each with the log probability of its
alignments that end in a blank (pb) and in its last label (pl); prefixes live in a trie, so
a prefix has one node however often it leaves and re-enters the beam. Per frame, every beam
proposes itself (one more blank, or its last label repeated, plus its parent prefix's
alignments extended by that label when the parent is a beam too) and every one-label
extension that is not a beam already; the `beam_width` best proposals, in a stable order
(beam rank, then label, the beam itself last), become the new beams. As in TensorFlow, a
frame's log probabilities are taken relative to the frame's maximum. Only proposals with a
log probability above -inf enter. The scratch lives in the state tensor (ctc_decode.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import f64
from xdsl.ir import SSAValue

from aotk.kernels import ctc_common as cc
from aotk.kernels.kernel import Buf, DimV, Kernel

NODE_ARRAYS = ("lab", "par", "fch", "nsib", "slot", "dep")
BEAM_ARRAYS = ("node", "pb", "pl", "new_node", "new_pb", "new_pl", "same_pb", "same_pl")
BEAM_ARRAYS += ("top_score", "top_index")


class _Search:
    """Offsets of the scratch arrays in the state, and the code that reads and writes them."""

    def __init__(self, k: Kernel, state: Buf, x: Buf, width: int, top_paths: int):
        self.k, self.state, self.x, self.width, self.top_paths = k, state, x, width, top_paths
        self.batch, self.n_time, self.classes = x.dims
        self.blank = k.index(k.sub(self.classes, 1))
        self.base = k.mul(k.mul(self.batch, top_paths), k.add(self.n_time, 1))
        nodes = k.add(k.mul(self.n_time, width), 1)
        self.off: dict[str, DimV] = {}
        at: DimV = self.base
        for name in NODE_ARRAYS:
            self.off[name], at = at, k.add(at, nodes)
        for name in BEAM_ARRAYS:
            self.off[name], at = at, k.add(at, width)
        self.off["cand"] = at
        self.ninf = cc.fconst(k, cc.NEG_INF, f64)

    def geti(self, array: str, i: DimV) -> SSAValue:
        return cc.load_bits(self.k, self.state, self.k.add(self.off[array], i))

    def seti(self, array: str, i: DimV, v: DimV) -> None:
        cc.store_bits(self.k, self.state, self.k.add(self.off[array], i), v)

    def getf(self, array: str, i: DimV) -> SSAValue:
        return self.k.load_flat(self.state, self.k.add(self.off[array], i))

    def setf(self, array: str, i: DimV, v: SSAValue) -> None:
        self.k.store_flat(self.state, self.k.add(self.off[array], i), v)

    def total(self, j: DimV) -> SSAValue:
        return cc.lse(self.k, self.getf("pb", j), self.getf("pl", j))

    def sample(self, b: SSAValue, il: Buf) -> None:
        """Search sample b and write its paths and log probabilities."""
        k = self.k
        tb = cc.clamp(k, cc.load_index(k, il, b), 0, self.n_time)
        for name, v in zip(NODE_ARRAYS, (-1, -1, -1, -1, 0, 0), strict=True):
            self.seti(name, 0, v)  # the root: the empty prefix, beam 0
        self.seti("node", 0, 0)
        self.setf("pb", 0, cc.fconst(k, 0.0, f64))
        self.setf("pl", 0, self.ninf)

        def frame(t: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            return self.step(b, t, carried[0], carried[1])

        n = k.fold_loop(tb, [k.index(1), k.index(1)], frame)[0]
        self.write_outputs(b, n)

    def step(self, b: SSAValue, t: SSAValue, n: SSAValue, used: SSAValue) -> list[SSAValue]:
        """One frame: propose, rank, rebuild the beams. Returns (beams, trie nodes used)."""
        k = self.k
        xrow = k.mul(k.add(k.mul(b, self.n_time), t), self.classes)

        def row_max(c: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
            v = cc.load_f64(k, self.x, k.add(xrow, c))
            return [k.b.insert(arith.MaximumfOp(acc[0], v)).result]

        mx = k.fold_loop(self.classes, [self.ninf], row_max)[0]
        self.propose(n, xrow, mx)
        self.drop_existing(n)
        m = self.rank(k.mul(n, self.classes))
        used = self.rebuild(m, used)
        self.swap(n, m)
        return [m, used]

    def lp(self, xrow: DimV, c: DimV, mx: SSAValue) -> SSAValue:
        return cc.fsub(self.k, cc.load_f64(self.k, self.x, self.k.add(xrow, c)), mx)

    def propose(self, n: SSAValue, xrow: DimV, mx: SSAValue) -> None:
        """cand[j * classes + c]: beam j extended by label c; c = blank: beam j itself."""
        k = self.k
        with k.loop(n) as j:
            node, pb, pl = self.geti("node", j), self.getf("pb", j), self.getf("pl", j)
            tot = cc.lse(k, pb, pl)
            last = self.geti("lab", node)
            row = k.add(self.off["cand"], k.mul(j, self.classes))
            with k.loop(self.blank) as c:
                prev = cc.sel(k, k.compare("eq", c, last), pb, tot)
                k.store_flat(self.state, k.add(row, c), cc.fadd(k, self.lp(xrow, c, mx), prev))
            same_pb = cc.fadd(k, tot, self.lp(xrow, self.blank, mx))
            same_pl = self.same_label(node, last, pl, xrow, mx)
            self.setf("same_pb", j, same_pb)
            self.setf("same_pl", j, same_pl)
            k.store_flat(self.state, k.add(row, self.blank), cc.lse(k, same_pb, same_pl))

    def same_label(
        self, node: SSAValue, last: SSAValue, pl: SSAValue, xrow: DimV, mx: SSAValue
    ) -> SSAValue:
        """New pl of a beam: its last label again, also reached from its parent prefix."""
        k = self.k
        parent = self.geti("par", node)
        pc = cc.imax(k, parent, 0)
        i = cc.sel(k, k.compare("sge", parent, 0), self.geti("slot", pc), k.index(-1))
        ic = cc.imax(k, i, 0)
        same = k.compare("eq", last, self.geti("lab", pc))
        prev = cc.sel(k, same, self.getf("pb", ic), self.total(ic))
        pl = cc.sel(k, k.compare("sge", i, 0), cc.lse(k, pl, prev), pl)
        pl = cc.fadd(k, pl, self.lp(xrow, cc.imax(k, last, 0), mx))
        return cc.sel(k, k.compare("ne", node, 0), pl, self.ninf)

    def drop_existing(self, n: SSAValue) -> None:
        """An extension that is already a beam was merged into that beam's own proposal."""
        k = self.k
        with k.loop(n) as j:
            node = self.geti("node", j)
            parent = self.geti("par", node)
            i = cc.sel(k, k.compare("sge", parent, 0), self.geti("slot", cc.imax(k, parent, 0)), -1)

            def drop() -> None:
                q = k.add(k.mul(i, self.classes), self.geti("lab", node))
                k.store_flat(self.state, k.add(self.off["cand"], q), self.ninf)

            cc.when(k, k.compare("sge", i, 0), drop)

    def rank(self, count: DimV) -> SSAValue:
        """Keep the `width` best candidates, stably sorted, in top_score/top_index."""
        k = self.k
        last = self.width - 1

        def visit(q: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            m = carried[0]
            v = k.load_flat(self.state, k.add(self.off["cand"], q))
            beats = cc.fcmp(k, "ogt", v, self.getf("top_score", last))
            room = k.either(k.compare("slt", m, self.width), beats)
            enter = k.both(cc.fcmp(k, "ogt", v, self.ninf), room)
            return cc.if_values(k, enter, lambda: [self.insert(q, v, m)], lambda: [m])

        return k.fold_loop(count, [k.index(0)], visit)[0]

    def insert(self, q: SSAValue, v: SSAValue, m: SSAValue) -> SSAValue:
        """Insert candidate q of score v after the m kept ones it does not beat."""
        k = self.k

        def count(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            ahead = cc.fcmp(k, "oge", self.getf("top_score", i), v)
            return [cc.sel(k, ahead, k.index(k.add(carried[0], 1)), carried[0])]

        pos = k.fold_loop(m, [k.index(0)], count)[0]
        end = k.b.insert(arith.MinSIOp(k.index(m), k.index(self.width - 1))).result
        with k.loop(k.sub(end, pos)) as r:
            d = k.sub(end, r)
            self.setf("top_score", d, self.getf("top_score", k.sub(d, 1)))
            self.seti("top_index", d, self.geti("top_index", k.sub(d, 1)))
        self.setf("top_score", pos, v)
        self.seti("top_index", pos, q)
        return k.b.insert(arith.MinSIOp(k.index(k.add(m, 1)), k.index(self.width))).result

    def rebuild(self, m: SSAValue, used: SSAValue) -> SSAValue:
        """new_* beams from the kept candidates; extensions get (or find) their trie node."""
        k = self.k

        def build(r: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            q = self.geti("top_index", r)
            src = k.index(k.div(q, self.classes))
            c = k.index(k.sub(q, k.mul(src, self.classes)))
            node = self.geti("node", src)

            def itself() -> list[SSAValue]:
                return [node, carried[0], self.getf("same_pb", src), self.getf("same_pl", src)]

            def extended() -> list[SSAValue]:
                child, used2 = self.child(node, c, carried[0])
                return [child, used2, self.ninf, self.getf("top_score", r)]

            out = cc.if_values(k, k.compare("eq", c, self.blank), itself, extended)
            self.seti("new_node", r, out[0])
            self.setf("new_pb", r, out[2])
            self.setf("new_pl", r, out[3])
            return [out[1]]

        return k.fold_loop(m, [used], build)[0]

    def child(self, node: SSAValue, c: SSAValue, used: SSAValue) -> tuple[SSAValue, SSAValue]:
        """The trie node of prefix(node) + c, created if new; and the nodes now used."""
        k = self.k

        def walk(_: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            cur, found = carried
            cc_ = cc.imax(k, cur, 0)
            active = k.both(k.compare("sge", cur, 0), k.compare("slt", found, 0))
            hit = k.both(active, k.compare("eq", self.geti("lab", cc_), c))
            nxt = cc.sel(k, active, cc.sel(k, hit, cur, self.geti("nsib", cc_)), cur)
            return [nxt, cc.sel(k, hit, cur, found)]

        found = k.fold_loop(self.blank, [self.geti("fch", node), k.index(-1)], walk)[1]

        def create() -> list[SSAValue]:
            for name, v in (("lab", c), ("par", node), ("fch", -1), ("slot", -1)):
                self.seti(name, used, v)
            self.seti("nsib", used, self.geti("fch", node))
            self.seti("fch", node, used)
            self.seti("dep", used, k.add(self.geti("dep", node), 1))
            return [used, k.index(k.add(used, 1))]

        out = cc.if_values(k, k.compare("sge", found, 0), lambda: [found, used], create)
        return out[0], out[1]

    def swap(self, n: SSAValue, m: SSAValue) -> None:
        """The new beams replace the old ones; trie nodes learn their beam slot."""
        k = self.k
        with k.loop(n) as j:
            self.seti("slot", self.geti("node", j), -1)
        with k.loop(m) as r:
            node = self.geti("new_node", r)
            self.seti("node", r, node)
            self.setf("pb", r, self.getf("new_pb", r))
            self.setf("pl", r, self.getf("new_pl", r))
            self.seti("slot", node, r)

    def write_outputs(self, b: SSAValue, n: SSAValue) -> None:
        """Paths (labels from the trie, -1 padded) and log probabilities of the best beams."""
        k = self.k
        log_probs = k.mul(k.mul(self.batch, self.top_paths), self.n_time)
        with k.loop(self.top_paths) as p:
            path = k.mul(k.add(k.mul(b, self.top_paths), p), self.n_time)
            slot = k.add(log_probs, k.add(k.mul(b, self.top_paths), p))
            with k.loop(self.n_time) as t:
                k.store_flat(self.state, k.add(path, t), cc.fconst(k, -1.0, f64))

            def write() -> None:
                node = self.geti("node", p)
                depth = self.geti("dep", node)
                k.store_flat(self.state, slot, self.total(p))

                def back(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
                    at = k.add(path, k.sub(k.sub(depth, 1), i))
                    k.store_flat(self.state, at, cc.index_to_f64(k, self.geti("lab", carried[0])))
                    return [self.geti("par", carried[0])]

                k.fold_loop(depth, [node], back)

            k.if_else(
                k.compare("slt", p, n), write, lambda: k.store_flat(self.state, slot, self.ninf)
            )

    def clear(self) -> None:
        """Zero the scratch, so the state is the same whatever ran before."""
        k = self.k
        size = k.sub(k.add(self.off["cand"], k.mul(self.width, self.classes)), self.base)
        with k.loop(size) as i:
            k.store_flat(self.state, k.add(self.base, i), cc.fconst(k, 0.0, f64))


def lower_beam_search(
    k: Kernel, state: Buf, x: Buf, il: Buf, *, beam_width: int, top_paths: int
) -> None:
    """Run the beam search of every sample, one after the other, then clear the scratch."""
    search = _Search(k, state, x, beam_width, top_paths)
    with k.loop(x.dims[0]) as b:
        search.sample(b, il)
    search.clear()
