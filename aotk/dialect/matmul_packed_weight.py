"""`aotk.matmul_packed_weight`: lhs @ weight, with the weight also given packed.

A K.function's matmul on a weight it does not update reads the weight from a copy packed
once into slivers (`matmul_prepacked.pack`), kept by the caller from call to call and
packed again only when the weight has changed (`aotk.weight_packs`). The op takes both
the weight and that copy: the oracle reads the weight, the code runs
`matmul_<dtype>_prepacked` on the copy, one register tile over all of K per item, with
nothing packed per call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import Float32Type, Float64Type, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of
from aotk.dialect.linalg import infer_matmul, matmul_shape, mnk
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import library, matmul_prepacked
from aotk.kernels.kernel import Buf, Kernel


@irdl_op_definition
class MatMulPackedWeightOp(AotkOp):
    """lhs [..., M, K] times weight [K, N] -> [..., M, N]; `packed` is the weight in
    slivers, `packed_size(N, K)` elements."""

    name = "aotk.matmul_packed_weight"
    lhs = operand_def(TensorType)
    weight = operand_def(TensorType)
    packed = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def packed_size(elem: Attribute, n: int, kdim: int) -> int:
    """Elements of a weight [K, N] packed into slivers: N rounded up to whole slivers."""
    width = matmul_prepacked.sliver_width(elem)
    return -(-n // width) * width * kdim


def packable(weight: Attribute) -> bool:
    """Whether a weight of this type can be packed: a static float32/float64 matrix."""
    shape = shape_of(weight)
    return (
        isinstance(elem_of(weight), Float32Type | Float64Type)
        and len(shape) == 2
        and all(d is not None for d in shape)
    )


def _infer(lhs: Attribute, weight: Attribute, packed: Attribute) -> Attribute:
    if not packable(weight):
        raise TypeError(
            "the weight must be a float32 or float64 matrix of static shape, "
            f"got {dtype_of(weight)} {fmt_shape(shape_of(weight))}"
        )
    result = infer_matmul(lhs, weight)
    kdim, n = shape_of(weight)
    assert kdim is not None and n is not None
    want = packed_size(elem_of(weight), n, kdim)
    if elem_of(packed) != elem_of(weight) or tuple(shape_of(packed)) != (want,):
        raise ValueError(
            f"packed must be a {dtype_of(weight)} vector of {want} elements for a "
            f"{fmt_shape(shape_of(weight))} weight, got {dtype_of(packed)} "
            f"{fmt_shape(shape_of(packed))}"
        )
    return result


def _numpy(a: np.ndarray, w: np.ndarray, packed: np.ndarray) -> np.ndarray:
    return np.matmul(a, w).astype(a.dtype, copy=False)


def _shape(arith_: Any, dims: Any) -> Any:
    return matmul_shape(arith_, dims[:2])


def _lower(k: Kernel, out: Buf, a: Buf, w: Buf, packed: Buf) -> None:
    # any M, any pool: a row or a few also run 3-57% faster on the packed copy on one
    # thread (1 to 7 rows of 784 x 1024, 1024 x 1024, 512 x 512 and 128 x 4096, float32
    # and float64): one stream of slivers, where in place K rows N apart are
    m, n, kdim = mnk(k, a, w, False, False)
    library.call(k, matmul_prepacked.matmul_name(a.elem), [out, a, packed, m, n, kdim])


register(
    OpDef(
        ir=MatMulPackedWeightOp,
        kind=Kind.CONTRACTION,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        shape=_shape,
    )
)
