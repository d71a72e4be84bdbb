"""Compiled == interpreted for `aotk.matmul_packed_weight`, the matmul a K.function runs
on a weight it does not write (`aotk.weight_packs`); its oracle against values worked by
hand; and what it rejects.

The compiled function reads the packed copy of the weight; the interpreter runs the
traced module, a plain `aotk.matmul` on the weight.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_close
from xdsl.dialects.builtin import f32

from aotk import backend as K
from aotk import interp
from aotk.dialect.base import tensor
from aotk.dialect.matmul_packed_weight import MatMulPackedWeightOp, packed_size
from aotk.dialect.registry import REGISTRY
from aotk.kernels import matmul_prepacked

COVERED_OPS = {MatMulPackedWeightOp}

WIDTH = matmul_prepacked.sliver_width(f32)  # on this host
# (x's shape, weight's [K, N], the two calls' leading dims): N from one sliver to several,
# a last sliver one column short, K odd, and a rank-3 x (leading dims folded into M)
CASES = [
    ((None, 37), (37, 64), [(130,), (1,)]),
    ((None, 300), (300, 100), [(64,), (0,)]),
    ((None, 5, 24), (24, 200), [(3,), (2,)]),
    ((None, 16), (16, 2 * WIDTH - 1), [(9,), (2,)]),
    ((None, 128), (128, 512), [(33,), (3,)]),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_compiled_matches_interpreted(rng: np.random.Generator, dtype: str) -> None:
    xs = [K.placeholder(x, dtype=dtype) for x, _, _ in CASES]
    ws = [K.variable(rng.standard_normal(w).astype(dtype), dtype=dtype) for _, w, _ in CASES]
    f = K.function(xs, [K.dot(x, w) for x, w in zip(xs, ws, strict=True)])
    assert sorted((p.kdim, p.n) for p in f._packs) == sorted(w for _, w, _ in CASES)
    for call in range(2):
        arrays = [rng.standard_normal((*lead[call], *x[1:])).astype(dtype) for x, _, lead in CASES]
        got = f(arrays)
        want = interp.run_module(f.module, [*arrays, *(c.storage for c in f.captures)])
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert g.shape == w.shape and g.dtype == dtype
            kdim = CASES[i][1][0]  # rounding grows with K, as for aotk.matmul's cases
            scale, rscale = kdim / 4 + 1, 9.0 * kdim
            assert_close(g, w, scale, rscale, msg=f"case {i}, call {call}")


def test_oracle_reads_the_weight() -> None:
    """The interpreter's rule, worked by hand: [1, 2] @ [[1, 0, 2], [3, 1, 0]]; the
    packed operand is not read (NaN here)."""
    rule = REGISTRY[MatMulPackedWeightOp]
    a = np.array([[1.0, 2.0]], np.float32)
    w = np.array([[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]], np.float32)
    got = rule.numpy(a, w, np.full(packed_size(f32, 3, 2), np.nan, np.float32))
    np.testing.assert_array_equal(got, [[7.0, 2.0, 2.0]])


def test_operands_are_checked() -> None:
    rule = REGISTRY[MatMulPackedWeightOp]
    a, w = tensor(f32, [None, 2]), tensor(f32, [2, 3])
    size = packed_size(f32, 3, 2)
    assert size == matmul_prepacked.sliver_width(f32) * 2  # one sliver, zero-padded
    assert rule.infer(a, w, tensor(f32, [size])) == tensor(f32, [None, 3])
    with pytest.raises(ValueError, match=f"packed must be a float32 vector of {size} elements"):
        rule.infer(a, w, tensor(f32, [size - 1]))
    with pytest.raises(TypeError, match=r"static shape, got float32 \(None, 3\)"):
        rule.infer(a, tensor(f32, [None, 3]), tensor(f32, [size]))
