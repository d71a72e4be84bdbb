"""Sizes that would overflow are clear errors naming the function, at trace time when the
dims are known and at call time when they come from the inputs; never a crash."""

from __future__ import annotations

import numpy as np
import pytest

from aotk import backend as K
from aotk.dialect.base import MAX_ELEMENTS


@pytest.mark.parametrize(
    ("build", "where"),
    [
        (lambda: K.placeholder(shape=(None, 2**62, 4)), "K.placeholder"),
        (lambda: K.repeat_elements(K.placeholder((None, 3)), 2**62, 1), "K.repeat_elements"),
        (lambda: K.tile(K.placeholder((None, 2)), (2**32, 2**32)), "K.tile"),
        (lambda: K.zeros((2**40, 2**20)), "K.zeros"),
    ],
)
def test_a_shape_too_large_to_address_is_refused_when_traced(build, where):
    with pytest.raises(ValueError, match=rf"{where}: .*size overflows"):
        build()


def test_inputs_that_make_an_intermediate_too_large_are_refused_before_running():
    x = K.placeholder((None, None))
    f = K.function([x], [K.max(K.softmax(K.dot(K.transpose(x), x)))])
    with pytest.raises(ValueError, match=r"do not fit: .*size overflows"):
        f([np.broadcast_to(np.float32(1), (1, 2**26))])  # a view: nothing is allocated
    np.testing.assert_allclose(f([np.ones((2, 3), np.float32)])[0], 1 / 3, rtol=1e-6)


def test_the_limit_itself_is_allowed():
    assert K.int_shape(K.placeholder((None, MAX_ELEMENTS))) == (None, MAX_ELEMENTS)


@pytest.mark.parametrize("size", [-1, (2, -3), (None, 2)])
def test_eye_of_a_bad_size_names_the_argument(size):
    with pytest.raises(ValueError, match=r"K\.eye: shape .* (bad dim|must be fully known)"):
        K.eye(size)
