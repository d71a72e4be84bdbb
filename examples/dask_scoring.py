"""Batch-score a large array on a Dask cluster with a model aotk compiled once, here.

The script compiles a small classifier with K.function and exports it as a C library,
then starts a `dask.distributed.LocalCluster` of worker processes and scores every
partition of the array there, once with each form of the model:

- the K.function itself: its pickle carries native code, which a worker links;
- the exported library opened with `aotk.load`: its pickle carries the library's bytes.

Dask ships each model to every worker once (`Client.scatter(..., broadcast=True)`) and
maps it over the partitions with `dask.array.map_blocks`. The results must equal a local
run on the same partitions bit for bit, and the workers must have compiled nothing:
`aotk.compile_counts()` is asked of each worker at the end.

With `--kill-one`, the task of one partition kills its worker process the first time it
runs. Dask's nanny restarts the worker, the scheduler runs the task again, and the
result is still complete and identical.

    python examples/dask_scoring.py [--workers 2] [--partitions 64] [--rows 4096] [--kill-one]

It prints one JSON object of figures and exits 1 if any check fails. Pickles are native
code: a cluster must only load models from a trusted source, as any pickle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import dask.array as da
import numpy as np
from dask.distributed import Client, LocalCluster

import aotk
from aotk import backend as K

FEATURES, HIDDEN, CLASSES = 64, 256, 10
CRASHING_PARTITION = 5


def build_model(rng: np.random.Generator) -> Any:
    """A 64-256-256-10 softmax classifier with fixed random weights."""
    x = K.placeholder(shape=(None, FEATURES), name="features")
    h = x
    for fan_in, fan_out in ((FEATURES, HIDDEN), (HIDDEN, HIDDEN)):
        w = rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)
        h = K.relu(K.dot(h, K.variable(w.astype(np.float32))))
    w = rng.standard_normal((HIDDEN, CLASSES)) / np.sqrt(HIDDEN)
    return K.function([x], [K.softmax(K.dot(h, K.variable(w.astype(np.float32))))])


def score(block: np.ndarray, model: Any, crash_marker: str = "", block_info: Any = None):
    """Run `model` on one partition (in a worker). With `crash_marker`, the partition
    CRASHING_PARTITION first kills this worker process, leaving the marker file behind."""
    if crash_marker and block_info[0]["chunk-location"][0] == CRASHING_PARTITION:
        try:
            fd = os.open(crash_marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            pass  # the retry: run normally
        else:
            os.close(fd)
            os._exit(1)
    return model([block])[0]


def score_on_cluster(client: Client, data: da.Array, model: Any, crash_marker: str) -> np.ndarray:
    shipped = client.scatter(model, broadcast=True)
    out = data.map_blocks(
        score,
        model=shipped,
        crash_marker=crash_marker,
        chunks=(data.chunks[0], (CLASSES,)),
        dtype=np.float32,
    )
    return out.compute()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=64)
    ap.add_argument("--rows", type=int, default=4096, help="rows per partition")
    ap.add_argument("--kill-one", action="store_true", help="kill one worker mid-run")
    args = ap.parse_args(argv)

    model = build_model(np.random.default_rng(0))
    # made on the workers, partition by partition; the same graph gives the same numbers
    shape, chunks = (args.partitions * args.rows, FEATURES), (args.rows, FEATURES)
    data = da.random.default_rng(1).standard_normal(shape, chunks=chunks, dtype=np.float32)
    blocks = np.split(data.compute(scheduler="synchronous"), args.partitions)
    with tempfile.TemporaryDirectory(prefix="aotk-dask-") as tmp:
        library = aotk.load(aotk.export(model, Path(tmp) / "lib", "scorer").library)
        start = time.perf_counter()
        local = np.concatenate([model([b])[0] for b in blocks])
        local_seconds = time.perf_counter() - start
        figures: dict[str, Any] = {"rows": shape[0], "partitions": args.partitions}
        figures["local_seconds"] = round(local_seconds, 3)
        # one aotk thread per worker process: the workers are the parallelism
        cluster = LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            env={"AOTK_NUM_THREADS": "1"},
            dashboard_address=None,
        )
        with cluster, Client(cluster) as client:
            marker = str(Path(tmp) / "crashed") if args.kill_one else ""
            ok = True
            for form, shipped in (("function", model), ("library", library)):
                start = time.perf_counter()
                result = score_on_cluster(client, data, shipped, marker)
                figures[f"{form}_seconds"] = round(time.perf_counter() - start, 3)
                identical = result.shape == local.shape and bool((result == local).all())
                figures[f"{form}_identical"] = identical
                ok = ok and identical
            client.wait_for_workers(args.workers, timeout=120)  # a killed one restarts
            figures["worker_compiles"] = client.run(aotk.compile_counts)
            figures["worker_killed"] = bool(marker) and Path(marker).exists()
    compiled = [n for counts in figures["worker_compiles"].values() for n in counts.values()]
    ok = ok and not any(compiled) and figures["worker_killed"] == args.kill_one
    figures["ok"] = ok
    print(json.dumps(figures))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
