"""Timing helpers shared by the benchmarks: aotk and NumPy side by side in one process.

aotk is imported only where it is used, so the peers' interpreter (`bench.peers`), which
has no aotk, can use the timing helpers too.

Each benchmark module defines `cases(with_aotk: bool) -> list[Case]`. `run(modules)` times
every case (warm-up, then the median and interquartile range of repeated runs), times
NumPy once more in a subprocess with one BLAS thread, and prints one table.
`measure_threads` times an aotk call at several sizes of aotk's thread pool.
"""

from __future__ import annotations

import ctypes
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    """One benchmark: the same computation in NumPy and (optionally) in aotk."""

    name: str
    numpy: Callable[[], object]
    aotk: Callable[[], object] | None = None
    flops: float | None = None
    repeat: int = 30
    nbytes: float | None = None  # memory a bandwidth-bound case must move per call
    check: Callable[[], None] | None = None  # replaces check_same(aotk(), numpy())

    def verify(self) -> None:
        """Fail if aotk and NumPy disagree (nothing to compare without aotk)."""
        if self.check is not None:
            self.check()
        elif self.aotk is not None:
            check_same(self.name, self.aotk(), self.numpy())


@dataclass(frozen=True)
class Timing:
    """Seconds: median, quartiles and extremes of repeated runs."""

    median: float
    q1: float
    q3: float
    lo: float
    hi: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1


def compiled_side(
    with_aotk: bool, build: Callable[..., Any], args: Sequence[Any]
) -> Callable[[], object] | None:
    """A case's aotk side: `build` on placeholders shaped like `args`, compiled and called
    on them (its one output, or the list of several); None without aotk (the one-thread
    subprocess times NumPy's sides alone)."""
    if not with_aotk:
        return None
    from aotk import backend as K

    inputs = [K.placeholder(np.shape(a)) for a in args]
    values = list(args)  # made once: the timed call only calls
    outs = build(*inputs)
    if isinstance(outs, list):
        several = K.function(inputs, outs)
        return lambda: several(values)
    one = K.function(inputs, [outs])
    return lambda: one(values)[0]


def measure(fn: Callable[[], object], repeat: int = 30, warmup: int = 3) -> Timing:
    """Run `fn` `warmup` times untimed, then `repeat` times; summarize the times."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return _summary(times)


def measure_threads(
    fn: Callable[[], object], threads: Sequence[int], repeat: int = 30
) -> dict[int, Timing]:
    """`measure(fn)` with aotk's pool resized to each of `threads`; the size is restored."""
    import aotk

    before = aotk.get_num_threads()
    try:
        out = {}
        for n in threads:
            aotk.set_num_threads(n)
            out[n] = measure(fn, repeat)
        return out
    finally:
        aotk.set_num_threads(before)


QUICK_REPEAT = 5


def repeats(case: Case, quick: bool) -> int:
    """The case's repeat count, or at most QUICK_REPEAT with `quick`."""
    return min(case.repeat, QUICK_REPEAT) if quick else case.repeat


def check_same(name: str, got: object, want: object, rtol: float = 1e-4) -> None:
    """Fail loudly if a result and NumPy's disagree: a fast wrong answer is no result."""
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if g.shape != w.shape:
        raise AssertionError(f"{name}: shape {g.shape}, NumPy's {w.shape}")
    scale = max(float(np.max(np.abs(w))), 1e-30)
    err = float(np.max(np.abs(g - w))) / scale
    if not err <= rtol:
        raise AssertionError(f"{name}: differs from NumPy (max error {err:.2e} of max |x|)")


def _blas_lib() -> ctypes.CDLL | None:
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    paths = {line.split()[-1] for line in maps.splitlines() if "openblas" in line.lower()}
    for path in sorted(paths):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def blas_threads() -> int | None:
    """Threads NumPy's OpenBLAS uses, or None if it cannot be asked."""
    try:
        from threadpoolctl import threadpool_info  # type: ignore[import-not-found]

        counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
        if counts:
            return int(counts[0])
    except ImportError:
        pass
    _ = np.ones((2, 2)) @ np.ones((2, 2))  # makes sure OpenBLAS is loaded
    lib = _blas_lib()
    if lib is None:
        return None
    for sym in (
        "scipy_openblas_get_num_threads64_",
        "openblas_get_num_threads64_",
        "openblas_get_num_threads",
    ):
        fn = getattr(lib, sym, None)
        if fn is not None:
            fn.restype = ctypes.c_int
            return int(fn())
    return None


def thread_note() -> str:
    import aotk

    threads = blas_threads()
    env = os.environ.get("OPENBLAS_NUM_THREADS")
    return (
        f"cores: {os.cpu_count()}; NumPy {np.__version__} BLAS threads: "
        f"{threads if threads is not None else 'unknown'}"
        f" (OPENBLAS_NUM_THREADS={env or 'unset'}); aotk threads: {aotk.get_num_threads()}"
    )


def _load(module: str) -> Callable[[bool], list[Case]]:
    return importlib.import_module(module).cases  # type: ignore[no-any-return]


def measure_pair(
    a: Callable[[], object], b: Callable[[], object], repeat: int = 30, warmup: int = 3
) -> tuple[Timing, Timing]:
    """`measure` of a and of b, their calls alternating: both see the same machine, whose
    speed drifts within minutes when it is shared."""
    for _ in range(warmup):
        a()
        b()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, into in ((a, times[0]), (b, times[1])):
            t0 = time.perf_counter()
            fn()
            into.append(time.perf_counter() - t0)
    return _summary(times[0]), _summary(times[1])


def _summary(times: list[float]) -> Timing:
    q1, med, q3 = np.percentile(times, [25, 50, 75])
    return Timing(float(med), float(q1), float(q3), min(times), max(times))


def time_one_thread(
    modules: Sequence[str], quick: bool = False, with_aotk: bool = False
) -> dict[str, dict[str, Timing]]:
    """Time the cases of `modules` (run in the 1-thread subprocess): NumPy's side, and
    with `with_aotk` aotk's too, their calls alternating. {case: {"numpy": .., "aotk": ..}}"""
    out: dict[str, dict[str, Timing]] = {}
    for module in modules:
        for case in _load(module)(with_aotk):
            if with_aotk and case.aotk is not None:
                mine, theirs = measure_pair(case.aotk, case.numpy, repeats(case, quick))
                out[case.name] = {"aotk": mine, "numpy": theirs}
            else:
                out[case.name] = {"numpy": measure(case.numpy, repeats(case, quick))}
    return out


def numpy_one_thread(modules: Sequence[str], quick: bool = False) -> dict[str, Timing]:
    """NumPy timings with OPENBLAS_NUM_THREADS=1, which must be set before NumPy loads."""
    both = one_thread_timings(modules, quick)
    return {name: t["numpy"] for name, t in both.items()}


def one_thread_timings(
    modules: Sequence[str], quick: bool = False, with_aotk: bool = False
) -> dict[str, dict[str, Timing]]:
    """`time_one_thread` in a subprocess where NumPy's BLAS and aotk's pool have one
    thread each; {} if it fails."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    env["AOTK_NUM_THREADS"] = "1"
    flags = [*(["--quick"] if quick else []), *(["--with-aotk"] if with_aotk else [])]
    cmd = [sys.executable, "-m", "bench.common", *modules, *flags]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"(1-thread run failed: {proc.stderr.strip()[-300:]})", file=sys.stderr)
        return {}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {name: {k: Timing(*v) for k, v in t.items()} for name, t in out.items()}


def _fmt(t: Timing | None) -> str:
    if t is None:
        return "-"
    return f"{t.median * 1e3:9.3f} ±{t.iqr / 2 * 1e3:7.3f}"


def _ratio(num: Timing | None, den: Timing | None) -> str:
    if num is None or den is None:
        return "-"
    return f"{num.median / den.median:6.2f}"


def run(modules: Sequence[str], one_thread: bool = True) -> None:
    """Time every case of `modules` and print the table."""
    every = [case for module in modules for case in _load(module)(True)]
    # aotk first, NumPy after (as in bench_workloads): OpenBLAS's threads spin on for a
    # tenth of a second after each call, taking the second core from what runs next
    aotk_times = [measure(c.aotk, c.repeat) if c.aotk is not None else None for c in every]
    rows: list[tuple[Case, Timing | None, Timing]] = []
    for case, aotk in zip(every, aotk_times, strict=True):
        case.verify()
        rows.append((case, aotk, measure(case.numpy, case.repeat)))
    single = numpy_one_thread(modules) if one_thread else {}
    print(thread_note())
    print(
        "times in ms: median ± half the interquartile range; ratio = numpy / aotk (>1: aotk faster)"
    )
    head = (
        f"{'case':34} {'aotk':>18} {'numpy':>18} {'ratio':>6} "
        f"{'numpy 1 thr':>18} {'ratio':>6} {'GFLOP/s':>7}"
    )
    print(head)
    print("-" * len(head))
    for case, aotk, np_t in rows:
        one = single.get(case.name)
        gflops = f"{case.flops / aotk.median / 1e9:7.1f}" if case.flops and aotk else "      -"
        print(
            f"{case.name:34} {_fmt(aotk):>18} {_fmt(np_t):>18} {_ratio(np_t, aotk):>6} "
            f"{_fmt(one):>18} {_ratio(one, aotk):>6} {gflops}"
        )


def main(argv: Sequence[str]) -> None:
    """Subprocess entry: time the NumPy side of `argv`'s modules (`--quick`: fewer runs;
    `--with-aotk`: aotk's too, alternating)."""
    modules = [a for a in argv if not a.startswith("--")]
    timings = time_one_thread(modules, "--quick" in argv, "--with-aotk" in argv)
    print(json.dumps({name: {k: astuple(v) for k, v in t.items()} for name, t in timings.items()}))


if __name__ == "__main__":
    main(sys.argv[1:])
