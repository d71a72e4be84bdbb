"""Exported libraries for other CPUs: each inference workload exported for this host,
x86-64-v3 (AVX2 and FMA) and x86-64-v2 (SSE alone), loaded with one thread and timed
against NumPy held to the same instruction set (OpenBLAS by `OPENBLAS_CORETYPE` Haswell
or Nehalem, NumPy's own loops by `NPY_DISABLE_CPU_FEATURES`), both in one subprocess per
target, their calls alternating. Targets this CPU cannot run are left out.
Run `python -m bench.bench_export_targets [--quick]`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import check_same, measure_pair
from bench.problems import Problem

# target -> OpenBLAS's kernels and NumPy's dispatch groups left out for its instruction set
TARGETS = {
    "host": ("", ""),
    "x86-64-v3": ("Haswell", "X86_V4 AVX512_ICL AVX512_SPR"),
    "x86-64-v2": ("Nehalem", "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"),
}
REPEAT, QUICK_REPEAT = 10, 3


def _child(target: str, repeat: int) -> dict[str, list[float]]:
    """In the target's subprocess: export, check and time each workload; ms medians."""
    import aotk
    from bench.bench_workloads import inference_functions
    from bench.problems import problems

    p = problems()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, fn) in enumerate(inference_functions().items()):
            options = {} if target == "host" else {"target_cpu": target}
            exported = aotk.export(fn, Path(tmp) / str(i), "m", **options)
            out[name] = _time(name, aotk.load(exported.library, n_threads=1), p[name], repeat)
    return out


def _time(name: str, library: Any, problem: Problem, repeat: int) -> list[float]:
    """[the library's, NumPy's] ms per call, after checking the library's answer."""
    data, params = problem.data, problem.params
    check_same(name, library(data)[0], problem.answer(params))
    mine, numpy = measure_pair(lambda: library(data), lambda: problem.answer(params), repeat)
    return [mine.median * 1e3, numpy.median * 1e3]


def _runnable(target: str) -> bool:
    from aotk.aot.build import runs_here

    return target == "host" or runs_here(target)


def run(quick: bool = False) -> None:
    print("exported libraries on one thread, ms (median); NumPy with OpenBLAS's kernels")
    print("for the same instruction set; ratio = aotk / NumPy")
    print(f"{'workload':32s} {'target':10s} {'aotk':>9s} {'NumPy':>9s}  kernels   ratio")
    for target, (kernels, left_out) in TARGETS.items():
        if not _runnable(target):
            print(f"{target}: this CPU cannot run its code")
            continue
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "AOTK_NUM_THREADS": "1"}
        if kernels:
            env.update(OPENBLAS_CORETYPE=kernels, NPY_DISABLE_CPU_FEATURES=left_out)
        args = ["--child", target, str(QUICK_REPEAT if quick else REPEAT)]
        command = [sys.executable, "-m", "bench.bench_export_targets", *args]
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{target}: {done.stderr.strip()[-800:]}")
        label = kernels or "default"
        for name, (mine, numpy) in json.loads(done.stdout.splitlines()[-1]).items():
            ratio = mine / numpy
            print(f"{name:32s} {target:10s} {mine:9.3f} {numpy:9.3f}  {label:8s} {ratio:6.2f}")


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        print(json.dumps(_child(argv[1], int(argv[2]))))
    else:
        run(quick="--quick" in argv)


if __name__ == "__main__":
    main(sys.argv[1:])
