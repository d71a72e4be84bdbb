"""`aotk.matmul_update` (acc + alpha * lhs @ rhs): its oracle by hand, compiled against it
on every path of the matmul micro-kernel, its type rule and its gradient."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import emit, placeholder, run_both
from test_autodiff import check_gradients

from aotk import interp
from aotk.dialect import trace
from aotk.dialect.matmul_update import MatMulUpdateOp

COVERED_OPS = {MatMulUpdateOp}
Dims = tuple[int | None, int | None, int | None]

# (declared M, K, N; called M, K, N, twice; transpose_lhs, transpose_rhs, dtype)
CASES = [
    ((5, 7, 9), [(5, 7, 9)], False, False, "float32"),  # panels and a masked edge
    ((2, 50, 70), [(2, 50, 70)], False, False, "float64"),  # a GEMV: column stripes
    ((16, 64, 100), [(16, 64, 100)], False, False, "float32"),  # B read in place
    ((300, 40, 1010), [(300, 40, 1010)], False, False, "float32"),  # two panels, edge
    ((70, 257, 530), [(70, 257, 530)], True, False, "float32"),  # A packed, K in 2 blocks
    ((70, 257, 530), [(70, 257, 530)], False, True, "float64"),  # B packed, dot panels
    ((None, None, 20), [(3, 0, 20), (70, 300, 20)], True, True, "float64"),  # K = 0
    ((None, 24, 1024), [(1, 24, 1024), (130, 24, 1024)], False, False, "float32"),
    # narrower than a sliver: column tiles over all of K, threads splitting row tiles
    ((1030, 128, 10), [(1030, 128, 10)], True, False, "float32"),
    ((64, 300, 20), [(64, 300, 20)], False, False, "float64"),
]


def _stored(m: int | None, k: int | None, n: int | None, ta: bool, tb: bool) -> list[Dims]:
    """The shapes of acc, lhs and rhs as stored."""
    return [
        (m, n, None),
        (k, m, None) if ta else (m, k, None),
        (n, k, None) if tb else (k, n, None),
    ]


def _placeholders(dims: Dims, ta: bool, tb: bool, dtype: str) -> list[trace.KTensor]:
    shapes = [s[:2] for s in _stored(*dims, ta, tb)]
    return [placeholder(s, dtype, f"in{i}") for i, s in enumerate(shapes)] + [
        placeholder((), dtype, "alpha")
    ]


@pytest.mark.parametrize(("decl", "calls", "ta", "tb", "dtype"), CASES)
def test_compiled_matches_interpreted(rng: np.random.Generator, decl, calls, ta, tb, dtype) -> None:
    xs = _placeholders(decl, ta, tb, dtype)
    y = emit(MatMulUpdateOp, *xs, transpose_lhs=ta, transpose_rhs=tb)
    arrays = []
    for m, k, n in calls:
        shapes = [s[:2] for s in _stored(m, k, n, ta, tb)]
        operands = [rng.standard_normal(s).astype(dtype) for s in shapes]
        arrays.append([*operands, np.array(rng.uniform(-2, 2), dtype)])
    run_both(xs, [y], arrays, scales=[max(c[1] for c in calls)])


def test_the_oracle_by_hand() -> None:
    xs = _placeholders((2, 2, 2), False, False, "float64")
    y = emit(MatMulUpdateOp, *xs)
    module, _ = trace.extract(xs, [y], "test")
    acc, a, b = (
        np.array([[1.0, 2], [3, 4]]),
        np.array([[1.0, 0], [0, 2]]),
        np.array([[1.0, 1], [0, 1]]),
    )
    (got,) = interp.run_module(module, [acc, a, b, np.array(-0.5)])
    np.testing.assert_array_equal(got, [[0.5, 1.5], [3.0, 3.0]])  # a @ b = [[1, 1], [0, 2]]


@pytest.mark.parametrize(
    ("shapes", "dtype", "error", "message"),
    [
        ([(4, 2), (4, 5), (5, 3), ()], "float32", ValueError, "accumulator of the product's type"),
        ([(4, 3), (4, 5), (5, 3), (1,)], "float32", ValueError, "scalar alpha"),
        ([(4, 3), (4, 5), (5, 3), ()], "float16", TypeError, "float32 or float64"),
        ([(4, 3), (4, 5), (5, 3), ()], "int32", TypeError, "float32 or float64"),
        ([(4, 3), (4, 6), (5, 3), ()], "float32", ValueError, "contracted dims differ"),
    ],
)
def test_bad_operands_are_named(shapes, dtype, error, message) -> None:
    xs = [placeholder(s, dtype, f"in{i}") for i, s in enumerate(shapes)]
    with pytest.raises(error, match=message):
        emit(MatMulUpdateOp, *xs)


@pytest.mark.usefixtures("float64")
@pytest.mark.parametrize(("ta", "tb"), [(False, False), (True, False), (False, True)])
def test_gradient_by_finite_differences(rng: np.random.Generator, ta: bool, tb: bool) -> None:
    shapes = [s[:2] for s in _stored(3, 4, 2, ta, tb)]
    arrays = [rng.standard_normal(s) for s in shapes] + [np.array(0.7)]
    check_gradients(
        lambda *xs: trace.emit(
            MatMulUpdateOp, *xs, where="test", transpose_lhs=ta, transpose_rhs=tb
        ),
        arrays,
    )
