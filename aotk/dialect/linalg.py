"""Contractions: `aotk.matmul` of a [..., M, K] tensor with a [K, N] matrix.

Leading dims of the left operand are folded into M, which costs nothing on dense
row-major buffers; Keras's nD `dot` composes transposes and reshapes around this op.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import matmul_kernel
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, Kernel


@irdl_op_definition
class MatMulOp(AotkOp):
    """lhs [..., M, K] times rhs [K, N] -> [..., M, N]; lhs may be a vector [K]."""

    name = "aotk.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def infer_matmul(lhs: Attribute, rhs: Attribute, **_: Any) -> Attribute:
    a, b = shape_of(lhs), shape_of(rhs)
    if elem_of(lhs) != elem_of(rhs):
        raise TypeError(f"operands have different dtypes {dtype_of(lhs)} and {dtype_of(rhs)}")
    if dtypes.is_bool(elem_of(lhs)):
        raise TypeError("cannot multiply bool matrices")
    if len(a) < 1 or len(b) != 2:
        raise ValueError(
            f"expected lhs of rank >= 1 and rhs of rank 2, got {fmt_shape(a)} and {fmt_shape(b)}"
        )
    if a[-1] is not None and b[0] is not None and a[-1] != b[0]:
        raise ValueError(f"contracted dims differ: {fmt_shape(a)} and {fmt_shape(b)}")
    return tensor(elem_of(lhs), matmul_shape(STATIC, [a, b]))


def matmul_shape(a: DimArith, dims: Sequence[Sequence[Dim]]) -> list[Dim]:
    """[..., M, N] from lhs [..., M, K] and rhs [K, N]."""
    return [*dims[0][:-1], dims[1][1]]


def _np_matmul(a: np.ndarray, b: np.ndarray, **_: Any) -> np.ndarray:
    return np.matmul(a, b).astype(a.dtype, copy=False)


def _lower(k: Kernel, out: Buf, a: Buf, b: Buf, scratch: Buf | None = None, **_: Any) -> None:
    m = k.product(a.dims[:-1])
    matmul_kernel.emit(k, out, a, b, m=m, n=b.dims[1], kdim=a.dims[-1], scratch=scratch)


def _scratch(k: Kernel, ins: list[Buf], result_type: Attribute, **_: Any) -> int:
    """Room to pack blocks of B (a fixed size, whatever M is)."""
    a, b = ins
    return matmul_kernel.scratch_elems(a.elem, k.product(a.dims[:-1]), b.dims[1], a.dims[-1])


def _grad(g: Any, y: Any, a: Any, b: Any, **_: Any) -> tuple[Any, ...]:
    """d(a @ b): g @ b^T for a, and a^T @ g with a's leading dims folded into M for b."""
    from aotk.dialect import gradlib as lib

    ga = lib.matmul(g, lib.transpose(b, (1, 0)))
    if a.ndim == 1:  # a vector: one row
        a2, g2 = lib.reshape(a, (1, a.shape[0])), lib.reshape(g, (1, g.shape[0]))
    else:
        a2, g2 = lib.merge_leading(a), lib.merge_leading(g)
    gb = lib.matmul(lib.transpose(a2, (1, 0)), g2)
    return ga, gb


register(
    OpDef(
        ir=MatMulOp,
        kind=Kind.CONTRACTION,
        infer=infer_matmul,
        numpy=_np_matmul,
        lower=_lower,
        shape=matmul_shape,
        grad=_grad,
        scratch=_scratch,
    )
)
