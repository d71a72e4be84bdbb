"""Where a compiled graph spends its time, by kernel: run it in a loop under `perf`.

    perf record -o perf.data python -m bench.profile_kernels w4_mlp_sgd --batch 128
    perf report -i perf.data --no-children --sort sym

JIT-compiled code has no symbols `perf` can see, so this writes the perf map file that
`perf report` reads for a process (`/tmp/perf-<pid>.map`, perf's convention): the address
and size of every function of the graph's module and of the micro-kernels it linked,
outlined parallel bodies included (`main_k3_par0` is the first parallel loop of the
graph's fourth kernel, `aotk_uk_matmul_float32_packed_par2` one of the matmul's). The
graphs are `bench.workloads.GRAPHS`, named by builder; AOTK_NUM_THREADS picks the
thread count.
"""

from __future__ import annotations

import argparse
import os
import re
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from bench import workloads

_NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_.]{2,}")


def function_addresses(engine: Any, objects: Iterable[bytes]) -> list[tuple[int, str]]:
    """(address, name) of the functions `engine` linked from `objects`: each identifier
    in the object code (its string table) that the engine resolves to an address."""
    found = []
    for name in {m.decode() for blob in objects for m in _NAME.findall(blob)}:
        address = engine.get_function_address(name)
        if address:
            found.append((address, name))
    return found


def write_perf_map(function: Any) -> str:
    """Write this process's perf map for `function`'s code and every linked micro-kernel;
    each function is taken to run up to the next one's start."""
    from aotk import micro_kernels

    symbols = function_addresses(function._compiled.engine, function._compiled.code.objects)
    for linked in micro_kernels._linked.values():
        symbols += function_addresses(linked.engine, linked.objects)
    symbols = sorted(set(symbols))
    path = f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as out:
        for (start, name), (following, _) in zip(symbols, [*symbols[1:], (0, "")], strict=True):
            size = following - start if following > start else 1 << 16
            out.write(f"{start:x} {min(size, 1 << 20):x} {name}\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    builders = {b.__name__: b for b in workloads.GRAPHS.values()}
    parser.add_argument("graph", choices=sorted(builders))
    parser.add_argument("--batch", type=int, default=128, help="size of every None dim")
    parser.add_argument("--seconds", type=float, default=8.0, help="time to run the loop")
    args = parser.parse_args()
    from aotk import backend as K

    inputs, outputs, updates = builders[args.graph]()
    f = K.function(inputs, outputs, updates)
    rng = np.random.default_rng(0)
    values = [
        rng.standard_normal([args.batch if d is None else d for d in K.int_shape(x)]).astype(
            K.dtype(x)
        )
        for x in inputs
    ]
    f(values)
    print(f"perf map: {write_perf_map(f)}")
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        f(values)
        calls += 1
    print(f"{calls} calls, {1e3 * (time.perf_counter() - start) / calls:.2f} ms each")


if __name__ == "__main__":
    main()
