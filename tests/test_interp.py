"""The NumPy oracle against expectations written out by hand, for the tricky rules.

Each expected array below was computed by hand from the literal inputs, never by calling
the NumPy function the rule itself uses.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from conftest import emit, placeholder
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, ModuleOp, f32
from xdsl.ir import Block, Region

from aotk import dtypes, interp
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import linalg, reduce, shape, shape_query, trace
from aotk.dialect import unary as un
from aotk.dialect.base import tensor
from aotk.dialect.fused import FusedOp, YieldOp

FULL = shape.FULL
F32 = np.float32


def run(op: Any, *arrays: Any, declared: Any = None, **attrs: Any) -> np.ndarray:
    """Interpret a one-op function of `arrays` (declared with their shapes, or `declared`)."""
    arrays = tuple(np.asarray(a) for a in arrays)
    shapes = declared or [a.shape for a in arrays]
    xs = [
        placeholder(s, a.dtype.name, f"x{i}")
        for i, (s, a) in enumerate(zip(shapes, arrays, strict=True))
    ]
    y = emit(op, *xs, **attrs)
    module, _ = trace.extract(xs, [y])
    module.verify()
    [out] = interp.run_module(module, list(arrays))
    return out


def check(got: np.ndarray, want: Any, dtype: str) -> None:
    want = np.asarray(want, dtype=dtype)
    assert got.dtype == want.dtype
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_binary_broadcasting_of_a_column_against_a_row():
    got = run(ar.AddOp, np.array([[1], [2]], F32), np.array([10, 20, 30], F32))
    check(got, [[11, 21, 31], [12, 22, 32]], "float32")


def test_broadcasting_a_rank0_operand_and_a_dynamic_dim():
    got = run(
        ar.SubOp,
        np.array(10, np.int32),
        np.array([[1, 2], [3, 4], [5, 6]], np.int32),
        declared=[(), (None, 2)],
    )
    check(got, [[9, 8], [7, 6], [5, 4]], "int32")


def test_comparison_broadcasts_and_gives_bool():
    got = run(cmp.GreaterEqualOp, np.array([[1], [3]], np.int8), np.array([0, 2, 3], np.int8))
    check(got, [[True, False, False], [True, True, True]], "bool")


def test_comparisons_with_nan_are_false_except_not_equal():
    nan = np.array([np.nan, 1.0], F32)
    one = np.array([1.0, 1.0], F32)
    check(run(cmp.EqualOp, nan, one), [False, True], "bool")
    check(run(cmp.NotEqualOp, nan, one), [True, False], "bool")
    check(run(cmp.LessOp, nan, one), [False, False], "bool")


def test_maximum_and_minimum_propagate_nan():
    a = np.array([np.nan, 1.0, -2.0], F32)
    b = np.array([0.0, np.nan, 3.0], F32)
    check(run(ar.MaximumOp, a, b), [np.nan, np.nan, 3.0], "float32")
    check(run(ar.MinimumOp, a, b), [np.nan, np.nan, -2.0], "float32")


def test_sign_keeps_nan_and_zero():
    check(run(un.SignOp, np.array([-3.5, 0.0, 2.0, np.nan], F32)), [-1, 0, 1, np.nan], "float32")
    check(run(un.SignOp, np.array([-7, 0, 9], np.int16)), [-1, 0, 1], "int16")


def test_division_by_zero_gives_signed_infinities():
    got = run(ar.DivOp, np.array([1.0, -1.0, 0.0, 6.0], F32), np.array([0.0, 0.0, 0.0, 4.0], F32))
    check(got, [np.inf, -np.inf, np.nan, 1.5], "float32")


def test_integer_arithmetic_wraps():
    check(
        run(ar.AddOp, np.array([127, -128], np.int8), np.array([1, -1], np.int8)),
        [-128, 127],
        "int8",
    )
    check(run(un.NegOp, np.array([3, 0], np.uint8)), [253, 0], "uint8")


@pytest.mark.parametrize(
    ("op", "axes", "keepdims", "want"),
    [
        (reduce.ReduceSumOp, (0,), False, [5, 7, 9]),
        (reduce.ReduceSumOp, (1,), True, [[6], [15]]),
        (reduce.ReduceSumOp, (0, 1), False, 21),
        (reduce.ReduceSumOp, (0, 1), True, [[21]]),
        (reduce.ReduceSumOp, (), False, [[1, 2, 3], [4, 5, 6]]),
        (reduce.ReduceProdOp, (1,), False, [6, 120]),
        (reduce.ReduceMaxOp, (0,), True, [[4, 5, 6]]),
        (reduce.ReduceMinOp, (1,), False, [1, 4]),
    ],
)
def test_reductions_over_axis_lists(op, axes, keepdims, want):
    x = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    check(run(op, x, axes=axes, keepdims=keepdims), want, "int32")


def test_reduction_over_outer_and_inner_axes_of_rank3():
    x = np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], F32)
    check(run(reduce.ReduceSumOp, x, axes=(0, 2), keepdims=False), [14, 22], "float32")
    check(run(reduce.ReduceSumOp, x, axes=(0, 2), keepdims=True), [[[14], [22]]], "float32")
    check(run(reduce.ReduceMaxOp, x, axes=(1,), keepdims=False), [[3, 4], [7, 8]], "float32")


def test_reduction_of_a_dynamic_dim():
    got = run(
        reduce.ReduceSumOp,
        np.array([[1, 2], [3, 4], [5, 6]], np.int64),
        declared=[(None, 2)],
        axes=(0,),
        keepdims=False,
    )
    check(got, [9, 12], "int64")


def test_max_propagates_nan():
    got = run(
        reduce.ReduceMaxOp, np.array([[1.0, np.nan], [2.0, 3.0]], F32), axes=(1,), keepdims=False
    )
    check(got, [np.nan, 3.0], "float32")


B = np.array([[1, 10], [100, 1000]], F32)


def test_matmul_folds_the_leading_dims_of_a_rank3_lhs():
    a = np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], F32)
    check(
        run(linalg.MatMulOp, a, B),
        [[[201, 2010], [403, 4030]], [[605, 6050], [807, 8070]]],
        "float32",
    )


def test_matmul_of_a_vector_lhs():
    check(run(linalg.MatMulOp, np.array([1, 2], F32), B), [201, 2010], "float32")


def test_matmul_of_int8_wraps():
    a = np.array([[16, 1]], np.int8)
    b = np.array([[8], [3]], np.int8)
    check(run(linalg.MatMulOp, a, b), [[-125]], "int8")  # 128 + 3 = 131 wraps to -125


def test_reshape_infers_the_minus_one_dim():
    x = np.array([0, 1, 2, 3, 4, 5], np.int16)
    check(run(shape.ReshapeOp, x, shape=(-1, 2)), [[0, 1], [2, 3], [4, 5]], "int16")
    check(run(shape.ReshapeOp, x, shape=(3, -1)), [[0, 1], [2, 3], [4, 5]], "int16")
    check(
        run(shape.ReshapeOp, x, declared=[(None,)], shape=(2, -1)), [[0, 1, 2], [3, 4, 5]], "int16"
    )


def test_transpose_of_a_matrix_and_of_rank3():
    x = np.array([[1, 2, 3], [4, 5, 6]], F32)
    check(run(shape.TransposeOp, x, perm=(1, 0)), [[1, 4], [2, 5], [3, 6]], "float32")
    check(
        run(shape.TransposeOp, x[None], perm=(2, 0, 1)), [[[1, 4]], [[2, 5]], [[3, 6]]], "float32"
    )


def test_transpose_reading_axes_back_to_front():
    x = np.array([[1, 2, 3], [4, 5, 6]], F32)
    check(run(shape.TransposeOp, x, perm=(1, 0), reverse=(1,)), [[3, 6], [2, 5], [1, 4]], "float32")
    check(run(shape.TransposeOp, x, perm=(1, 0), reverse=(0,)), [[4, 1], [5, 2], [6, 3]], "float32")
    taps = np.array([[[1, 2]], [[3, 4]], [[5, 6]]], F32)  # three 1 x 2 matrices
    want = [[[5], [6]], [[3], [4]], [[1], [2]]]  # each transposed, last first
    check(run(shape.TransposeOp, taps, perm=(0, 2, 1), reverse=(0,)), want, "float32")


def test_transpose_of_a_scalar_stays_a_scalar():
    check(run(shape.TransposeOp, np.array(7.0, F32), perm=()), 7.0, "float32")


def test_concat_along_each_axis():
    check(
        run(shape.ConcatOp, np.array([[1, 2]]), np.array([[3, 4], [5, 6]]), axis=0),
        [[1, 2], [3, 4], [5, 6]],
        "int64",
    )
    check(
        run(shape.ConcatOp, np.array([[1], [2]]), np.array([[3, 4], [5, 6]]), axis=1),
        [[1, 3, 4], [2, 5, 6]],
        "int64",
    )


@pytest.mark.parametrize(
    ("start", "stop", "step", "want"),
    [
        (-1, FULL, -2, [6, 4, 2, 0]),
        (5, 1, -2, [5, 3]),
        (-3, -1, 1, [4, 5]),
        (-100, 100, 3, [0, 3, 6]),
        (2, 2, 1, []),
        (0, -8, -1, [0]),
    ],
)
def test_slice_with_negative_indices_and_steps(start, stop, step, want):
    got = run(
        shape.SliceOp, np.arange(7, dtype=np.int32), start=(start,), stop=(stop,), step=(step,)
    )
    check(got, want, "int32")


def test_slice_reverses_both_axes_of_a_matrix():
    x = np.array([[0, 1, 2], [3, 4, 5]], np.uint8)
    got = run(shape.SliceOp, x, start=(1, -1), stop=(FULL, FULL), step=(-1, -1))
    check(got, [[5, 4, 3], [2, 1, 0]], "uint8")


def test_select_broadcasts_condition_and_branches():
    cond = np.array([[True], [False]])
    got = run(cmp.SelectOp, cond, np.array([1, 2, 3], F32), np.array(0, F32))
    check(got, [[1, 2, 3], [0, 0, 0]], "float32")


def test_cast_float_to_int_truncates_toward_zero():
    x = np.array([-2.7, -0.5, 0.5, 2.7, 3.0], F32)
    check(run(ew.CastOp, x, dtype="int32"), [-2, 0, 0, 2, 3], "int32")
    check(run(ew.CastOp, np.array([0.9, 255.9], np.float64), dtype="uint8"), [0, 255], "uint8")


def test_cast_to_bool_is_nonzero():
    check(run(ew.CastOp, np.array([-2, 0, 3], np.int32), dtype="bool"), [True, False, True], "bool")
    check(
        run(ew.CastOp, np.array([0.0, -0.0, 0.1, np.nan], F32), dtype="bool"),
        [False, False, True, True],
        "bool",
    )


def test_cast_between_ints_wraps_and_bool_becomes_one():
    check(run(ew.CastOp, np.array([300, -1], np.int32), dtype="int8"), [44, -1], "int8")
    check(run(ew.CastOp, np.array([-1, 2], np.int8), dtype="uint8"), [255, 2], "uint8")
    check(run(ew.CastOp, np.array([True, False]), dtype="float16"), [1.0, 0.0], "float16")


def test_fill_like_constant_shape_of_and_dim_size():
    x = np.zeros((2, 3), np.int8)
    check(run(ew.FillLikeOp, x, value=2.5, dtype="float64"), [[2.5] * 3] * 2, "float64")
    check(run(shape_query.ShapeOfOp, x, declared=[(None, 3)]), [2, 3], "int32")
    check(
        run(shape_query.DimSizeOp, np.zeros((2, 3, 4)), axes=(0, 2), dtype="float32"),
        8.0,
        "float32",
    )
    check(run(ew.ConstantOp, value=-3.0, dtype="int16"), -3, "int16")


def _fused_module() -> ModuleOp:
    """main(x: (?, 1), y: (3,)) -> (x*y + 1, -(x*y + 1), 1) as one aotk.fused."""
    scalar = tensor(f32, ())
    body = Block(arg_types=[scalar, scalar])
    mul = ar.MulOp.make(list(body.args), scalar)
    one = ew.ConstantOp.make([], scalar, value=1.0, dtype="float32")
    add = ar.AddOp.make([mul.results[0], one.results[0]], scalar)
    neg = un.NegOp.make([add.results[0]], scalar)
    body.add_ops([mul, one, add, neg, YieldOp(add.results[0], neg.results[0], one.results[0])])
    out = tensor(f32, (None, 3))
    block = Block(arg_types=[tensor(f32, (None, 1)), tensor(f32, (3,))])
    fused = FusedOp.create(
        operands=list(block.args), result_types=[out, out, out], regions=[Region(body)]
    )
    block.add_ops([fused, func.ReturnOp(*fused.results)])
    fn = func.FuncOp("main", (list(block.arg_types), [out] * 3), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module


def test_fused_kernel_runs_its_body_on_broadcast_elements():
    x = np.array([[1], [2]], F32)
    y = np.array([10, 20, 30], F32)
    added, negated, ones = interp.run_module(_fused_module(), [x, y])
    check(added, [[11, 21, 31], [21, 41, 61]], "float32")
    check(negated, [[-11, -21, -31], [-21, -41, -61]], "float32")
    check(ones, [[1, 1, 1], [1, 1, 1]], "float32")  # a constant yield fills the result


def test_interp_rejects_wrong_argument_counts_and_lowered_ops():
    x = placeholder((2,), "float32")
    module, _ = trace.extract([x], [emit(un.NegOp, x)])
    with pytest.raises(ValueError, match="expected 1 arguments, got 2"):
        interp.run_module(module, [np.zeros(2, F32)] * 2)
    with pytest.raises(ValueError, match="no function @other"):
        interp.run_module(module, [np.zeros(2, F32)], name="other")
    t = tensor(f32, ())
    block = Block(arg_types=[t])
    block.add_ops([arith.ConstantOp(FloatAttr(1.0, f32)), func.ReturnOp(block.args[0])])
    lowered = ModuleOp([func.FuncOp("main", ([t], [t]), Region(block))])
    with pytest.raises(ValueError, match=r"cannot run arith\.constant"):
        interp.run_module(lowered, [np.float32(1)])


def test_interp_converts_arguments_to_the_declared_dtype():
    x = placeholder((2,), "float32")
    module, _ = trace.extract([x], [emit(ar.AddOp, x, x)])
    [got] = interp.run_module(module, [np.array([1, 2], np.int64)])
    check(got, [2, 4], "float32")
    assert dtypes.numpy_dtype(f32) == np.float32
