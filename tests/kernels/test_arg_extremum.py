"""argmax / argmin of float32 and float64 in vectors (`aotk.kernels.arg_extremum`): against
NumPy's, whose rule is the first extremum with a NaN counting as one (the first NaN).

Rows (the last axis) are read in chunks of 4 vectors and a scalar rest, so rows are
taken longer and shorter than a chunk, with and without a rest. Other axes walk blocks
of two vectors of the inner axis, so inner sizes are taken as whole blocks, with a
partial last block, and narrower than one vector. Values are few (ties everywhere),
and NaN and infinities are placed where each pass could miss them: after the first
maximum, in the rest, in every row, and as a whole row. The strided walk is also called
alone, its input before an unreadable page and its output between sentinels, so that a
partial block's lane masks are checked to the lane.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pytest
from conftest import before_unreadable_page, compile_kernel, emit, placeholder
from xdsl.builder import Builder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, MemRefType, f32, f64, i64
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from aotk import interp
from aotk.dialect.along_axis import ArgMaxOp, ArgMinOp
from aotk.function import Function
from aotk.kernels import arg_extremum, heuristics
from aotk.kernels.kernel import Buf, Kernel

OPS = {ArgMaxOp: np.argmax, ArgMinOp: np.argmin}
# (shape, axis): rows of 77 (2 chunks of f32 and a rest of 13), 64, 31 and 1; inner
# sizes of 37 (two blocks and 5), 40, 16 (one block) and 3
CASES = [
    ((5, 77), 1),
    ((3, 64), 1),
    ((4, 31), 1),
    ((6, 1), 1),
    ((33, 37), 0),
    ((2, 50, 40), 1),
    ((3, 7, 16), 1),
    ((9, 2, 3), 0),
]


def _values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, axis: int, call: int):
    x = rng.integers(-3, 4, shape).astype(dtype)
    if call == 0:
        return x
    moved = np.moveaxis(x, axis, -1)  # a view: writes land in x
    n = moved.shape[-1]
    moved[..., n - 1] = np.nan  # the last element of every line: after its first extremum
    if moved.shape[0] > 2:
        moved[1] = np.inf
        moved[2] = -np.inf
        moved[0] = np.nan  # a line of NaNs alone
    specials = np.array([np.nan, np.inf, -np.inf], dtype)
    mask = rng.random(shape) < 0.1
    x[mask] = rng.choice(specials, int(mask.sum()))
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", list(OPS), ids=lambda o: o.name)
def test_first_extremum_and_first_nan_like_numpy(rng, op, dtype):
    inputs = [placeholder(shape, dtype, f"x{i}") for i, (shape, _) in enumerate(CASES)]
    outputs = [emit(op, x, axis=axis) for x, (_, axis) in zip(inputs, CASES, strict=True)]
    f = Function(inputs, outputs)
    for call in range(3):
        arrays = [_values(rng, shape, dtype, axis, min(call, 1)) for shape, axis in CASES]
        got = f(arrays)
        oracle = interp.run_module(f.module, arrays)
        for (shape, axis), x, g, o in zip(CASES, arrays, got, oracle, strict=True):
            want = OPS[op](x, axis=axis)
            where = f"{op.name} {dtype} {shape} axis {axis} call {call}"
            np.testing.assert_array_equal(g, want, err_msg=where)
            np.testing.assert_array_equal(o, want, err_msg=f"oracle: {where}")


@pytest.mark.parametrize("op", list(OPS), ids=lambda o: o.name)
def test_dynamic_layouts_pick_rows_or_walks_at_run_time(rng, op):
    x = placeholder((None, None, None), "float32", "x")
    f = Function([x], [emit(op, x, axis=1)])
    for shape in [(2, 70, 1), (3, 9, 21), (1, 1, 40), (4, 33, 8)]:
        arr = _values(rng, shape, "float32", 1, 1)
        np.testing.assert_array_equal(f([arr])[0], OPS[op](arr, axis=1), err_msg=str(shape))


def test_hand_written_rows():
    x = placeholder((4, 40), "float32", "x")
    f = Function([x], [emit(ArgMaxOp, x, axis=1), emit(ArgMinOp, x, axis=1)])
    rows = np.zeros((4, 40), np.float32)
    rows[0, [5, 33]] = 7.0  # a tie: the first
    rows[1, 38] = np.nan  # a NaN in the rest, after the maximum at 2
    rows[1, 2] = 9.0
    rows[2, :] = -np.inf
    rows[2, 39] = np.nan
    rows[3, 17] = -1.0
    argmax, argmin = f([rows])
    np.testing.assert_array_equal(argmax, [5, 38, 39, 0])
    np.testing.assert_array_equal(argmin, [0, 38, 39, 17])


@functools.cache
def _strided_kernel(dtype: str, kind: str) -> Any:
    """walk(x, out, outer, n, inner): out[o, j] = arg`kind` of x[o, :, j], every dim dynamic."""
    elem = {"float32": f32, "float64": f64}[dtype]
    memrefs = [MemRefType(elem, [DYNAMIC_INDEX]), MemRefType(i64, [DYNAMIC_INDEX])]
    body = Block(arg_types=[*memrefs, i64, i64, i64])
    k = Kernel(Builder(InsertPoint.at_end(body)))
    outer, n, inner = (k.b.insert(arith.IndexCastOp(v, IndexType())).result for v in body.args[2:])
    x, out = Buf(body.args[0], (outer, n, inner), elem), Buf(body.args[1], (outer, inner), i64)
    arg_extremum.emit_strided(k, out, x, (outer, n, inner), kind)
    k.b.insert(func.ReturnOp())
    return compile_kernel("walk", body)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_partial_blocks_touch_only_their_lanes(rng, dtype, kind):
    """A block of the inner axis narrower than WALK_VECTORS vectors reads and writes only
    its own lanes: x's last element is followed by an unreadable page, and sentinels
    around `out` stay put. A lane too many would read the next line's first element
    (the page, after the last) and write the next output's first index (past `out`)."""
    lanes = heuristics.VECTOR_BYTES // np.dtype(dtype).itemsize
    width = arg_extremum.WALK_VECTORS * lanes
    walk = _strided_kernel(dtype, kind)["walk"]
    pick = OPS[ArgMaxOp if kind == "max" else ArgMinOp]
    for inner in (1, lanes - 1, lanes, lanes + 1, width - 1, width + 3, 3 * width - 5):
        for outer, n in ((1, 1), (3, 4), (2, 9)):
            x = before_unreadable_page(_values(rng, (outer, n, inner), dtype, 1, 1))
            pad = width
            around = np.full(outer * inner + 2 * pad, -7, np.int64)
            walk(x.ctypes.data, around.ctypes.data + pad * 8, outer, n, inner)
            where = f"{dtype} {kind} {(outer, n, inner)}"
            assert (around[:pad] == -7).all() and (around[-pad:] == -7).all(), where
            got = around[pad:-pad].reshape(outer, inner)
            np.testing.assert_array_equal(got, pick(x, axis=1), err_msg=where)
