"""Where compile time goes: `AOTK_TIMING=1` (or `aotk-opt --timing`) reports each pass
and stage to stderr, with seconds and, for passes, the op count of the IR they leave.

Lines look like `aotk-timing: pass  convert-aotk-to-loops  0.035 s  1326 ops`; a stage is
a span of work outside the xDSL passes (LLVM optimization, code emission, linking).
Counting ops walks the IR, so it happens only when timing is on.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

_forced = False
_records: list[Record] | None = None  # set while `collect` runs


@dataclass(frozen=True)
class Record:
    kind: str  # "pass" or "stage"
    name: str
    seconds: float
    ops: int | None = None


def enabled() -> bool:
    if _forced or _records is not None:
        return True
    return os.environ.get("AOTK_TIMING", "") not in ("", "0", "off", "false")


def force(on: bool = True) -> None:
    """Turn reports on (or back to `AOTK_TIMING`) for this process, as `--timing` does."""
    global _forced
    _forced = on


@contextmanager
def collect() -> Iterator[list[Record]]:
    """Gather the records of the enclosed compiles into a list instead of printing them."""
    global _records
    outer, _records = _records, []
    try:
        yield _records
    finally:
        _records = outer


def report(kind: str, name: str, seconds: float, ops: int | None = None) -> None:
    if _records is not None:
        _records.append(Record(kind, name, seconds, ops))
        return
    count = f"  {ops:7d} ops" if ops is not None else ""
    print(f"aotk-timing: {kind:5s} {name:36s} {seconds:8.4f} s{count}", file=sys.stderr)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the enclosed work as one stage (a no-op unless timing is on)."""
    if not enabled():
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        report("stage", name, time.perf_counter() - start)


def count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


PassCallback = Callable[[ModulePass | None, ModuleOp, ModulePass | None], None]


def pass_callback(then: PassCallback | None = None) -> PassCallback:
    """A `PassPipeline` callback reporting each pass's time and op count, then calling
    `then` (whose own time is not charged to any pass)."""
    started = [time.perf_counter()]

    def callback(previous: ModulePass | None, module: ModuleOp, following: ModulePass | None):
        if previous is not None:
            report("pass", previous.name, time.perf_counter() - started[0], count_ops(module))
        if then is not None:
            then(previous, module, following)
        started[0] = time.perf_counter()

    return callback
