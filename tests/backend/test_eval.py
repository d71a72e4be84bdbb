"""K.eval of constants only moved about: NumPy's value, bit for bit what compiled code
gives, with nothing compiled; anything that computes is still compiled."""

from __future__ import annotations

import numpy as np
import pytest

import aotk.function as aotk_function
from aotk import backend as K

MOVED = {
    "a scalar": lambda: K.constant(0.1, dtype="float16"),
    "Keras's zeros of shape ()": lambda: K.constant(0, shape=(), dtype="int32"),
    "an LSTM's unit_forget_bias": lambda: K.concatenate(
        [K.constant(np.zeros(3)), K.constant(np.ones(3)), K.constant(np.zeros(6))]
    ),
    "reshaped, sliced, transposed": lambda: K.transpose(
        K.reshape(K.constant(np.arange(12.0)), (3, 4))[1:, ::2]
    ),
    "stacked scalars, tiled": lambda: K.tile(K.stack([K.constant(1.5), K.constant(-2.0)]), (3, 1)),
}


@pytest.mark.parametrize("make", MOVED.values(), ids=list(MOVED))
def test_moved_constants_are_evaluated_without_compiling(make, monkeypatch):
    tensor = make()
    compiled = aotk_function.Function([], tensor)([])
    with monkeypatch.context() as no_functions:
        no_functions.setattr(aotk_function, "Function", None)  # K.eval must not build one
        value = K.eval(tensor)
    assert value.dtype == compiled.dtype == np.dtype(K.dtype(tensor))
    np.testing.assert_array_equal(value, compiled)


def test_arithmetic_on_constants_is_still_compiled(monkeypatch):
    tensor = K.stack([K.constant(1.5), K.constant(-2.0)]) + K.constant(np.zeros((3, 2)))
    with monkeypatch.context() as no_functions:
        no_functions.setattr(aotk_function, "Function", None)
        with pytest.raises(TypeError):
            K.eval(tensor)  # calls the patched-out Function
    np.testing.assert_array_equal(K.eval(tensor), [[1.5, -2.0]] * 3)


def test_the_value_is_a_copy_not_the_constant_itself():
    source = np.arange(6.0, dtype="float32")
    constant = K.constant(source)
    view = K.reshape(constant, (2, 3))
    value = K.eval(view)
    value[0, 0] = 99.0
    np.testing.assert_array_equal(K.eval(view), source.reshape(2, 3))
    np.testing.assert_array_equal(K.eval(constant), source)
