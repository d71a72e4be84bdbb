"""Fill and constant values their dtype cannot hold exactly: compiled as NumPy casts them
(a float type rounds, overflowing to infinity; bool is the value's truth), and an integer
type's out-of-range value refused where the op is made."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import check_one_op, emit, placeholder, run_both

from aotk import backend as K
from aotk.dialect.arithmetic import AddOp
from aotk.dialect.elementwise import ConstantOp, FillLikeOp


@pytest.mark.parametrize(
    ("value", "dtype", "want"),
    [
        (1e100, "float32", np.inf),
        (-1e100, "float32", -np.inf),
        (1e5, "float16", np.inf),
        (65519.0, "float16", 65504.0),  # rounds down to float16's largest
        (0.5, "bool", True),  # NumPy's truth: nonzero, where int(0.5) would be 0
        (float("nan"), "bool", True),
        (-2.7, "int8", -2),  # truncated toward zero
    ],
)
def test_a_fill_is_its_value_cast_as_numpy_casts_it(value: float, dtype: str, want) -> None:
    with np.errstate(over="ignore"):
        [got] = check_one_op(
            FillLikeOp, [((3,), "float32")], [np.zeros(3, "float32")], value=value, dtype=dtype
        )
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.full(3, want, dtype))


def test_a_constant_too_large_for_float32_is_infinite() -> None:
    x = placeholder((2,), "float32", "x")
    y = emit(ConstantOp, value=1e100, dtype="float32")
    f = run_both([x], [y], [[np.zeros(2, "float32")]])
    assert f([np.zeros(2, "float32")])[0] == np.float32(np.inf)


def test_a_huge_python_scalar_times_a_float32_tensor_overflows_as_in_numpy() -> None:
    # regression: the scalar became a float32 constant that could not be stored
    x = K.placeholder(shape=(4,), dtype="float32")
    f = K.function([x], [x * 1e100])
    data = np.array([1, -1, 0, 2], "float32")
    with np.errstate(over="ignore", invalid="ignore"):
        want = data * 1e100
    np.testing.assert_array_equal(f([data])[0], want)  # inf, -inf, nan, inf


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (300.0, "int8"),
        (-1.0, "uint8"),
        (float("nan"), "int32"),
        (float("inf"), "int64"),
        (2.0**63, "int64"),
    ],
)
def test_an_integer_fill_its_type_cannot_hold_is_refused(value: float, dtype: str) -> None:
    x = placeholder((3,), "float32", "x")
    with pytest.raises(ValueError, match=re.escape(f"value {value} does not fit {dtype} [")):
        emit(FillLikeOp, x, value=value, dtype=dtype)


def test_an_int64_constant_keeps_all_its_bits() -> None:
    # regression: the value was held as a float64, so 2**60 + 1 lost its last bit
    x = placeholder((2,), "int64", "x")
    y = emit(AddOp, x, emit(ConstantOp, value=2**60 + 1, dtype="int64"))
    data = np.array([0, 1], "int64")
    f = run_both([x], [y], [[data]])
    np.testing.assert_array_equal(f([data])[0], data + (2**60 + 1))
    i = K.placeholder(shape=(2,), dtype="int64")
    g = K.function([i], [i - (2**63 - 1)])
    np.testing.assert_array_equal(g([data])[0], data - (2**63 - 1))
