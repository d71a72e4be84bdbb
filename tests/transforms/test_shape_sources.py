"""`aotk-simplify`'s EarliestShapeSource: ops reading only dims take them from an operand
of an elementwise op when that operand surely has them, so a vector-Jacobian product
no longer computes its forward; never when a dynamic dim may broadcast at run time."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import emit, placeholder
from test_simplify import simplify
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from aotk import backend as K
from aotk.context import make_context
from aotk.dialect import arithmetic as ar
from aotk.dialect import elementwise as ew
from aotk.dialect import unary as un
from aotk.dialect.batch_matmul import BatchMatMulOp
from aotk.dialect.shape_query import DimSizeOp, ShapeOfOp
from aotk.dialect.views import ReshapeLikeOp


def _only(module: ModuleOp, op_type: type) -> object:
    [op] = [op for op in module.walk() if isinstance(op, op_type)]
    return op


def _source_name(module: ModuleOp, op_type: type, position: int = 0) -> str | None:
    """The name of the argument the op of `op_type` reads its dims from (None: not one)."""
    source = _only(module, op_type).operands[position]  # type: ignore[attr-defined]
    return source.name_hint


def test_a_vector_jacobian_product_drops_its_forward(rng):
    """d/d(a, b) of sum(batch_dot(a, b) * g): g has the product's dims, so the product
    is computed for nothing, and goes."""
    a, b = K.placeholder((4, 3, 5), name="a"), K.placeholder((4, 5, 2), name="b")
    g = K.placeholder((4, 3, 2), name="g")
    grads = K.gradients(K.sum(K.batch_dot(a, b, axes=(2, 1)) * g), [a, b])
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(4, 3, 5), (4, 5, 2), (4, 3, 2)]]
    module = simplify([a, b, g], grads, arrays)
    DeadCodeElimination().apply(make_context(), module)
    assert _source_name(module, ew.FillLikeOp) == "g"
    assert len([op for op in module.walk() if isinstance(op, BatchMatMulOp)]) == 2


@pytest.mark.parametrize("op_type", [ew.FillLikeOp, ShapeOfOp, DimSizeOp, ReshapeLikeOp])
def test_every_dims_reader_hops_through_unary_ops_and_casts(rng, op_type):
    x = placeholder((None, 3), "float32", "x")
    chain = emit(ew.CastOp, emit(un.TanhOp, emit(un.ExpOp, x)), dtype="float64")
    inputs, arrays = [x], [rng.standard_normal((4, 3)).astype(np.float32)]
    if op_type is ew.FillLikeOp:
        out = emit(op_type, chain, value=2.0, dtype="float64")
    elif op_type is DimSizeOp:
        out = emit(op_type, chain, axes=(0,), dtype="int32")
    elif op_type is ReshapeLikeOp:
        inputs.append(placeholder((None,), "float32", "flat"))
        arrays.append(rng.standard_normal(12).astype(np.float32))
        out = emit(op_type, inputs[1], chain)
    else:
        out = emit(op_type, chain)
    module = simplify(inputs, [out], arrays)
    assert _source_name(module, op_type, 1 if op_type is ReshapeLikeOp else 0) == "x"


def test_dynamic_dims_hop_only_where_the_other_operand_is_one(rng):
    """x [?, 3] * w [1, 3]: the product has x's dims whatever ? is; x [?, 3] * y [?, 3]
    has either's only when neither is 1 at run time, so the product stays the source."""
    x, y = placeholder((None, 3), "float32", "x"), placeholder((None, 3), "float32", "y")
    w = placeholder((1, 3), "float32", "w")
    ones_xw = emit(ew.FillLikeOp, emit(ar.MulOp, x, w), value=1.0, dtype="float32")
    ones_xy = emit(ew.FillLikeOp, emit(ar.MulOp, x, y), value=1.0, dtype="float32")
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(4, 3), (4, 3), (1, 3)]]
    module = simplify([x, y, w], [ones_xw, ones_xy], arrays)
    fills = [op for op in module.walk() if isinstance(op, ew.FillLikeOp)]
    sources = [f.operands[0] for f in fills]
    assert sources[0].name_hint == "x"
    assert isinstance(sources[1].owner, ar.MulOp)


def test_a_dim_that_broadcasts_at_run_time_keeps_the_result_dims(rng):
    a, b = K.placeholder((None, 3)), K.placeholder((None, 3))
    f = K.function([a, b], [K.ones_like(a * b), K.shape(a * b)])
    ones, shape = f([np.ones((1, 3), np.float32), np.ones((4, 3), np.float32)])
    np.testing.assert_array_equal(ones, np.ones((4, 3), np.float32))
    np.testing.assert_array_equal(shape, [4, 3])
