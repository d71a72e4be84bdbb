"""More K.gradients checks against central finite differences (float64), compiled against
interpreted: the CTC loss, bilinear and nearest resizing, sparse_to_dense and gather along
every axis, plus second derivatives through the new adjoint primitives."""

from __future__ import annotations

import numpy as np
import pytest
from test_autodiff import check_gradients

from aotk import backend as K
from aotk.backend.sparse import KSparseTensor
from aotk.dialect import trace
from aotk.dialect.gather import GatherOp
from aotk.dialect.gather_grad import GatherGradOp
from aotk.dialect.sparse import SparseGatherOp
from aotk.dialect.upsample import UpsampleLinearGradOp

pytestmark = pytest.mark.usefixtures("float64")  # see conftest.py


RNG = np.random.default_rng(0)


def _a(*shape: int) -> np.ndarray:
    return RNG.uniform(-2.0, 2.0, size=shape)


def _emit(op, *xs, **attrs):
    return trace.emit(op, *xs, where="test", **attrs)


def _ints(values) -> trace.KTensor:
    return K.constant(np.array(values), dtype="int32")


def _gather(indices, axis: int, batch_dims: int):
    return lambda s: _emit(GatherOp, s, _ints(indices), axis=axis, batch_dims=batch_dims)


SPARSE_INDICES = np.array([[0, 1], [2, 0], [0, 1], [5, 0], [1, -1], [1, 2]])  # dup, outside


def _to_dense(values: trace.KTensor) -> trace.KTensor:
    indices = K.constant(SPARSE_INDICES, dtype="int64")
    return K.to_dense(KSparseTensor(indices, values, (3, 3)))


MORE = {
    "resize_bilinear": (
        lambda s: K.resize_images(s, 2, 3, "channels_last", interpolation="bilinear"),
        [(2, 3, 4, 2)],
    ),
    "resize_bilinear_first_one_row": (
        lambda s: K.resize_images(s, 3, 1, "channels_first", interpolation="bilinear"),
        [(1, 2, 1, 3)],
    ),
    "resize_nearest": (lambda s: K.resize_images(s, 2, 3, "channels_last"), [(1, 3, 2, 2)]),
    "sparse_to_dense": (lambda v: K.square(_to_dense(v)), [(6,)]),
    "gather_axis0": (_gather([[0, 2], [-1, 2], [7, 1]], 0, 0), [(4, 3)]),
    "gather_axis1": (_gather([[1, 1, -3], [0, 4, 2]], 1, 0), [(2, 3, 2)]),
    "gather_batch_dims": (_gather([[1, 1, 0], [2, -1, 9]], 1, 1), [(2, 3, 2)]),
    "gather_last_axis_batch": (_gather([[1, 0], [2, 2]], 2, 1), [(2, 3, 3)]),
    "gather_scalar_index": (_gather(2, 1, 0), [(2, 3)]),
    "K_gather": (lambda s: K.gather(s, _ints([[3, 0], [3, 3]])), [(4, 2)]),
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_more_gradients(name):
    build, shapes = MORE[name]
    check_gradients(build, [_a(*shape) for shape in shapes])


def test_adjoint_primitives_have_gradients_too():
    table = K.constant(np.zeros((3, 2)))
    indices = _ints([[0, 2], [-1, 2]])
    scatter = lambda g: _emit(GatherGradOp, g, indices, table, axis=0, batch_dims=0)  # noqa: E731
    check_gradients(lambda g: K.square(scatter(g)), [_a(2, 2, 2)])
    shrink = lambda g: _emit(UpsampleLinearGradOp, g, axis=1, factor=3)  # noqa: E731
    check_gradients(lambda g: K.square(shrink(g)), [_a(2, 6)])
    points = K.constant(SPARSE_INDICES, dtype="int64")
    check_gradients(lambda d: K.square(_emit(SparseGatherOp, points, d)), [_a(3, 3)])


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_ctc_batch_cost_gradient():
    # repeats (a blank between is needed), a short input, an empty label, clamped lengths
    labels = _ints([[0, 1, 1], [1, 1, 0], [1, 0, 1], [0, 0, 0], [1, 0, 0]])
    il = _ints([[4], [4], [2], [3], [9]])
    ll = _ints([[3], [2], [1], [0], [5]])
    y = _softmax(RNG.normal(size=(5, 4, 3)))
    check_gradients(lambda p: K.ctc_batch_cost(labels, p, il, ll), [y])
