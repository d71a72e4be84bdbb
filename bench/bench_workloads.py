"""The seven workloads of issue #12, aotk at one and two threads against NumPy and the machine.

W1 elementwise chain, W2 matmul, W3 MLP (batch 1, 256), W4 its SGD step, W5 CNN, W6 LSTM
(forward, SGD step), W7 row softmax; graphs from `bench.workloads` and the older modules,
NumPy references there and in `bench.reference_numpy`. The header gives the limits measured
in the same run (OpenBLAS sgemm on one thread, a triad). Run `python -m bench.bench_workloads`
(`--quick`: at most 5 timed calls per case).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bench import bench_elementwise, bench_mlp, bench_training, workloads
from bench import reference_numpy as ref
from bench.common import (
    Case,
    Timing,
    blas_threads,
    check_same,
    measure,
    measure_threads,
    numpy_one_thread,
    repeats,
    thread_note,
)

THREADS = (1, 2)
GEMM = 1024
TRIAD_N = 2**24
TRIAD_S = 3.0
LR = 0.01  # the SGD rate of `workloads.sgd_updates`
MODULE = "bench.bench_workloads"
Step = Callable[[list[np.ndarray]], tuple[float, list[np.ndarray]]]


def _function(graph: Callable[[], workloads.Graph]) -> tuple[Any, list[Any]]:
    """K.function of a `bench.workloads` graph, and the variables its updates write."""
    from aotk import backend as K

    inputs, outputs, updates = graph()
    return K.function(inputs, outputs, updates=updates), [u.variable for u in updates]


def _check_step(name: str, step: Callable[[], Any], variables: list[Any], numpy: Step) -> None:
    """One aotk training step against `numpy` in float64 from the same weights: the loss,
    and each weight's change (so the check sees the gradient, not mostly the old weight)."""
    from aotk import backend as K

    before = [K.get_value(v) for v in variables]
    loss = step()
    want_loss, want = numpy([b.astype(np.float64) for b in before])
    check_same(f"{name} loss", loss, want_loss)
    for i, (v, b, w) in enumerate(zip(variables, before, want, strict=True)):
        got, change = K.get_value(v) - b.astype(np.float64), w - b
        # float32 weights round each change to within half an ulp of the weight
        tol = 1e-3 * np.abs(change).max() + np.spacing(np.abs(b).max())
        err = float(np.abs(got - change).max())
        if not err <= tol:
            raise AssertionError(f"{name}: weight {i} changes by {err:.2e} more than NumPy's")


def _w1(with_aotk: bool) -> Case:
    (case,) = bench_elementwise.cases(with_aotk)
    nbytes = 2 * 4 * bench_elementwise.N  # read x, write y
    return Case("W1 tanh*sigmoid chain 2^22", case.numpy, case.aotk, repeat=20, nbytes=nbytes)


def _w2(with_aotk: bool) -> Case:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((GEMM, GEMM)).astype(np.float32) for _ in range(2))
    fn = None
    if with_aotk:
        from aotk import backend as K

        pa, pb = K.placeholder(shape=(GEMM, GEMM)), K.placeholder(shape=(GEMM, GEMM))
        f = K.function([pa, pb], [K.dot(pa, pb)])
        fn = lambda: f([a, b])[0]  # noqa: E731
    return Case("W2 matmul 1024^3", lambda: a @ b, fn, flops=2.0 * GEMM**3, repeat=20)


def _w3(with_aotk: bool) -> list[Case]:
    layers = bench_mlp._weights()
    mlp = bench_mlp._aotk_fns(layers)[0] if with_aotk else None
    rng = np.random.default_rng(0)
    weights = 4.0 * sum(w.size + b.size for w, b in layers)
    out = []
    for n in bench_mlp.BATCHES:
        x = rng.standard_normal((n, bench_mlp.SIZES[0])).astype(np.float32)
        fn = (lambda x=x: mlp([x])[0]) if mlp is not None else None  # type: ignore[operator]
        out.append(
            Case(
                f"W3 mlp 784-1024-1024-10 b={n}",
                lambda x=x: bench_mlp._numpy_mlp(x, layers),
                fn,
                repeat=200 if n == 1 else 30,
                flops=None if n == 1 else bench_mlp._flops(n),
                nbytes=weights if n == 1 else None,  # a GEMV: it streams the weights
            )
        )
    return out


def _w4(with_aotk: bool) -> Case:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((bench_training.BATCH, workloads.MLP[0])).astype(np.float32)
    y = np.eye(workloads.MLP[-1], dtype=np.float32)[rng.integers(0, 10, bench_training.BATCH)]
    params = [
        workloads._array(s, i // 2) if i % 2 == 0 else np.zeros(s, np.float32)
        for i, s in enumerate(_mlp_shapes())
    ]

    def numpy_step(p: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        return bench_training._numpy_sgd_step(p, x, y), p

    name, fn, check = "W4 mlp sgd step b=128", None, None
    if with_aotk:
        f, variables = _function(workloads.w4_mlp_sgd)
        fn = lambda: f([x, y])[0]  # noqa: E731
        check = lambda: _check_step(name, fn, variables, numpy_step)  # noqa: E731
    forward = sum(2.0 * bench_training.BATCH * a * b for a, b in itertools.pairwise(workloads.MLP))
    own = [p.copy() for p in params]
    return Case(name, lambda: numpy_step(own), fn, flops=3 * forward, repeat=10, check=check)


def _mlp_shapes() -> list[tuple[int, ...]]:
    """Weight and bias shapes of `workloads._mlp`, in its order."""
    return [s for a, b in itertools.pairwise(workloads.MLP) for s in ((a, b), (b,))]


def _w5(with_aotk: bool) -> Case:
    x = np.random.default_rng(0).standard_normal((64, 32, 32, 3)).astype(np.float32)
    k1, k2 = workloads._array((3, 3, 3, 32), 1), workloads._array((3, 3, 32, 64), 2)
    w_out = workloads._array((16 * 16 * 64, 10), 4)
    fn = None
    if with_aotk:
        f = _function(workloads.w5_cnn)[0]
        fn = lambda: f([x])[0]  # noqa: E731
    pixels = 64 * 32 * 32
    flops = 2.0 * pixels * (27 * 32 + 288 * 64) + 2.0 * 64 * 16 * 16 * 64 * 10
    return Case(
        "W5 cnn b=64 32x32x3", lambda: ref.cnn(x, k1, k2, w_out), fn, flops=flops, repeat=10
    )


def _w6(with_aotk: bool) -> list[Case]:
    b, t, d, h = workloads.LSTM_B, workloads.LSTM_T, workloads.LSTM_D, workloads.LSTM_H
    xs = np.random.default_rng(0).standard_normal((b, t, d)).astype(np.float32)
    w, u = workloads._array((d, 4 * h), 5), workloads._array((h, 4 * h), 6)

    def numpy_step(p: list[np.ndarray]) -> tuple[float, list[np.ndarray]]:
        loss, w_new, u_new = ref.lstm_sgd(xs, p[0], p[1], LR)
        return loss, [w_new, u_new]

    name, fwd, step, check = "W6 lstm sgd step", None, None, None
    if with_aotk:
        f = _function(workloads.w6_lstm)[0]
        fwd = lambda: f([xs])[0]  # noqa: E731
        g, variables = _function(workloads.w6_lstm_sgd)
        step = lambda: g([xs])[0]  # noqa: E731
        check = lambda: _check_step(name, step, variables, numpy_step)  # noqa: E731
    flops = 2.0 * t * b * 4 * h * (d + h)
    return [
        Case("W6 lstm b=32 t=50 64->128", lambda: ref.lstm_forward(xs, w, u), fwd, flops=flops),
        Case(
            name,
            lambda: numpy_step([w, u]),
            step,
            flops=2.0 * t * b * 4 * h * (2 * d + 3 * h),  # forward, dz U^T, x^T dz, h^T dz
            repeat=10,
            check=check,
        ),
    ]


def _w7(with_aotk: bool) -> Case:
    x = np.random.default_rng(0).standard_normal((4096, 1024)).astype(np.float32)
    fn = None
    if with_aotk:
        from aotk import backend as K

        p = K.placeholder(shape=(None, 1024))
        f = K.function([p], [K.softmax(p)])
        fn = lambda: f([x])[0]  # noqa: E731
    return Case("W7 softmax rows 4096x1024", lambda: ref.softmax_rows(x), fn, nbytes=2.0 * x.nbytes)


def cases(with_aotk: bool = True) -> list[Case]:
    """Every workload: NumPy and, with `with_aotk`, the compiled aotk function."""
    return [
        _w1(with_aotk),
        _w2(with_aotk),
        *_w3(with_aotk),
        _w4(with_aotk),
        _w5(with_aotk),
        *_w6(with_aotk),
        _w7(with_aotk),
    ]


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


Row = tuple[Case, dict[int, Timing], Timing]


def _ms(t: Timing | None) -> str:
    return "-" if t is None else f"{t.median * 1e3:8.3f} ±{t.iqr / 2 * 1e3:6.3f}"


def _over(num: Timing | None, den: Timing | None) -> str:
    return "-" if num is None or den is None else f"{num.median / den.median:.2f}"


def _print_times(rows: Sequence[Row], single: dict[str, Timing]) -> None:
    head = (
        f"{'workload':30} {'aotk t1':>16} {'numpy 1 thr':>16} {'ratio':>6}  "
        f"{'aotk t2':>16} {'numpy':>16} {'ratio':>6} {'t1/t2':>6}"
    )
    print(head)
    print("-" * len(head))
    for case, ts, np_t in rows:
        one = single.get(case.name)
        print(
            f"{case.name:30} {_ms(ts[1]):>16} {_ms(one):>16} {_over(ts[1], one):>6}  "
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


def run(quick: bool = False) -> None:
    """Measure the limits and every workload; print the header and two tables."""
    kernel_triad, numpy_triad = _triads(quick)
    rows: list[Row] = []
    for case in cases(True):
        assert case.aotk is not None
        case.verify()
        n = repeats(case, quick)
        rows.append((case, measure_threads(case.aotk, THREADS, n), measure(case.numpy, n)))
    single = numpy_one_thread([MODULE], quick)
    w2 = single.get("W2 matmul 1024^3")
    sgemm = 2.0 * GEMM**3 / w2.lo / 1e9 if w2 is not None else None
    # the best triad any run reached with at most n threads
    bandwidth = {
        n: max([numpy_triad, *(kernel_triad[m] for m in THREADS if m <= n)]) for n in THREADS
    }
    _print_header(quick, sgemm, kernel_triad, numpy_triad, bandwidth)
    print()
    print("times in ms, median ± half the interquartile range; ratio = aotk / numpy (<1: aotk")
    print("faster); t1 against NumPy with 1 BLAS thread, t2 against NumPy in this process")
    print(f"({blas_threads()} BLAS threads); t1/t2 = aotk's speed-up from its second thread")
    _print_times(rows, single)
    print()
    _print_rates(rows, sgemm, bandwidth)
    print(
        "rates from the median times; of lim = rate / limit. limit: 'sgemm' = the sgemm rate\n"
        "above x the thread count (GEMM-bound: only matmul and conv FLOPs are counted);\n"
        "'triad' = the bandwidth limit above (memory-bound: W1 and W7 read and write one\n"
        "array each; W3 b=1 reads its weights once, which may sit in cache: > 1 is possible)"
    )


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
