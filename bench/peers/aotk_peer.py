"""aotk itself as a peer: the bench's K.functions, timed in a subprocess like the others.

In-process, aotk's timings follow NumPy's in the same process, whose OpenBLAS threads may
still spin on the second core; here aotk runs alone, pinned and started as each peer is.
Its pool takes the thread count from AOTK_NUM_THREADS, which the parent sets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aotk
from bench import bench_workloads as bw
from bench import problems as P
from bench import workloads


def version() -> str:
    return f"aotk {aotk.__version__}"


def _trainer(graph: Callable[[], workloads.Graph], data: list[Any]) -> Callable[[], object]:
    """A step returning its loss and the variables' buffers: views, as JAX returns its
    arrays (the caller copies the first call's). K.get_value would copy every weight in
    each timed call: on W4, 7 MB into fresh pages, which took W4 at two threads from
    about 6.9 to 8.8-10 ms."""
    f, variables = bw._function(graph)
    buffers = [v.storage for v in variables]
    return lambda: (f(data)[0], buffers)


def build(problem: P.Problem, threads: int) -> Callable[[], object]:
    """A call of the bench's compiled function for `problem`."""
    del threads  # AOTK_NUM_THREADS
    data = problem.data
    if problem.name == P.W4:
        return _trainer(workloads.w4_mlp_sgd, data)
    if problem.name == P.W6_SGD:
        return _trainer(workloads.w6_lstm_sgd, data)
    fn = {
        P.W1: lambda: bw._placeholder_function([(None,)], bw.bench_elementwise.aotk_chain),
        P.W2: lambda: bw._placeholder_function([(P.GEMM, P.GEMM)] * 2, bw._dot),
        P.W3_1: lambda: bw._mlp_function(problem.params),
        P.W3_256: lambda: bw._mlp_function(problem.params),
        P.W5: lambda: bw._function(workloads.w5_cnn)[0],
        P.W6: lambda: bw._function(workloads.w6_lstm)[0],
        P.W7: lambda: bw._placeholder_function([(None, 1024)], bw._softmax),
    }[problem.name]()
    return lambda: fn(data)[0]
