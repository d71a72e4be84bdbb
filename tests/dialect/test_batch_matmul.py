"""`aotk.batch_matmul` with transposed operands and entries side by side: compiled against
NumPy, the gradients' forms, and the fold of `batch_dot`'s transposes.

Float entries run as calls of the packed matmul micro-kernel, up to `BATCH_SLOTS` side
by side with a slot of scratch each; batches shorter and longer than the slots, not a
multiple of them, and entries big enough to run alone (the micro-kernel's own loops
splitting them) are covered. Errors are measured against |A| @ |B|, as in
`test_matmul_transposed`.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_product_close, emit, placeholder

from aotk import backend as K
from aotk import interp
from aotk.context import make_context
from aotk.dialect import trace
from aotk.dialect.batch_matmul import BATCH_SLOTS, WHOLE_ENTRY_WORK, BatchMatMulOp
from aotk.dialect.shape import TransposeOp
from aotk.function import Function
from aotk.transforms.simplify import AotkSimplifyPass

FLAGS = [(False, False), (True, False), (False, True), (True, True)]
FLAG_IDS = ["plain", "ta", "tb", "ta_tb"]
NAMES = ("transpose_lhs", "transpose_rhs")


def _flags(flags: tuple[bool, bool]) -> dict[str, bool]:
    return {n: True for n, on in zip(NAMES, flags, strict=True) if on}


def _operands(rng, shape: tuple[int, int, int, int], flags: tuple[bool, bool], dtype: str):
    """A [B, M, K] and B [B, K, N], and the arrays as stored under `flags`."""
    batch, m, k, n = shape
    a = rng.standard_normal((batch, m, k)).astype(dtype)
    b = rng.standard_normal((batch, k, n)).astype(dtype)
    swap = (
        (np.swapaxes(a, 1, 2).copy() if flags[0] else a),
        (np.swapaxes(b, 1, 2).copy() if flags[1] else b),
    )
    return a, b, swap


def _simplified_ops(inputs: list, outputs: list, arrays: list[np.ndarray]) -> list:
    """The ops of the traced graph after `aotk-simplify`, which must not change its values
    (beyond the rounding of a product summed in another order)."""
    module, _ = trace.extract(inputs, outputs)
    before = interp.run_module(module, arrays)
    AotkSimplifyPass().apply(make_context(), module)
    for was, now in zip(before, interp.run_module(module, arrays), strict=True):
        np.testing.assert_allclose(now, was, rtol=1e-5, atol=1e-5)
    return list(module.walk())


def _compile(flags: tuple[bool, bool], dtype: str = "float32") -> Function:
    x, w = placeholder((None,) * 3, dtype, "a"), placeholder((None,) * 3, dtype, "b")
    return Function([x, w], [emit(BatchMatMulOp, x, w, **_flags(flags))])


# (B, M, K, N): one entry; fewer entries than slots; more, not a multiple of them (82k
# multiply-adds each, B packed, enough to go side by side); odd edges; K = 0; no entries;
# entries that run alone
SHAPES = [
    (1, 5, 7, 3),
    (3, 17, 33, 20),
    (2 * BATCH_SLOTS + 3, 64, 32, 40),
    (11, 13, 9, 70),
    (4, 6, 0, 5),
    (0, 4, 5, 6),
    (3, 256, 256, 257),
]


@pytest.mark.parametrize("flags", FLAGS, ids=FLAG_IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_flag_and_batch_against_numpy(rng, flags, dtype) -> None:
    f = _compile(flags, dtype)
    for shape in SHAPES:
        a, b, stored = _operands(rng, shape, flags, dtype)
        for call in range(2):  # the second call finds its output holding the first's
            assert_product_close(f(list(stored))[0], a, b, f"{dtype} {shape} {flags} call {call}")


def test_the_shapes_cover_both_ways_of_running_entries() -> None:
    works = [m * k * n for _, m, k, n in SHAPES]
    assert max(works) >= WHOLE_ENTRY_WORK
    assert any(
        b > BATCH_SLOTS and b % BATCH_SLOTS and w >= 1 << 14
        for (b, *_), w in zip(SHAPES, works, strict=True)
    )


@pytest.mark.parametrize("dtype", ["int32", "float16"])
def test_other_dtypes_take_the_flags_too(rng, dtype) -> None:
    f = _compile((True, True), dtype)
    a = rng.integers(-4, 5, (3, 4, 6)).astype(dtype)
    b = rng.integers(-4, 5, (3, 6, 5)).astype(dtype)
    got = f([np.swapaxes(a, 1, 2).copy(), np.swapaxes(b, 1, 2).copy()])[0]
    np.testing.assert_array_equal(got, np.matmul(a, b))


def test_rank_and_contracted_dim_are_checked() -> None:
    x, w = placeholder((3, 4, 5, 6), "float32", "a"), placeholder((3, 6, 2), "float32", "b")
    with pytest.raises(ValueError, match=r"a transposed lhs must have rank 3, got \(3, 4, 5, 6\)"):
        emit(BatchMatMulOp, x, w, transpose_lhs=True)
    x = placeholder((3, 4, 5), "float32", "a")
    with pytest.raises(
        ValueError, match=r"contracted dims differ: axis 1 of \(3, 4, 5\) and axis 2"
    ):
        emit(BatchMatMulOp, x, w, transpose_lhs=True, transpose_rhs=True)


@pytest.mark.parametrize("flags", FLAGS, ids=FLAG_IDS)
def test_gradients_of_every_flag(rng, flags) -> None:
    """The gradients of the stored operands, against the plain product's worked out in
    NumPy, each one batch_matmul with no transpose."""
    a, b, stored = _operands(rng, (3, 4, 6, 5), flags, "float64")
    xs = [K.placeholder(s.shape, dtype="float64") for s in stored]
    y = emit(BatchMatMulOp, *xs, **_flags(flags))
    grads = K.gradients(K.sum(y * y), xs)
    got = K.function(xs, [y, *grads])(list(stored))
    g = 2 * (a @ b)
    want_ga, want_gb = g @ np.swapaxes(b, 1, 2), np.swapaxes(a, 1, 2) @ g
    np.testing.assert_allclose(got[0], a @ b, rtol=1e-12)
    np.testing.assert_allclose(
        got[1], np.swapaxes(want_ga, 1, 2) if flags[0] else want_ga, rtol=1e-12
    )
    np.testing.assert_allclose(
        got[2], np.swapaxes(want_gb, 1, 2) if flags[1] else want_gb, rtol=1e-12
    )
    ops = _simplified_ops(xs, grads, list(stored))
    assert not [op for op in ops if isinstance(op, TransposeOp)]


@pytest.mark.parametrize(
    ("axes", "shapes", "flags"),
    [
        ((2, 1), [(2, 3, 4), (2, 4, 5)], {}),
        ((1, 1), [(2, 4, 3), (2, 4, 5)], {"transpose_lhs": True}),
        ((2, 2), [(2, 3, 4), (2, 5, 4)], {"transpose_rhs": True}),
        ((1, 2), [(2, 4, 3), (2, 5, 4)], {"transpose_lhs": True, "transpose_rhs": True}),
    ],
)
def test_batch_dot_over_any_axes_copies_nothing(rng, axes, shapes, flags) -> None:
    xs = [K.placeholder(s) for s in shapes]
    arrays = [rng.standard_normal(s).astype("float32") for s in shapes]
    ops = _simplified_ops(xs, [K.batch_dot(*xs, axes=axes)], arrays)
    assert [op.attrs() for op in ops if isinstance(op, BatchMatMulOp)] == [flags]
    assert not [op for op in ops if isinstance(op, TransposeOp)]
