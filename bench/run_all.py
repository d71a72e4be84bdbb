"""Run every benchmark: `python -m bench.run_all` from the repo root.

First the run-time table (aotk against NumPy), then the seven workloads at one and two
threads with the machine's limits (`bench.bench_workloads`), then the cold compile times
(`bench.compile_time`), the exported libraries for other CPUs
(`bench.bench_export_targets`) and, with Keras installed, the Keras programs' first epochs
(`bench.keras_first_epoch`); the Keras LSTM steps join the first table then
(`bench.bench_keras_rnn`). `--no-1thread` skips the single-threaded NumPy subprocess of
the first table, `--no-workloads` the workloads, `--quick` gives those fewer repeats,
`--no-compile` skips both compile-time parts and the exports, `--no-keras` the Keras ones.
"""

from __future__ import annotations

import importlib.util
import sys

from bench import bench_export_targets, bench_workloads, compile_time, keras_first_epoch
from bench.common import run

MODULES = [
    "bench.bench_elementwise",
    "bench.bench_mlp",
    "bench.bench_training",
    "bench.bench_backprop",
    "bench.bench_batch_dot",
    "bench.bench_conv",
]

if __name__ == "__main__":
    with_keras = "--no-keras" not in sys.argv[1:] and importlib.util.find_spec("keras") is not None
    run(
        [*MODULES, *(["bench.bench_keras_rnn"] if with_keras else [])],
        one_thread="--no-1thread" not in sys.argv[1:],
    )
    if "--no-workloads" not in sys.argv[1:]:
        print()
        bench_workloads.run(quick="--quick" in sys.argv[1:])
    if "--no-compile" not in sys.argv[1:]:
        compile_time.run()
        print()
        bench_export_targets.run(quick="--quick" in sys.argv[1:])
        if with_keras:
            keras_first_epoch.run(list(keras_first_epoch.PROGRAMS))
