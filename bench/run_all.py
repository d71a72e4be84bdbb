"""Run every benchmark: `python -m bench.run_all` from the repo root.

First the run-time table (aotk against NumPy), then the cold compile times
(`bench.compile_time`). `--no-1thread` skips the single-threaded NumPy subprocess,
`--no-compile` the compile times.
"""

from __future__ import annotations

import sys

from bench import compile_time
from bench.common import run

MODULES = ["bench.bench_elementwise", "bench.bench_mlp", "bench.bench_training"]

if __name__ == "__main__":
    run(MODULES, one_thread="--no-1thread" not in sys.argv[1:])
    if "--no-compile" not in sys.argv[1:]:
        compile_time.run()
