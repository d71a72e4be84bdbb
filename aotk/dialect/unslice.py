"""`aotk.unslice`: the adjoint of `aotk.slice`, for gradients.

A tensor shaped like `like` (whose values are not read) that holds `g` at the positions
`like[start:stop:step]` would select, and zeros elsewhere. Dims may be dynamic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk.dialect.base import AotkOp, dtype_of, elem_of, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.dialect.shape import FULL, infer_slice, slice_bounds
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const


@irdl_op_definition
class UnsliceOp(AotkOp):
    """zeros shaped like `like`, with `g` written where like[start:stop:step] reads."""

    name = "aotk.unslice"
    g = operand_def(TensorType)
    like = operand_def(TensorType)
    result = result_def(TensorType)
    start = prop_def(DenseArrayBase)
    stop = prop_def(DenseArrayBase)
    step = prop_def(DenseArrayBase)
    traits = traits_def(Pure())


def _infer(g: Attribute, like: Attribute, **bounds: Any) -> Attribute:
    picked = shape_of(infer_slice(like, **bounds))
    got = shape_of(g)
    if len(got) != len(picked) or any(
        a is not None and b is not None and a != b for a, b in zip(got, picked, strict=True)
    ):
        raise ValueError(f"g of shape {got} does not fit the slice's shape {picked}")
    if elem_of(g) != elem_of(like):
        raise TypeError(f"dtypes differ: {dtype_of(g)} and {dtype_of(like)}")
    return tensor(elem_of(g), unslice_shape(STATIC, [got, shape_of(like)]))


def unslice_shape(a: DimArith, dims: Sequence[Sequence[Dim]], **_: Any) -> list[Dim]:
    """like's dims."""
    return list(dims[1])


def _numpy(
    g: np.ndarray,
    like: np.ndarray,
    *,
    start: Sequence[int],
    stop: Sequence[int],
    step: Sequence[int],
) -> np.ndarray:
    out = np.zeros(like.shape, g.dtype)
    key = tuple(
        slice(a, None if b == FULL else b, c) for a, b, c in zip(start, stop, step, strict=True)
    )
    out[key] = g
    return out


def _lower(
    k: Kernel,
    out: Buf,
    g: Buf,
    like: Buf,
    *,
    start: Sequence[int],
    stop: Sequence[int],
    step: Sequence[int],
) -> None:
    zero = const(k.b, 0, compute_type(out.elem))
    with k.loop(k.product(out.dims), parallel=True) as i:
        k.store_flat(out, i, zero)
    strides = k.strides(out.dims)
    with k.nest(g.dims, parallel=True) as ivs:
        dst: list[DimV] = []
        for axis, iv in enumerate(ivs):
            first = slice_bounds(k, out.dims[axis], start[axis], stop[axis], step[axis])[0]
            moved = k.mul(iv, abs(step[axis]))
            dst.append(k.add(first, moved) if step[axis] > 0 else k.sub(first, moved))
        k.store_flat(out, k.linear(dst, strides), k.load(g, ivs))


def _grad(gy: Any, y: Any, g: Any, like: Any, **bounds: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib
    from aotk.dialect.shape import SliceOp

    return lib.emit(SliceOp, gy, **bounds), None


register(
    OpDef(
        ir=UnsliceOp,
        kind=Kind.OPAQUE,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        shape=unslice_shape,
        grad=_grad,
    )
)
