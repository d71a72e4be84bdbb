"""`aotk.matmul` with `transpose_lhs` / `transpose_rhs`: compiled against NumPy.

A transposed B is packed by columns (M >= 2 * mr), in squares of lanes x lanes
transposed in registers and the K left over element by element, or read by dot products
(fewer rows, and the last columns and rows around the packed tiles); a transposed A is
packed per K block. The shapes cover each path, its edges (70 x 257 x 530: a K block of
one row; 20 x 40 x 1010: two panels of B, K of two squares and 8 left over), and
dynamic dims; errors are measured
against |A| @ |B| as in `test_matmul_kernel`.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_product_close, emit, placeholder

from aotk.dialect.linalg import MatMulOp
from aotk.function import Function

FLAGS = [(True, False), (False, True), (True, True)]
SHAPES = [
    (1, 1, 1),
    (1, 300, 37),
    (5, 17, 33),
    (12, 64, 48),
    (13, 9, 20),
    (70, 257, 530),
    (20, 40, 1010),
]


def _operands(rng, m: int, k: int, n: int, flags: tuple[bool, bool], dtype: str):
    a = rng.standard_normal((m, k)).astype(dtype)
    b = rng.standard_normal((k, n)).astype(dtype)
    stored = (a.T.copy() if flags[0] else a), (b.T.copy() if flags[1] else b)
    return a, b, stored


def _compile(shapes, dtype: str, flags: tuple[bool, bool]) -> Function:
    x, w = placeholder(shapes[0], dtype, "a"), placeholder(shapes[1], dtype, "b")
    attrs = {"transpose_lhs": flags[0], "transpose_rhs": flags[1]}
    return Function([x, w], [emit(MatMulOp, x, w, **{k: v for k, v in attrs.items() if v})])


@pytest.mark.parametrize("flags", FLAGS, ids=["ta", "tb", "ta_tb"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_static(rng: np.random.Generator, shape, dtype: str, flags) -> None:
    a, b, stored = _operands(rng, *shape, flags, dtype)
    f = _compile([x.shape for x in stored], dtype, flags)
    assert_product_close(f(list(stored))[0], a, b, f"{dtype} {shape} {flags}")


@pytest.mark.parametrize("flags", FLAGS, ids=["ta", "tb", "ta_tb"])
def test_dynamic_dims_one_kernel(rng: np.random.Generator, flags) -> None:
    f = _compile([(None, None), (None, None)], "float32", flags)
    for m, k, n in [(1, 5, 3), (6, 7, 16), (11, 40, 17), (64, 33, 64), (97, 130, 1030), (0, 3, 4)]:
        a, b, stored = _operands(rng, m, k, n, flags, "float32")
        assert_product_close(f(list(stored))[0], a, b, f"dynamic {m}x{k}x{n} {flags}")


def test_rank_and_contracted_dim_are_checked() -> None:
    x, w = placeholder((3, 4, 5), "float32", "a"), placeholder((5, 2), "float32", "b")
    with pytest.raises(ValueError, match=r"lhs of rank 2 \(transposed\)"):
        emit(MatMulOp, x, w, transpose_lhs=True)
    x = placeholder((4, 3), "float32", "a")
    with pytest.raises(ValueError, match="contracted dims differ"):
        emit(MatMulOp, x, w, transpose_rhs=True)


@pytest.mark.parametrize("flags", FLAGS, ids=["ta", "tb", "ta_tb"])
def test_oracle_and_gradient_follow_the_flags(rng: np.random.Generator, flags) -> None:
    """The gradient rule gives the stored operands' gradients (checked against the
    untransposed product's); the oracle is checked in test_differential."""
    from aotk import backend as K

    a, b, stored = _operands(rng, 3, 4, 5, flags, "float64")
    xs = [K.placeholder(s.shape, dtype="float64") for s in stored]
    names = ("transpose_lhs", "transpose_rhs")
    y = emit(MatMulOp, *xs, **{n: True for n, on in zip(names, flags, strict=True) if on})
    grads = K.gradients(K.sum(y * y), xs)
    got = K.function(xs, [y, *grads])(list(stored))
    want_y = a @ b
    g = 2 * want_y
    want_ga, want_gb = g @ b.T, a.T @ g
    np.testing.assert_allclose(got[0], want_y, rtol=1e-12)
    np.testing.assert_allclose(got[1], want_ga.T if flags[0] else want_ga, rtol=1e-12)
    np.testing.assert_allclose(got[2], want_gb.T if flags[1] else want_gb, rtol=1e-12)
