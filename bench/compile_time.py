"""Cold compile time: seconds per stage and IR op counts for the graphs of `workloads`.

Every compile runs in a fresh process with the compile cache off (`AOTK_DISK_CACHE=0`),
so nothing of an earlier compile is reused; the medians of `REPEAT` processes are shown,
with the spread (max - min). "export" is `aotk.export` of the compiled function after it,
in the same process: its code optimized again for the library, the runtime compiled,
linked. The micro-kernel library is built once first, as on a user's first run, into a
cache directory private to this benchmark, and its one-time cost is printed apart. Also
measured: `import aotk.backend` in a fresh interpreter, and the first compile of W3 and
W4 on a machine (an empty cache, so with the micro-kernels they call), with the process
that helps build those (`aotk.micro_kernel_helper`) and without; and Keras applications
(`KERAS_MODELS`, 64 x 64 inputs, 10 classes, no weights): their first `predict_on_batch`
and `train_on_batch`, each compiling one function, with the seconds the cyclic collector
ran during each.
Run with `python -m bench.compile_time` (it is part of `python -m bench.run_all`).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.workloads import GRAPHS

REPEAT = 3
IMPORT_REPEAT = 5
FIRST_ON_A_MACHINE = ("W3 MLP inference", "W4 MLP SGD step")
KERAS_MODELS = ("MobileNetV2", "ResNet50")


def cold_child(module: str, args: list[str], cache: str, **env: str) -> Any:
    """Run `python -m module *args` in a fresh process with the compile cache off (and
    `cache` as the cache directory); return the JSON of its last line of output."""
    child_env = {**os.environ, "AOTK_DISK_CACHE": "0", "AOTK_CACHE_DIR": cache, **env}
    child_env.pop("AOTK_TIMING", None)
    command = [sys.executable, "-m", module, *args]
    proc = subprocess.run(command, capture_output=True, text=True, env=child_env)
    if proc.returncode != 0:
        raise RuntimeError(f"{module} {args}: {proc.stderr.strip()[-600:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _child(args: list[str], cache: str) -> dict[str, Any]:
    return cold_child("bench.compile_time", args, cache)


def compile_one(name: str) -> dict[str, Any]:
    """In this (fresh) process: trace and compile one graph, with per-stage records."""
    import aotk
    from aotk import backend as K
    from aotk import timing

    GRAPHS[name]()  # makes the weight arrays, which are not aotk's time
    K.clear_session()
    t0 = time.perf_counter()
    inputs, outputs, updates = GRAPHS[name]()
    traced = time.perf_counter()
    with timing.collect() as records:
        f = K.function(inputs, outputs, updates)
    done = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="aotk-bench-") as out:
        aotk.export(f, out, "bench")  # the function's code again, for a library
    exported = time.perf_counter() - done
    checks = [r.ops for r in records if r.name == "aotk-check-stage"]
    xdsl = sum(r.seconds for r in records if r.kind == "pass")
    llvm = sum(r.seconds for r in records if r.kind == "stage" and r.name.startswith("llvm"))
    return {
        "total": done - t0,
        "export": exported,
        "trace": traced - t0,
        "xdsl": xdsl,
        "llvm": llvm,
        "ops": [timing.count_ops(f.module), checks[0], checks[-1]],
    }


def keras_compiles(name: str) -> dict[str, float]:
    """In this (fresh) process: seconds of a Keras application's first predict and train
    batch (batch 4), and of the collections during each."""
    os.environ["KERAS_BACKEND"] = "aotk.backend"
    import gc

    import keras
    import numpy as np

    collecting = [0.0, 0.0]  # seconds so far, start of the running collection

    def clock(phase: str, _: dict[str, int]) -> None:
        if phase == "start":
            collecting[1] = time.perf_counter()
        else:
            collecting[0] += time.perf_counter() - collecting[1]

    model = getattr(keras.applications, name)(weights=None, input_shape=(64, 64, 3), classes=10)
    model.compile("sgd", "categorical_crossentropy")
    x = np.random.default_rng(0).random((4, 64, 64, 3), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[:4]
    gc.callbacks.append(clock)
    report = {}
    for step, call in (
        ("predict", lambda: model.predict_on_batch(x)),
        ("train", lambda: model.train_on_batch(x, y)),
    ):
        before, t0 = collecting[0], time.perf_counter()
        call()
        report[step] = time.perf_counter() - t0
        report[f"{step} gc"] = collecting[0] - before
    return report


def build_library() -> dict[str, float]:
    """Build every micro-kernel into the (empty) cache; seconds for each."""
    from aotk import micro_kernels
    from aotk.kernels import library

    seconds = {}
    for name in library.names():
        t0 = time.perf_counter()
        micro_kernels.cached(name)
        seconds[name] = time.perf_counter() - t0
    return seconds


def import_seconds() -> float:
    t0 = time.perf_counter()
    import aotk.backend  # noqa: F401

    return time.perf_counter() - t0


def first_compiles(name: str) -> dict[str, list[float]]:
    """Seconds of `name`'s compile in an empty cache with the helper ("on") and without
    ("off"), alternating, REPEAT each."""
    times: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(REPEAT):
        for helper, runs in times.items():
            with tempfile.TemporaryDirectory(prefix="aotk-bench-") as empty:
                flag = "1" if helper == "on" else "0"
                report = cold_child(
                    "bench.compile_time", ["--one", name], empty, AOTK_BUILD_HELPER=flag
                )
            runs.append(report["total"])
    return times


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.3f} ±{(max(values) - min(values)) / 2:5.3f}"


def run() -> None:
    with tempfile.TemporaryDirectory(prefix="aotk-bench-") as cache:
        library = _child(["--library"], cache)
        print(f"\nmicro-kernel library, built once per machine: {sum(library.values()):.2f} s")
        print(", ".join(f"{k} {v:.2f} s" for k, v in library.items()))
        imports = [_child(["--import"], cache)["seconds"] for _ in range(IMPORT_REPEAT)]
        print(f"import aotk.backend: {_spread(imports)} s (median ± half range)")
        print("first compile on a machine (empty cache), s, with / without the helper:")
        for name in FIRST_ON_A_MACHINE:
            times = first_compiles(name)
            print(f"  {name:36s} {_spread(times['on'])} / {_spread(times['off'])}")
        print()
        head = (
            f"{'cold compile (s), median ± half range':38s} {'total':>14s} {'trace':>7s} "
            f"{'xdsl':>7s} {'llvm':>7s} {'export':>7s}   ops: trace -> loops -> llvm"
        )
        print(head)
        print("-" * len(head))
        for name in GRAPHS:
            runs = [_child(["--one", name], cache) for _ in range(REPEAT)]
            keys = ("trace", "xdsl", "llvm", "export")
            med = {k: statistics.median(r[k] for r in runs) for k in keys}
            ops = " -> ".join(str(n) for n in runs[0]["ops"])
            print(
                f"{name:38s} {_spread([r['total'] for r in runs])} {med['trace']:7.3f} "
                f"{med['xdsl']:7.3f} {med['llvm']:7.3f} {med['export']:7.3f}   {ops}"
            )
        print("\nKeras applications, first batch (s; of it, the collector's):")
        for name in KERAS_MODELS:
            runs = [_child(["--keras", name], cache) for _ in range(REPEAT)]
            cells = [
                f"{step} {_spread([r[step] for r in runs])} "
                f"({statistics.median(r[step + ' gc'] for r in runs):.2f})"
                for step in ("predict", "train")
            ]
            print(f"  {name:14s} " + "   ".join(cells))


def main(argv: list[str]) -> None:
    if argv[:1] == ["--one"]:
        print(json.dumps(compile_one(argv[1])))
    elif argv[:1] == ["--keras"]:
        print(json.dumps(keras_compiles(argv[1])))
    elif argv[:1] == ["--library"]:
        print(json.dumps(build_library()))
    elif argv[:1] == ["--import"]:
        print(json.dumps({"seconds": import_seconds()}))
    else:
        run()


if __name__ == "__main__":
    main(sys.argv[1:])
