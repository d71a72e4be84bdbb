"""A second process that builds missing micro-kernels beside this one.

A graph's first compile on a machine builds the micro-kernels it calls, and its first
export for another instruction set builds them for that one: one to two seconds each,
most of it in xDSL's passes, which run in Python on one core. When two or more are
missing from the cache and the host has two cores or more, `helping` starts a process
(`python -c`, importing this very aotk, `micro_kernels.build_as_helper`) that builds
them, for the same target, from the last while the caller builds them from the first.
The cache's per-entry lock makes either one wait for a kernel the other is building and
then read it, so each is built once and the two meet in the middle. The helper writes
only cache entries, in the private cache directory this process would write them to
(`aotk.paths`); if it cannot start or fails, the caller builds what it finds missing, as
it would have alone. `AOTK_BUILD_HELPER=0` keeps every build in the calling process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from aotk import timing
from aotk.codegen import native_runtime

BUILT = 0  # micro-kernels helpers have reported building for this process
REPORT = "built "  # the helper's line for each micro-kernel it compiled
TARGET = "--target"  # then LLVM's CPU, its features and the tiling: not this host's
REPORT_GRACE_SECONDS = 0.5  # the helper has only cache reads left: it ends in a blink
_running = threading.Semaphore(1)  # one helper at a time: two cores are the common case
_CHILD = (
    "import sys\n"
    "if sys.argv[1] not in sys.path: sys.path.insert(0, sys.argv[1])\n"
    "from aotk.micro_kernels import build_as_helper\n"
    "sys.exit(build_as_helper(sys.argv[2:]))\n"
)


@contextmanager
def helping(missing: Sequence[str] | None, target: Sequence[str] = ()) -> Iterator[None]:
    """Run the caller's builds, with a helper building `missing` (the ones the cache lacks,
    in the order the caller builds them; None: no usable cache) in the reverse order,
    when that can pay; for `target` = (cpu, features, isa), or this host when empty."""
    if not _running.acquire(blocking=False):  # another thread's compile has one
        yield
        return
    try:
        started, helper = time.perf_counter(), _start(missing, target)
        try:
            yield
        finally:
            if helper is not None:
                built = _stop(helper)
                if timing.enabled():  # its builds are not in this process's stages
                    seconds = time.perf_counter() - started
                    timing.report("stage", f"micro-kernel helper, {built} built", seconds)
    finally:
        _running.release()


def _start(
    missing: Sequence[str] | None, target: Sequence[str] = ()
) -> subprocess.Popen[str] | None:
    if os.environ.get("AOTK_BUILD_HELPER", "1") == "0" or _cores() < 2 or not sys.executable:
        return None
    if missing is None or len(missing) < 2:
        return None
    source_root = str(Path(__file__).resolve().parent.parent)
    try:
        return subprocess.Popen(
            [sys.executable, "-c", _CHILD, source_root, *_target_args(target), *reversed(missing)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except OSError:
        return None


def _target_args(target: Sequence[str]) -> list[str]:
    return [TARGET, *target] if target else []


def _stop(helper: subprocess.Popen[str]) -> int:
    """End the helper, whose work is done or no longer needed: once the caller has every
    kernel, the helper can only be reading ones the caller built (it would hold the
    lock of any it was building, and the caller would have waited for it). Returns how
    many it built."""
    global BUILT
    try:  # a kernel it has just written is reported after the write: let it say so
        out, _ = helper.communicate(timeout=REPORT_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        helper.terminate()
        out, _ = helper.communicate()
    built = sum(line.startswith(REPORT) for line in out.splitlines())
    BUILT += built
    return built


def _cores() -> int:
    return native_runtime.cpus()
