"""The table of aotk against its best peer on each workload, at one and two threads."""

from __future__ import annotations

import statistics

from bench.common import Timing
from bench.peers.run import SELF, Results

LABELS = {"onnxruntime": "ort"}


def best(results: Results, name: str, threads: int) -> tuple[str, Timing] | None:
    """The peer with the lowest median on `name` at `threads`, and its timing."""
    timed = [
        (peer, runs[threads][name])
        for peer, runs in results.items()
        if peer != SELF and threads in runs and name in runs[threads]
    ]
    return min(timed, key=lambda pt: pt[1].median, default=None)


def _cell(t: Timing) -> str:
    return f"{t.median * 1e3:8.3f} ±{t.iqr / 2 * 1e3:6.3f}"


def combined(rounds: list[Results]) -> Results:
    """One timing per peer, thread count and workload: the median of the rounds'
    medians, with the rounds' extremes as its quartiles (one round: its own timing)."""
    if len(rounds) == 1:
        return rounds[0]
    keys = {
        (p, n, w) for r in rounds for p, runs in r.items() for n, ts in runs.items() for w in ts
    }
    out: Results = {}
    for peer, threads, name in keys:
        got = [_times(r, peer, threads)[name] for r in rounds if name in _times(r, peer, threads)]
        medians = sorted(t.median for t in got)
        lo, hi = min(t.lo for t in got), max(t.hi for t in got)
        merged = Timing(statistics.median(medians), medians[0], medians[-1], lo, hi)
        out.setdefault(peer, {}).setdefault(threads, {})[name] = merged
    return out


def _times(results: Results, peer: str, threads: int) -> dict[str, Timing]:
    return results.get(peer, {}).get(threads, {})


def _ratios(rounds: list[Results], name: str, threads: int, peer: str) -> list[float]:
    """aotk / `peer` on `name` in each round that timed both."""
    return [
        _times(r, SELF, threads)[name].median / _times(r, peer, threads)[name].median
        for r in rounds
        if name in _times(r, SELF, threads) and name in _times(r, peer, threads)
    ]


def print_table(names: list[str], rounds: list[Results], notes: list[str]) -> None:
    """One row a workload: aotk and the best peer at t1 and t2 (medians over rounds),
    and aotk / best, with its range over the rounds."""
    results = combined(rounds)
    print(
        f"aotk and its peers, each in a subprocess pinned to t cores (ms, as above), "
        f"{len(rounds)} interleaved round(s):"
    )
    for note in notes:
        print(f"  {note}")
    head = (
        f"{'workload':30} {'aotk t1':>16} {'best peer t1':>26} {'ratio':>15}  "
        f"{'aotk t2':>16} {'best peer t2':>26} {'ratio':>15}"
    )
    print(head)
    print("-" * len(head))
    own = results.get(SELF, {})
    for name in names:
        cells = []
        for n in (1, 2):
            mine, peer = own.get(n, {}).get(name), best(results, name, n)
            if mine is None or peer is None:
                cells.append(f"{_cell(mine) if mine else '-':>16} {'-':>26} {'-':>15}")
                continue
            who, t = peer
            ratios = _ratios(rounds, name, n, who)
            spread = f"[{min(ratios):.2f}-{max(ratios):.2f}]" if len(ratios) > 1 else ""
            ratio = f"{statistics.median(ratios):.2f} {spread}"
            label = LABELS.get(who, who)
            cells.append(f"{_cell(mine):>16} {label[:10]:>10}{_cell(t):>16} {ratio:>15}")
        print(f"{name:30} {'  '.join(cells)}")
    print(
        "ratio = aotk / the best peer (<1: aotk faster), the median of the rounds' ratios"
        " [their range]; with several rounds, ± is half the range of the rounds' medians;"
        " ort = ONNX Runtime"
    )
