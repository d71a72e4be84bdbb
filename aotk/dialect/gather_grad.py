"""`aotk.gather_grad`: the adjoint of `aotk.gather`, a scatter-add.

Every slice of x that gather picked gets back the sum of its copies' cotangents; slices
never picked get zeros, and out-of-range indices contribute nothing, as gather reads
zeros for them. Any axis and batch_dims gather takes; the work is one pass over the
cotangent plus zeroing the result, with no one-hot matrix.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import (
    AotkOp,
    dtype_of,
    elem_of,
    fmt_shape,
    shape_of,
    tensor,
    types_compatible,
)
from aotk.dialect.gather import each_pick, infer_gather, wrap_indices
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import library
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import PARALLEL_GRAIN, Buf, DimV, Kernel
from aotk.kernels.scalar import compute_type, const


@irdl_op_definition
class GatherGradOp(AotkOp):
    """Zeros shaped like x, plus each slice of the cotangent g of gather(x, indices) added
    where gather read it."""

    name = "aotk.gather_grad"
    g = operand_def(TensorType)
    indices = operand_def(TensorType)
    x = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    batch_dims = prop_def(IntegerAttr)
    traits = traits_def(Pure())


def infer_gather_grad(
    g: Attribute, indices: Attribute, x: Attribute, *, axis: int, batch_dims: int, **_: Any
) -> Attribute:
    if not dtypes.is_float(elem_of(x)):
        raise TypeError(f"expected a float tensor, got {dtype_of(x)}")
    gathered = infer_gather(x, indices, axis=axis, batch_dims=batch_dims)
    if not types_compatible(gathered, g) and not types_compatible(g, gathered):
        raise ValueError(
            f"g must be like the gather's result {fmt_shape(shape_of(gathered))} "
            f"{dtype_of(gathered)}, got {fmt_shape(shape_of(g))} {dtype_of(g)}"
        )
    operands = [shape_of(g), shape_of(indices), shape_of(x)]
    return tensor(elem_of(x), gather_grad_shape(STATIC, operands))


def gather_grad_shape(a: DimArith, dims: Sequence[Sequence[Dim]], **_: Any) -> list[Dim]:
    return list(dims[2])


# Bytes of a row from which a gradient's adds are split over threads (below, scanning
# every index on every thread costs more than the adds it shares)
SPLIT_ROW_BYTES = 256


def _lower(k: Kernel, out: Buf, g: Buf, ids: Buf, x: Buf, *, axis: int, batch_dims: int) -> None:
    zero = const(k.b, 0, compute_type(out.elem))
    with k.loop(k.product(out.dims), parallel=True) as i:
        k.store_flat(out, i, zero)
    row = k.product(out.dims[axis + 1 :])

    def pick(base: DimV, src: DimV, ok: SSAValue) -> None:
        def add() -> None:
            with k.loop(row) as j:
                at = k.add(base, j)
                total = arith.AddfOp(k.load_flat(out, at), k.load_flat(g, k.add(src, j)))
                k.store_flat(out, at, k.b.insert(total).result)

        k.if_else(ok, add, lambda: None)

    # Indices repeat, so threads cannot split them. Each thread scans every index
    # instead and adds only those into its own range of x's rows, which stay in its
    # cache; every element still gets its adds in the indices' order, so the sums are
    # bit for bit those of one thread.
    width = library.parallel_width(k)
    worth = k.both(
        k.compare("uge", k.product(g.dims), 2 * PARALLEL_GRAIN),
        k.compare("uge", row, SPLIT_ROW_BYTES // dtypes.byte_size(out.elem)),
    )
    parts = k.select(worth, width, 1)

    def scan(owned: tuple[DimV, DimV] | None = None) -> None:
        each_pick(k, out.dims, ids, axis=axis, batch_dims=batch_dims, body=pick, owned=owned)

    def in_ranges() -> None:
        rows = out.dims[axis]
        with k.loop(parts, parallel=True, trip_cost=PARALLEL_GRAIN) as part:
            lo = k.div(k.mul(part, rows), parts)
            hi = k.div(k.mul(k.add(part, 1), rows), parts)
            scan(owned=(lo, hi))

    # one thread runs the adds inline: in a task they would not know that out and g do
    # not overlap, and check it at every index
    k.if_else(k.compare("ugt", parts, 1), in_ranges, scan)


def _numpy(
    g: np.ndarray, ids: np.ndarray, x: np.ndarray, *, axis: int, batch_dims: int
) -> np.ndarray:
    src, ok = wrap_indices(ids, x.shape[axis])
    wide = np.float32 if g.dtype == np.float16 else g.dtype  # as the kernel computes
    out = np.zeros(x.shape, g.dtype)
    lead = (slice(None),) * (axis - batch_dims)
    for b in np.ndindex(*x.shape[:batch_dims]):
        for q in np.ndindex(*ids.shape[batch_dims:]):
            if not ok[b][q]:
                continue
            at = (*b, *lead, src[b][q])
            out[at] = (out[at].astype(wide) + g[(*b, *lead, *q)].astype(wide)).astype(g.dtype)
    return out


def _grad(g: Any, y: Any, g_in: Any, indices: Any, x: Any, **attrs: Any) -> tuple[Any, ...]:
    """The adjoint of the scatter-add is the gather again."""
    from aotk.dialect.gather import GatherOp
    from aotk.dialect.gradlib import emit

    return emit(GatherOp, g, indices, **attrs), None, None


register(
    OpDef(
        ir=GatherGradOp,
        kind=Kind.OPAQUE,
        infer=infer_gather_grad,
        numpy=_numpy,
        lower=_lower,
        grad=_grad,
        shape=gather_grad_shape,
    )
)

__all__ = ["GatherGradOp"]
