"""Python's cyclic garbage collector held off while aotk traces and compiles.

xDSL's IR is all cycles (an op knows its block, a block its ops, a value its uses), and
a compile allocates it by the hundred thousand: the collector's full collections, each a
walk over every object of the process, took 0.3 s of a small Keras MLP's 1.8 s first
epoch and 0.5 s of an LSTM's 2.8 s. Held off, the compile's objects stay in the youngest
generation, and the first collection after it walks them alone, once. Nothing is kept
longer than the compile: its garbage is freed by that collection.

The IR a compile lowered is garbage once its LLVM IR text is made: `collect_young` frees
it while LLVM compiles the text in other threads (which release the GIL), in place of the
collection that would follow the compile.

The collector's switch is the process's: a thread that allocates while another compiles
goes uncollected meanwhile, and is collected with it after (AOTK_GC_PAUSE=0 leaves the
collector alone). Nested and concurrent compiles hold it off until the last one ends; a
collector the program had disabled stays disabled.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_reenable = False  # whether the first holder found the collector on


@contextmanager
def paused() -> Iterator[None]:
    """Hold automatic cyclic collection off for the `with` block."""
    global _holders, _reenable
    if os.environ.get("AOTK_GC_PAUSE", "1") in ("0", "off", "false"):
        yield
        return
    with _lock:
        if _holders == 0:
            _reenable = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _reenable:
                gc.enable()


def collect_young() -> None:
    """Collect the youngest generation now, if a pause holds the collector off and it
    was on: what the compile has allocated so far (see the module's doc)."""
    with _lock:
        wanted = _holders > 0 and _reenable
    if wanted:
        gc.collect(0)
