"""Time one peer at one thread count (`python -m bench.peers.run PEER THREADS [--quick]`),
and `collect` every peer's timings from such subprocesses.

The child pins itself to THREADS cores before it imports its peer, whose thread settings
the parent put in the environment. It prints one JSON line: the peer's version, and for
each workload its timing or why it has none.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import ROOT, Timing, check_same, measure

PEERS = ("jax", "onnxruntime", "pytensor")
SELF = "aotk"  # timed the same way, in this interpreter
VENV_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
QUICK, REPEAT, REPEAT_SMALL = 5, 10, 100
Results = dict[str, dict[int, dict[str, Timing]]]


def peer_python() -> Path | None:
    """The peers' interpreter: AOTK_PEER_PYTHON, else .venv-peers if it was made."""
    named = os.environ.get("AOTK_PEER_PYTHON")
    if named:
        return Path(named)
    return VENV_PYTHON if VENV_PYTHON.exists() else None


def thread_env(threads: int) -> dict[str, str]:
    """The environment that holds every peer (and its BLAS) to `threads` threads."""
    n = str(threads)
    env = {**os.environ, "OMP_NUM_THREADS": n, "OPENBLAS_NUM_THREADS": n, "MKL_NUM_THREADS": n}
    env["AOTK_NUM_THREADS"] = n
    flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    if threads == 1:
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {flags}".strip()
    return env


def collect(python: Path, quick: bool, rounds: int = 1) -> tuple[list[Results], list[str]]:
    """Every peer, and aotk, at each thread count, `rounds` times over: a round runs
    them one after another, alternate rounds in the reverse order, so that each
    round's ratios compare timings taken minutes apart at most, on a machine whose
    speed drifts. Also the lines to print about them (versions, workloads a peer
    lacks or failed on)."""
    every: list[Results] = []
    notes: list[str] = []
    for r in range(rounds):
        order = (SELF, *PEERS) if r % 2 == 0 else (*reversed(PEERS), SELF)
        results: Results = {}
        for peer in order:
            for threads in (1, 2):
                out = _run_child(python, peer, threads, quick)
                if isinstance(out, str):
                    notes.append(f"{peer} t{threads}, round {r + 1}: failed: {out}")
                    continue
                times = {k: Timing(*v) for k, v in out["times"].items()}
                results.setdefault(peer, {})[threads] = times
                if threads == 1 and r == 0:
                    notes.append(f"{out['version']}: " + _skipped(out["skipped"]))
        every.append(results)
    return every, notes


def _run_child(python: Path, peer: str, threads: int, quick: bool) -> dict[str, Any] | str:
    """One child's JSON, or the end of its error output."""
    interpreter = sys.executable if peer == SELF else str(python)
    cmd = [interpreter, "-m", "bench.peers.run", peer, str(threads)]
    cmd += ["--quick"] if quick else []
    proc = subprocess.run(cmd, env=thread_env(threads), cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        return proc.stderr.strip()[-300:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _skipped(skipped: dict[str, str]) -> str:
    if not skipped:
        return "every workload"
    return "not " + "; ".join(f"{name} ({why})" for name, why in skipped.items())


def _time_peer(peer: str, threads: int, quick: bool) -> dict[str, object]:
    from bench import problems as P

    module = importlib.import_module(f"bench.peers.{peer}_peer")
    times: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}
    firsts: list[tuple[P.Problem, list[np.ndarray], object]] = []
    for problem in P.problems().values():
        call = module.build(problem, threads)
        if isinstance(call, str):
            skipped[problem.name] = call
            continue
        before = [p.copy() for p in problem.params]
        firsts.append((problem, before, _snapshot(call())))
        repeat = QUICK if quick else REPEAT_SMALL if problem.name == P.W3_1 else REPEAT
        t = measure(call, repeat)
        times[problem.name] = [t.median, t.q1, t.q3, t.lo, t.hi]
    # NumPy's answers only now: after a call its OpenBLAS threads spin on for seconds,
    # taking the second core from the timings that would follow
    for problem, before, got in firsts:
        who, want = f"{peer}: {problem.name}", problem.expected()
        if problem.train:
            P.check_step(who, before, got, want)  # type: ignore[arg-type]
        else:
            check_same(who, got, want)
    return {"version": module.version(), "times": times, "skipped": skipped}


def _snapshot(result: object) -> object:
    """NumPy copies of a call's result (an output, or a loss and weights), which the
    calls that follow may overwrite or, in JAX, donate."""
    if isinstance(result, tuple):
        loss, params = result
        return np.array(loss, dtype=np.float64), [np.array(p) for p in params]
    return np.array(result)


def main(argv: Sequence[str]) -> None:
    peer, threads = argv[0], int(argv[1])
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    print(json.dumps(_time_peer(peer, threads, "--quick" in argv)))


if __name__ == "__main__":
    main(sys.argv[1:])
