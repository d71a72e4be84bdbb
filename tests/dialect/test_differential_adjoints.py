"""Compiled == interpreted for the adjoint primitives that gradients of data movement use:
`aotk.gather_grad` (gather_grad.py), `aotk.upsample_linear_grad` (upsample.py) and
`aotk.sparse_gather` (sparse.py), with the case tables and checks of
test_differential_data.py, plus hand-written values.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import ALL_DTYPES, FLOATS, random_array
from test_differential_data import (
    Case,
    Gen,
    Operands,
    accepted_dtypes,
    compare_cases,
    gather_inputs,
    one_op,
)

from aotk import dtypes
from aotk.dialect import REGISTRY
from aotk.dialect.base import tensor
from aotk.dialect.gather_grad import GatherGradOp
from aotk.dialect.sparse import SparseGatherOp
from aotk.dialect.upsample import UpsampleLinearGradOp

COVERED_OPS = {UpsampleLinearGradOp, GatherGradOp, SparseGatherOp}


def _scatter_inputs(axis: int) -> Gen:
    """g at random, indices as for gather (repeats and out-of-range ones too), and x."""

    def gen(rng: np.random.Generator, shapes: list[tuple[int, ...]], dtype: str) -> list[Any]:
        g = random_array(rng, shapes[0], dtype, "small")
        x, idx = gather_inputs(axis)(rng, [shapes[2], shapes[1]], dtype)
        return [g, idx, x]

    return gen


def _point_inputs(rng: np.random.Generator, shapes: list[tuple[int, ...]], dtype: str) -> list[Any]:
    """int64 (nnz, rank) indices, some repeated and some outside the dense shape."""
    dense = shapes[1]
    idx = np.stack([rng.integers(-1, d + 2, shapes[0][0]) for d in dense], axis=1)
    return [idx.reshape(shapes[0]).astype(np.int64), random_array(rng, dense, dtype, "small")]


CASES: dict[type, list[Case]] = {
    UpsampleLinearGradOp: [
        Case(
            "axis1_dynamic",
            ((None, None, 2),),
            (((2, 9, 2),), ((1, 3, 2),)),
            {"axis": 1, "factor": 3},
        ),
        Case("last_axis", ((2, 8),), None, {"axis": 1, "factor": 2}),
        Case("factor_one", ((3, 2),), None, {"axis": 0, "factor": 1}),
        Case("factor_five", ((None,),), (((20,),), ((0,),)), {"axis": 0, "factor": 5}),
    ],
    GatherGradOp: [
        Case(
            "axis0_dynamic",
            ((None, 3), (None,), (None, 3)),
            (((6, 3), (6,), (4, 3)), ((1, 3), (1,), (2, 3))),
            {"axis": 0, "batch_dims": 0},
            _scatter_inputs(0),
        ),
        Case(
            "axis1_matrix_indices",
            ((2, 2, 4, 3), (2, 4), (2, 5, 3)),
            None,
            {"axis": 1, "batch_dims": 0},
            _scatter_inputs(1),
        ),
        Case(
            "batch_dims",
            ((None,), (None,), (None, 6)),
            (((3,), (3,), (3, 6)), ((5,), (5,), (5, 6))),
            {"axis": 1, "batch_dims": 1},
            _scatter_inputs(1),
        ),
        Case(
            "last_axis_batch_dims",
            ((2, 4, 5), (2, 5), (2, 4, 3)),
            None,
            {"axis": 2, "batch_dims": 1},
            _scatter_inputs(2),
        ),
        Case(
            "scalar_index",
            ((2,), (), (5, 2)),
            None,
            {"axis": 0, "batch_dims": 0},
            _scatter_inputs(0),
        ),
    ],
    SparseGatherOp: [
        Case(
            "dynamic",
            ((None, 2), (None, 3)),
            (((9, 2), (4, 3)), ((0, 2), (2, 3))),
            {},
            _point_inputs,
        ),
        Case("rank3", ((7, 3), (2, 3, 2)), None, {}, _point_inputs),
        Case("rank1", ((5, 1), (4,)), None, {}, _point_inputs),
    ],
}
DTYPES = {UpsampleLinearGradOp: FLOATS, GatherGradOp: FLOATS, SparseGatherOp: ALL_DTYPES}
OPERANDS: dict[type, Operands] = {
    GatherGradOp: lambda dtype: [dtype, "int32", dtype],
    SparseGatherOp: lambda dtype: ["int64", dtype],
}
OPS = sorted(COVERED_OPS, key=lambda o: o.name)


def test_covered_ops_are_registered():
    assert set(REGISTRY) >= COVERED_OPS


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_dtypes_are_what_infer_accepts(op):
    assert accepted_dtypes(op, CASES[op][0], OPERANDS) == DTYPES[op]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_compiled_matches_interpreted(op):
    compare_cases(op, CASES[op], DTYPES[op], OPERANDS)


def test_upsample_grad_against_hand_written_values():
    # the adjoint of [1, 2, 3, 5, 7, 7] = upsample([1, 3, 7]): weights (1, 1/2), (0, 1/2),
    # (1, 1/2) on the sources (i0, i1) of each output, i1 clamped to the last source
    g = np.array([1.0, 10.0, 100.0, 1000.0, 1e4, 1e5], np.float64)
    got = one_op(UpsampleLinearGradOp, [((6,), "float64")], [g], axis=0, factor=2)
    np.testing.assert_allclose(got, [1 + 5, 5 + 100 + 500, 500 + 1e4 + 1e5])


def test_gather_grad_sums_repeats_and_skips_out_of_range():
    g = np.array([[1.0, 2.0], [10.0, 20.0], [100.0, 200.0], [1e3, 2e3], [1e4, 2e4]])
    idx = np.array([2, -1, 0, 3, -4], np.int64)  # -1 is row 2; 3 and -4 are out of range
    specs = [((5, 2), "float64"), ((5,), "int64"), ((3, 2), "float64")]
    got = one_op(GatherGradOp, specs, [g, idx, np.zeros((3, 2))], axis=0, batch_dims=0)
    np.testing.assert_array_equal(got, [[100, 200], [0, 0], [11, 22]])


def test_sparse_gather_against_hand_written_values():
    dense = np.arange(6, dtype=np.int16).reshape(2, 3)
    idx = np.array([[1, 2], [0, 0], [2, 0], [1, -1], [1, 2]], np.int64)
    got = one_op(SparseGatherOp, [((5, 2), "int64"), ((2, 3), "int16")], [idx, dense])
    np.testing.assert_array_equal(got, np.array([5, 0, 0, 0, 5], np.int16))


@pytest.mark.parametrize(
    ("op", "shapes", "dtypes_", "attrs", "message"),
    [
        (UpsampleLinearGradOp, [(2, 3)], ["float32"], {"axis": 1, "factor": 2}, "not a multiple"),
        (UpsampleLinearGradOp, [(2, 4)], ["int32"], {"axis": 1, "factor": 2}, "float tensor"),
        (SparseGatherOp, [(4, 3), (2, 3)], ["int64", "int8"], {}, "3 coordinates for rank 2"),
        (SparseGatherOp, [(4, 2), (2, 3)], ["int32", "int8"], {}, "indices must be int64"),
        (
            GatherGradOp,
            [(3, 2), (4,), (3, 2)],
            ["float32", "int32", "float32"],
            {"axis": 0, "batch_dims": 0},
            r"g must be like the gather's result \(4, 2\)",
        ),
        (
            GatherGradOp,
            [(4, 2), (4,), (3, 2)],
            ["int32", "int32", "int32"],
            {"axis": 0, "batch_dims": 0},
            "float tensor",
        ),
    ],
)
def test_infer_rejects_bad_input(op, shapes, dtypes_, attrs, message):
    types = [tensor(dtypes.element_type(d), s) for d, s in zip(dtypes_, shapes, strict=True)]
    with pytest.raises((TypeError, ValueError), match=message):
        REGISTRY[op].infer(*types, **attrs)
