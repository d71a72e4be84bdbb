"""examples/dask_scoring.py: a compiled function and an exported library scored on a Dask
cluster of worker processes, identical to a local run, with nothing compiled on a worker,
also when a worker dies mid-run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.distributed", reason="needs the dask extra")
pytestmark = [pytest.mark.slow, pytest.mark.aot]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "dask_scoring.py"


def _run(*args: str) -> dict:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _assert_scored_by_shipped_code(figures: dict, partitions: int, rows: int) -> None:
    assert figures["ok"] is True
    assert figures["rows"] == partitions * rows and figures["partitions"] == partitions
    assert figures["function_identical"] is True and figures["library_identical"] is True
    counts = figures["worker_compiles"]
    assert len(counts) == 2, counts  # both workers answered (the killed one restarted)
    assert all(c == {"llvm": 0, "c": 0} for c in counts.values()), counts


def test_64_partitions_match_a_local_run_also_when_a_worker_is_killed() -> None:
    # one cluster run covers both: the shipped function's run loses a worker mid-run
    # (retried), the shipped library's run that follows goes undisturbed
    figures = _run("--partitions", "64", "--rows", "512", "--kill-one")
    assert figures["worker_killed"] is True
    _assert_scored_by_shipped_code(figures, 64, 512)
