"""Run-time dims as tensor values: `aotk.shape_of` (every dim, as int32) and
`aotk.dim_size` (the number of elements over some axes, in any dtype), which `K.shape`,
`K.size` and means over dynamic axes read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerType,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, ElementTypeAttr, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.kernel import Buf, Kernel
from aotk.kernels.scalar import convert


@irdl_op_definition
class ShapeOfOp(AotkOp):
    """The dims of `x` as an int32 vector, read at run time."""

    name = "aotk.shape_of"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


@irdl_op_definition
class DimSizeOp(AotkOp):
    """The number of elements of `x` over `axes`, as a rank-0 tensor of `dtype`."""

    name = "aotk.dim_size"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    dtype = prop_def(ElementTypeAttr)
    traits = traits_def(Pure())


def _lower_shape_of(k: Kernel, out: Buf, x: Buf) -> None:
    for axis, d in enumerate(x.dims):
        value = k.b.insert(arith.IndexCastOp(k.index(d), i32)).result
        k.store_flat(out, axis, value)


def _lower_dim_size(k: Kernel, out: Buf, x: Buf, *, axes: Sequence[int], dtype: str) -> None:
    count = k.b.insert(arith.IndexCastOp(k.index(k.product([x.dims[a] for a in axes])), i64)).result
    k.store_flat(out, 0, convert(k.b, count, IntegerType(64), dtypes.element_type(dtype)))


def _infer_dim_size(x: Attribute, *, axes: Sequence[int], dtype: str, **_: Any) -> Attribute:
    rank = len(shape_of(x))
    if any(not 0 <= a < rank for a in axes):
        raise ValueError(f"axes {tuple(axes)} out of range for rank {rank}")
    return tensor(dtypes.element_type(dtype), ())


register(
    OpDef(
        ir=ShapeOfOp,
        kind=Kind.OPAQUE,
        infer=lambda x, **_: tensor(i32, (len(shape_of(x)),)),
        numpy=lambda x: np.array(x.shape, dtype=np.int32),
        lower=_lower_shape_of,
        grad=lambda g, y, x: (None,),
    )
)
register(
    OpDef(
        ir=DimSizeOp,
        kind=Kind.OPAQUE,
        infer=_infer_dim_size,
        numpy=lambda x, *, axes, dtype: np.array(
            np.prod([x.shape[a] for a in axes], dtype=np.int64), dtype=dtype
        ),
        lower=_lower_dim_size,
        grad=lambda g, y, x, **_: (None,),
    )
)
