"""`AOTK_TIMING`: every pass and stage of a compile, with seconds and op counts."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np

import aotk
from aotk import backend as K
from aotk import timing
from aotk.host_code import clear_cache
from aotk.lowering import pipeline


def _graph():
    x = K.placeholder((None, 8))
    return [x], [K.tanh(K.dot(x, K.variable(np.ones((8, 4), np.float32))))]


def test_collect_records_every_pass_in_order_and_the_llvm_stages(monkeypatch, capfd):
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")  # a real compile, not a cache hit
    K.function(*_graph())  # links the micro-kernels it calls (their passes are not its own)
    clear_cache()
    with timing.collect() as records:
        K.function(*_graph())
    passes = [r.name for r in records if r.kind == "pass"]
    spec = pipeline.passes_for("llvm").split(",")
    assert passes == [p.split("{")[0] for p in spec]
    for r in records:
        assert r.seconds >= 0 and (r.kind == "stage" or (r.ops is not None and r.ops > 0))
    stages = {r.name for r in records if r.kind == "stage"}
    assert {"xdsl passes, total", "llvm-ir text", "link in process"} <= stages
    assert any(name.startswith("llvm optimize") for name in stages)
    assert "aotk-timing" not in capfd.readouterr().err  # collected, not printed


def test_the_environment_variable_prints_to_stderr_only():
    code = textwrap.dedent(
        """
        import numpy as np
        from aotk import backend as K
        x = K.placeholder((None, 3))
        K.function([x], [K.exp(x)])
        print("done")
        """
    )
    env = {**os.environ, "AOTK_TIMING": "1", "AOTK_DISK_CACHE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    lines = [line for line in done.stderr.splitlines() if line.startswith("aotk-timing: ")]
    first = lines[0].split()
    assert first[1:3] == ["pass", "aotk-simplify"] and first[-1] == "ops"
    assert any(line.split()[1:3] == ["pass", "convert-aotk-to-loops"] for line in lines)
    assert any("stage llvm optimize" in " ".join(line.split()) for line in lines)


def test_compile_counts_count_code_generation_but_not_shipped_code(monkeypatch) -> None:
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")  # a cache hit would not count
    K.function(*_graph())  # builds the thread pool's C library, if this process has not
    clear_cache()
    before = aotk.compile_counts()
    x = K.placeholder(shape=(None, 3))
    f = K.function([x], [K.tanh(x) * 3.0 - x])
    compiled = aotk.compile_counts()
    assert compiled["llvm"] >= before["llvm"] + 1 and compiled["c"] == before["c"]
    g = pickle.loads(pickle.dumps(f))
    assert aotk.compile_counts() == compiled  # linked, not compiled
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(g([xv]), f([xv]))
