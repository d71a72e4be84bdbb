"""The table of aotk against its best peer on each workload, at one and two threads."""

from __future__ import annotations

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


def print_table(names: list[str], results: Results, notes: list[str]) -> None:
    """One row a workload: aotk and the best peer at t1 and t2, and aotk / best."""
    print("aotk and its peers, each in a subprocess pinned to t cores (ms, as above):")
    for note in notes:
        print(f"  {note}")
    head = (
        f"{'workload':30} {'aotk t1':>16} {'best peer t1':>26} {'ratio':>6}  "
        f"{'aotk t2':>16} {'best peer t2':>26} {'ratio':>6}"
    )
    print(head)
    print("-" * len(head))
    own = results.get(SELF, {})
    for name in names:
        cells = []
        for n in (1, 2):
            mine, peer = own.get(n, {}).get(name), best(results, name, n)
            if mine is None or peer is None:
                cells.append(f"{_cell(mine) if mine else '-':>16} {'-':>26} {'-':>6}")
                continue
            who, t = peer
            who = LABELS.get(who, who)
            ratio = mine.median / t.median
            cells.append(f"{_cell(mine):>16} {who[:10]:>10}{_cell(t):>16} {ratio:6.2f}")
        print(f"{name:30} {'  '.join(cells)}")
    print("ratio = aotk / the best peer (<1: aotk faster); ort = ONNX Runtime")
