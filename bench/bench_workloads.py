"""The seven workloads of issue #12, aotk at one and two threads against NumPy and the machine.

W1 elementwise chain, W2 matmul, W3 MLP (batch 1, 256), W4 its SGD step, W5 CNN, W6 LSTM
(forward, SGD step), W7 row softmax; graphs from `bench.workloads` and the older modules,
inputs and NumPy's answers from `bench.problems`. The header gives the limits measured
in the same run (OpenBLAS sgemm on one thread, a triad). Run `python -m bench.bench_workloads`
(`--quick`: at most 5 timed calls per case; `--peers`: also JAX, ONNX Runtime and PyTensor,
see `bench.peers`; `--rounds N`: the peers' timings N times, interleaved, each ratio the
median of the rounds' with their range).
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Callable, Sequence
from dataclasses import astuple
from typing import Any

import numpy as np

from bench import bench_elementwise, bench_mlp, bench_training, workloads
from bench.common import (
    Case,
    Timing,
    blas_threads,
    check_same,
    measure,
    measure_threads,
    one_thread_timings,
    repeats,
    thread_note,
)
from bench.problems import (
    GEMM,
    W1,
    W2,
    W3_1,
    W3_256,
    W4,
    W5,
    W6,
    W6_SGD,
    W7,
    Problem,
    check_step,
    layer_pairs,
    problems,
)

THREADS = (1, 2)
TRIAD_N = 2**24
TRIAD_S = 3.0
MODULE = "bench.bench_workloads"


def _function(graph: Callable[[], workloads.Graph]) -> tuple[Any, list[Any]]:
    """K.function of a `bench.workloads` graph, and the variables its updates write."""
    from aotk import backend as K

    inputs, outputs, updates = graph()
    return K.function(inputs, outputs, updates=updates), [u.variable for u in updates]


def _placeholder_function(shapes: list[tuple[int | None, ...]], body: Callable[..., Any]) -> Any:
    from aotk import backend as K

    args = [K.placeholder(shape=s) for s in shapes]
    return K.function(args, [body(*args)])


def _mlp_function(layers: list[np.ndarray]) -> Any:
    """W3's MLP with its weights as variables; the batch is a (None, 784) placeholder."""
    return bench_mlp._aotk_fns(layer_pairs(layers))[0]


def _inference(problem: Problem, fn: Any, **kw: Any) -> Case:
    """Case of an inference workload: NumPy's answer against `fn` on the problem's data."""
    data, params = problem.data, problem.params
    aotk = (lambda: fn(data)[0]) if fn is not None else None
    return Case(problem.name, lambda: problem.answer(params), aotk, **kw)


def _training(problem: Problem, graph: Callable[[], workloads.Graph] | None, **kw: Any) -> Case:
    """Case of a training step: NumPy's step on its own copy of the weights against the
    compiled step of `graph`, which starts from the same weights."""
    own = [p.copy() for p in problem.params]
    aotk = check = None
    if graph is not None:
        f, variables = _function(graph)
        aotk = lambda: f(problem.data)[0]  # noqa: E731
        check = lambda: _check_step(problem, aotk, variables)  # noqa: E731
    return Case(problem.name, lambda: problem.answer(own), aotk, check=check, **kw)


def _check_step(problem: Problem, step: Callable[[], Any], variables: list[Any]) -> None:
    from aotk import backend as K

    before = [K.get_value(v) for v in variables]
    loss = step()
    got = [K.get_value(v) for v in variables]
    want = problem.answer([b.astype(np.float64) for b in before])
    check_step(problem.name, before, (loss, got), want)  # type: ignore[arg-type]


def inference_functions() -> dict[str, Any]:
    """The compiled aotk functions of the inference workloads, by row name (W3's MLP
    under its batch-256 name)."""
    return {
        W1: _placeholder_function([(None,)], bench_elementwise.aotk_chain),
        W2: _placeholder_function([(GEMM, GEMM)] * 2, _dot),
        W3_256: _mlp_function(problems()[W3_1].params),
        W5: _function(workloads.w5_cnn)[0],
        W6: _function(workloads.w6_lstm)[0],
        W7: _placeholder_function([(None, 1024)], _softmax),
    }


def cases(with_aotk: bool = True) -> list[Case]:
    """Every workload: NumPy and, with `with_aotk`, the compiled aotk function."""
    p = problems()
    on = with_aotk
    fns = inference_functions() if on else {}
    w1, w2, mlp, w5, w6, w7 = (fns.get(name) for name in (W1, W2, W3_256, W5, W6, W7))
    b, t, d, h = workloads.LSTM_B, workloads.LSTM_T, workloads.LSTM_D, workloads.LSTM_H
    pixels = 64 * 32 * 32
    forward = sum(2.0 * bench_training.BATCH * a * b for a, b in itertools.pairwise(workloads.MLP))
    # an SGD step needs no gradient of the input batch: the first layer has no dx matmul
    input_grad = 2.0 * bench_training.BATCH * workloads.MLP[0] * workloads.MLP[1]
    return [
        _inference(p[W1], w1, repeat=20, nbytes=2 * 4 * bench_elementwise.N),  # read x, write y
        _inference(p[W2], w2, flops=2.0 * GEMM**3, repeat=20),
        # a GEMV: it streams the weights
        _inference(p[W3_1], mlp, repeat=200, nbytes=4.0 * sum(a.size for a in p[W3_1].params)),
        _inference(p[W3_256], mlp, repeat=30, flops=bench_mlp._flops(256)),
        _training(
            p[W4], workloads.w4_mlp_sgd if on else None, flops=3 * forward - input_grad, repeat=10
        ),
        _inference(
            p[W5],
            w5,
            flops=2.0 * pixels * (27 * 32 + 288 * 64) + 2.0 * 64 * 16 * 16 * 64 * 10,
            repeat=10,
        ),
        _inference(p[W6], w6, flops=2.0 * t * b * 4 * h * (d + h)),
        # forward, dz U^T, x^T dz, h^T dz
        _training(
            p[W6_SGD],
            workloads.w6_lstm_sgd if on else None,
            flops=2.0 * t * b * 4 * h * (2 * d + 3 * h),
            repeat=10,
        ),
        _inference(p[W7], w7, nbytes=2.0 * p[W7].data[0].nbytes),
    ]


def _dot(a: Any, b: Any) -> Any:
    from aotk import backend as K

    return K.dot(a, b)


def _softmax(x: Any) -> Any:
    from aotk import backend as K

    return K.softmax(x)


def _triads(quick: bool) -> tuple[dict[int, float], float]:
    """Best GB/s of the triad a = b + s*c on 2^24 float32: aotk's kernel at each thread
    count (3 arrays moved), NumPy's multiply and add into `a` (5 arrays moved, one thread)."""
    from aotk import backend as K

    rng = np.random.default_rng(0)
    b, c = (rng.standard_normal(TRIAD_N).astype(np.float32) for _ in range(2))
    a = np.empty_like(b)

    def numpy_triad() -> None:
        np.multiply(c, TRIAD_S, out=a)
        np.add(a, b, out=a)

    pb, pc = K.placeholder(shape=(None,)), K.placeholder(shape=(None,))
    f = K.function([pb, pc], [pb + TRIAD_S * pc])  # pyright: ignore[reportOperatorIssue]
    check_same("triad", f([b, c])[0], b + TRIAD_S * c)
    repeat = 5 if quick else 20
    kernel = measure_threads(lambda: f([b, c])[0], THREADS, repeat)
    numpy = measure(numpy_triad, repeat)
    elem = 4.0 * TRIAD_N
    # the fastest run, as STREAM reports: a limit, which noise can only lower
    return {n: 3 * elem / t.lo / 1e9 for n, t in kernel.items()}, 5 * elem / numpy.lo / 1e9


def _call_overhead(quick: bool) -> tuple[Timing, Timing, Timing]:
    """Microseconds a call costs beyond its work: aotk's `K.function` of x + 1 on 4
    float32 (checks, output buffer, the native call), the same when the caller keeps each
    output until its next call (`y = f(x)` in a loop, as Keras's predict loop does), and
    NumPy's x + 1, per call over batches of 1000 calls."""
    from aotk import backend as K

    x = np.arange(4, dtype=np.float32)
    p = K.placeholder(shape=(4,))
    f = K.function([p], [p + 1.0])  # pyright: ignore[reportOperatorIssue]
    check_same("x + 1", f([x])[0], x + 1.0)
    calls = 1000

    def batch(fn: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(calls):
                fn()

        return run

    def per_call_us(t: Timing) -> Timing:
        return Timing(*(v / calls * 1e6 for v in astuple(t)))

    kept: list[object] = [None]

    def keep_last() -> None:
        kept[0] = f([x])

    repeat = 5 if quick else 30
    aotk_call = per_call_us(measure(batch(lambda: f([x])), repeat))
    aotk_kept = per_call_us(measure(batch(keep_last), repeat))
    return aotk_call, aotk_kept, per_call_us(measure(batch(lambda: x + 1.0), repeat))


Row = tuple[Case, dict[int, Timing], Timing]


def _ms(t: Timing | None) -> str:
    return "-" if t is None else f"{t.median * 1e3:8.3f} ±{t.iqr / 2 * 1e3:6.3f}"


def _over(num: Timing | None, den: Timing | None) -> str:
    return "-" if num is None or den is None else f"{num.median / den.median:.2f}"


def _print_times(rows: Sequence[Row], paired: dict[str, dict[str, Timing]]) -> None:
    head = (
        f"{'workload':30} {'aotk t1':>16} {'numpy 1 thr':>16} {'ratio':>6}  "
        f"{'aotk t2':>16} {'numpy':>16} {'ratio':>6} {'t1/t2':>6}"
    )
    print(head)
    print("-" * len(head))
    for case, ts, np_t in rows:
        pair = paired.get(case.name, {})
        mine, one = pair.get("aotk"), pair.get("numpy")
        print(
            f"{case.name:30} {_ms(mine):>16} {_ms(one):>16} {_over(mine, one):>6}  "
            f"{_ms(ts[2]):>16} {_ms(np_t):>16} {_over(ts[2], np_t):>6} {_over(ts[1], ts[2]):>6}"
        )


def _print_rates(rows: Sequence[Row], sgemm: float | None, bandwidth: dict[int, float]) -> None:
    head = (
        f"{'workload':30} {'work/call':>12} {'aotk t1':>14} {'of lim':>6}  "
        f"{'aotk t2':>14} {'of lim':>6}  limit"
    )
    print(head)
    print("-" * len(head))
    for case, ts, _ in rows:
        memory = case.nbytes is not None
        work = (case.nbytes if memory else case.flops) or 0.0
        unit = "GB/s" if memory else "GFLOP/s"
        cells = []
        for n in THREADS:
            rate = work / ts[n].median / 1e9
            limit = bandwidth[n] if memory else (sgemm * n if sgemm else None)
            frac = f"{rate / limit:.2f}" if limit else "-"
            cells.append(f"{f'{rate:.1f} {unit}':>14} {frac:>6}")
        size = f"{work / 1e6:.1f} MB" if memory else f"{work / 1e9:.3f} GFLOP"
        print(f"{case.name:30} {size:>12} {'  '.join(cells)}  {'triad' if memory else 'sgemm'}")


def _print_header(
    quick: bool,
    sgemm: float | None,
    kernel_triad: dict[int, float],
    numpy_triad: float,
    bandwidth: dict[int, float],
    overhead: tuple[Timing, Timing, Timing],
) -> None:
    print(thread_note())
    print(f"limits measured in this run ({'quick; ' if quick else ''}fastest of the runs):")
    sg = f"{sgemm:.1f} GFLOP/s" if sgemm is not None else "unknown (subprocess failed)"
    print(f"  sgemm: OpenBLAS 1024^3 float32 on 1 thread (W2's NumPy 1-thread run): {sg}")
    print(
        "  triad a = b + s*c, 2^24 float32: aotk's kernel (3 x 4 B/element) "
        + ", ".join(f"t{n} {kernel_triad[n]:.1f} GB/s" for n in THREADS)
        + f";\n    NumPy multiply+add with out= (5 x 4 B/element, 1 thread) {numpy_triad:.1f} GB/s"
    )
    print(
        "  bandwidth limit = the best triad at <= n threads: "
        + ", ".join(f"t{n} {bandwidth[n]:.1f} GB/s" for n in THREADS)
    )
    aotk_call, aotk_kept, numpy_call = overhead
    print(
        f"call overhead (x + 1 on 4 float32, us per call, median ± half IQR): aotk "
        f"{aotk_call.median:.2f} ±{aotk_call.iqr / 2:.2f}, keeping each output until the "
        f"next call {aotk_kept.median:.2f} ±{aotk_kept.iqr / 2:.2f}, NumPy {numpy_call.median:.2f}"
    )


def run(quick: bool = False, peers: bool = False, rounds: int = 1) -> None:
    """Measure the limits and every workload; print the header and two tables, and with
    `peers` a third: aotk against the best of JAX, ONNX Runtime and PyTensor."""
    kernel_triad, numpy_triad = _triads(quick)
    overhead = _call_overhead(quick)
    every = cases(True)
    # aotk first, NumPy after: OpenBLAS's threads spin on for seconds after a call,
    # taking the second core from whatever runs next
    aotk_times = [measure_threads(c.aotk, THREADS, repeats(c, quick)) for c in every if c.aotk]
    rows: list[Row] = []
    for case, ts in zip(every, aotk_times, strict=True):
        case.verify()
        rows.append((case, ts, measure(case.numpy, repeats(case, quick))))
    paired = one_thread_timings([MODULE], quick, with_aotk=True)
    single = {name: t["numpy"] for name, t in paired.items()}
    w2 = single.get("W2 matmul 1024^3")
    sgemm = 2.0 * GEMM**3 / w2.lo / 1e9 if w2 is not None else None
    # the best triad any run reached with at most n threads
    bandwidth = {
        n: max([numpy_triad, *(kernel_triad[m] for m in THREADS if m <= n)]) for n in THREADS
    }
    _print_header(quick, sgemm, kernel_triad, numpy_triad, bandwidth, overhead)
    print()
    print("times in ms, median ± half the interquartile range; ratio = aotk / numpy (<1: aotk")
    print("faster); t1 against NumPy with 1 BLAS thread, both in one subprocess, their calls")
    print(f"alternating; t2 against NumPy in this process ({blas_threads()} BLAS threads);")
    print("t1/t2 = aotk's speed-up from its second thread, both timed in this process")
    _print_times(rows, paired)
    print()
    _print_rates(rows, sgemm, bandwidth)
    print(
        "rates from the median times; of lim = rate / limit. limit: 'sgemm' = the sgemm rate\n"
        "above x the thread count (GEMM-bound: only matmul and conv FLOPs are counted, a\n"
        "conv's as a direct sum: W5's 3x3 convs take fewer by Winograd, so > 1 is possible);\n"
        "'triad' = the bandwidth limit above (memory-bound: W1 and W7 read and write one\n"
        "array each; W3 b=1 reads its weights once, which may sit in cache: > 1 is possible)"
    )
    if peers:
        print()
        _print_peers([case.name for case, _, _ in rows], quick, rounds)


def _print_peers(names: list[str], quick: bool, rounds: int) -> None:
    from bench.peers import report, run

    python = run.peer_python()
    if python is None:
        print("no peers' interpreter: make .venv-peers as bench/peers/__init__.py says")
        return
    rounds_results, notes = run.collect(python, quick, rounds)
    report.print_table(names, rounds_results, notes)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="at most 5 timed calls a case")
    parser.add_argument("--peers", action="store_true", help="also time the peers")
    parser.add_argument(
        "--rounds", type=int, default=1, help="interleaved rounds of the peers' timings"
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    run(quick=args.quick, peers=args.peers, rounds=args.rounds)


if __name__ == "__main__":
    main()
