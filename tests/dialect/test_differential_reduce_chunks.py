"""Reductions over a leading axis with a small output (BatchNorm's statistics, a conv's bias
gradient): chunks of the first axis sweep in parallel into copies of the output, combined
in a fixed order. Against the oracle, and where the chunks are used and not."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import emit, placeholder, random_array, run_both

from aotk.dialect.reduce import ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceSumOp
from aotk.function import Function
from aotk.lowering import pipeline

KINDS = [ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp]
# x with a dynamic first axis, the reduced axes, keepdims
SHAPES = [((9, 8, 5), (0, 1, 2), False), ((70, 3), (0, 1), True)]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("rest", "axes", "keepdims"), SHAPES)
def test_chunked_reductions_match_interpreted(kind, dtype, rest, axes, keepdims) -> None:
    """First axes of 1, 3 (fewer than the chunks), 20 and (where the op allows) 0 rows; a
    NaN among the floats."""
    rng = np.random.default_rng(6)
    x = placeholder((None, *rest), dtype, "x")
    y = emit(kind, x, axes=axes, keepdims=keepdims)
    domain = "small" if kind is ReduceProdOp else "any"
    calls = []
    empty_ok = kind in (ReduceSumOp, ReduceProdOp)  # no max or min of nothing
    for rows in (1, 3, 20, *((0,) if empty_ok else ())):
        xs = random_array(rng, (rows, *rest), dtype, domain)
        if dtype != "int32" and rows == 3:
            xs[2, 1] = np.nan
        calls.append([xs])
    run_both([x], [y], calls, scales=[1000.0])


def _parallel_loops(x_shape: tuple[int | None, ...], axes: tuple[int, ...]) -> int:
    x = placeholder(x_shape, "float32", "x")
    f = Function([x], [emit(ReduceSumOp, x, axes=axes, keepdims=False)])
    loops = pipeline.lower(f.module.clone(), stop_after="loops")
    return sum("aotk.parallel" in op.attributes for op in loops.walk())


def test_which_reductions_take_chunks() -> None:
    assert _parallel_loops((None, 9, 8, 5), (0, 1, 2)) == 1  # 72 elements a row: chunks
    assert _parallel_loops((None, 1024), (0,)) == 0  # one element a row: serial
    assert _parallel_loops((None, None, 8, 5), (0, 1, 2)) == 0  # a dynamic reduced axis
    assert _parallel_loops((None, 9, 8, 40000), (0, 1, 2)) == 0  # too large an output
