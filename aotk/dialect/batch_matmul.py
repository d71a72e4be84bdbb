"""`aotk.batch_matmul`: one matrix product per batch entry, the core of `K.batch_dot`.

Each operand's middle dims fold into M or N, which costs nothing on dense row-major
buffers; each batch entry runs the same blocked loop nest as `aotk.matmul`, on buffers
that start at that entry's offset.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import ptr
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import matmul_kernel
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import storage_type


@irdl_op_definition
class BatchMatMulOp(AotkOp):
    """lhs [B, *Ms, K] times rhs [B, K, *Ns] -> [B, *Ms, *Ns], one product per batch entry."""

    name = "aotk.batch_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _differ(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and a != b


def infer_batch_matmul(lhs: Attribute, rhs: Attribute, **_: Any) -> Attribute:
    a, b = shape_of(lhs), shape_of(rhs)
    if elem_of(lhs) != elem_of(rhs):
        raise TypeError(f"operands have different dtypes {dtype_of(lhs)} and {dtype_of(rhs)}")
    if dtypes.is_bool(elem_of(lhs)):
        raise TypeError("cannot multiply bool matrices")
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"expected operands of rank >= 2, got {fmt_shape(a)} and {fmt_shape(b)}")
    if _differ(a[0], b[0]):
        raise ValueError(f"batch sizes differ: {fmt_shape(a)} and {fmt_shape(b)}")
    if _differ(a[-1], b[1]):
        raise ValueError(
            f"contracted dims differ: axis {len(a) - 1} of {fmt_shape(a)} and axis 1 of "
            f"{fmt_shape(b)}"
        )
    return tensor(elem_of(lhs), batch_matmul_shape(STATIC, [a, b]))


def batch_matmul_shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    """[B, *Ms, *Ns]; B from whichever operand knows it (they agree at run time)."""
    lhs, rhs = dims
    batch = lhs[0] if isinstance(lhs[0], int) else rhs[0]
    return [batch, *lhs[1:-1], *rhs[2:]]


def _np_batch_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    batch, kdim = a.shape[0], a.shape[-1]
    m, n = pymath.prod(a.shape[1:-1]), pymath.prod(b.shape[2:])
    prod = np.matmul(a.reshape(batch, m, kdim), b.reshape(batch, kdim, n))
    return prod.astype(a.dtype, copy=False).reshape(batch, *a.shape[1:-1], *b.shape[2:])


def _entry(k: Kernel, buf: Buf, index: DimV, rows: DimV, cols: DimV) -> Buf:
    """The [rows, cols] matrix of batch entry `index` of `buf`, as a buffer of its own."""
    offset = k.mul(k.mul(index, k.mul(rows, cols)), dtypes.byte_size(buf.elem))
    base = k.b.insert(ptr.ToPtrOp(buf.mem)).res
    start = k.b.insert(ptr.PtrAddOp(base, k.index(offset))).result
    flat = MemRefType(storage_type(buf.elem), [DYNAMIC_INDEX])
    return Buf(k.b.insert(ptr.FromPtrOp(start, flat)).res, (rows, cols), buf.elem)


def _lower(k: Kernel, out: Buf, a: Buf, b: Buf) -> None:
    m, n, kdim = k.product(a.dims[1:-1]), k.product(b.dims[2:]), a.dims[-1]
    with k.loop(a.dims[0], parallel=True) as i:
        c_i, a_i, b_i = _entry(k, out, i, m, n), _entry(k, a, i, m, kdim), _entry(k, b, i, kdim, n)
        matmul_kernel.emit(k, c_i, a_i, b_i, m=m, n=n, kdim=kdim)


def _grad(g: Any, y: Any, a: Any, b: Any, **_: Any) -> tuple[Any, ...]:
    """Per batch entry: dA = G @ B^T and dB = A^T @ G, on [B, M, K] / [B, K, N] views."""
    from aotk.dialect import gradlib as lib
    from aotk.dialect.data import ViewOp, view_attrs

    n_m = a.ndim - 2  # the *Ms axes of a (between the batch axis and K)

    def group(axes: range) -> tuple[int, ...] | int:
        return tuple(axes) or 1  # no axes: a static size-1 dim

    def view3(t: Any, groups: list[tuple[int, ...] | int]) -> Any:
        if t.ndim == 3 and all(isinstance(x, tuple) and len(x) == 1 for x in groups):
            return t
        return lib.emit(ViewOp, t, **view_attrs(groups, t.ndim))

    a3 = view3(a, [(0,), group(range(1, 1 + n_m)), (a.ndim - 1,)])
    b3 = view3(b, [(0,), (1,), group(range(2, b.ndim))])
    g3 = view3(g, [(0,), group(range(1, 1 + n_m)), group(range(1 + n_m, g.ndim))])
    ga = lib.emit(BatchMatMulOp, g3, lib.transpose(b3, (0, 2, 1)))
    gb = lib.emit(BatchMatMulOp, lib.transpose(a3, (0, 2, 1)), g3)
    return lib.reshape_like(ga, a), lib.reshape_like(gb, b)


register(
    OpDef(
        ir=BatchMatMulOp,
        kind=Kind.CONTRACTION,
        infer=infer_batch_matmul,
        numpy=_np_batch_matmul,
        lower=_lower,
        shape=batch_matmul_shape,
        grad=_grad,
    )
)
