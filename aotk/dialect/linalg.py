"""Contractions: `aotk.matmul` of a [..., M, K] tensor with a [K, N] matrix.

Leading dims of the left operand are folded into M, which costs nothing on dense
row-major buffers; Keras's nD `dot` composes transposes and reshapes around this op.
`transpose_lhs` (a [K, M] matrix) and `transpose_rhs` (an [N, K] one) multiply by an
operand's transpose without materializing it: `aotk-simplify` folds a 2-D transpose
into them, so the gradients of a dense layer run as two plain matmul calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import matmul_kernel
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel


@irdl_op_definition
class MatMulOp(AotkOp):
    """lhs [..., M, K] times rhs [K, N] -> [..., M, N]; lhs may be a vector [K].

    With `transpose_lhs`, lhs is a [K, M] matrix; with `transpose_rhs`, rhs is [N, K].
    """

    name = "aotk.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_lhs = opt_prop_def(IntegerAttr)
    transpose_rhs = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())


def infer_matmul(
    lhs: Attribute, rhs: Attribute, transpose_lhs: bool = False, transpose_rhs: bool = False
) -> Attribute:
    a, b = shape_of(lhs), shape_of(rhs)
    if elem_of(lhs) != elem_of(rhs):
        raise TypeError(f"operands have different dtypes {dtype_of(lhs)} and {dtype_of(rhs)}")
    if dtypes.is_bool(elem_of(lhs)):
        raise TypeError("cannot multiply bool matrices")
    if len(a) < 1 or len(b) != 2 or (transpose_lhs and len(a) != 2):
        lhs_rank = "2 (transposed)" if transpose_lhs else ">= 1"
        raise ValueError(
            f"expected lhs of rank {lhs_rank} and rhs of rank 2, "
            f"got {fmt_shape(a)} and {fmt_shape(b)}"
        )
    a_k, b_k = a[0] if transpose_lhs else a[-1], b[1] if transpose_rhs else b[0]
    if a_k is not None and b_k is not None and a_k != b_k:
        raise ValueError(f"contracted dims differ: {fmt_shape(a)} and {fmt_shape(b)}")
    return tensor(elem_of(lhs), matmul_shape(STATIC, [a, b], transpose_lhs, transpose_rhs))


def matmul_shape(
    a: DimArith,
    dims: Sequence[Sequence[Dim]],
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> list[Dim]:
    """[..., M, N] from lhs [..., M, K] (or [K, M]) and rhs [K, N] (or [N, K])."""
    rows = [dims[0][1]] if transpose_lhs else dims[0][:-1]
    return [*rows, dims[1][0] if transpose_rhs else dims[1][1]]


def np_matmul(
    a: np.ndarray, b: np.ndarray, transpose_lhs: bool = False, transpose_rhs: bool = False
) -> np.ndarray:
    a, b = a.T if transpose_lhs else a, b.T if transpose_rhs else b
    return np.matmul(a, b).astype(a.dtype, copy=False)


def mnk(k: Kernel, a: Buf, b: Buf, a_t: bool, b_t: bool) -> tuple[Any, Any, Any]:
    m = a.dims[1] if a_t else k.product(a.dims[:-1])
    return m, b.dims[0] if b_t else b.dims[1], a.dims[0] if a_t else a.dims[-1]


def _lower(
    k: Kernel,
    out: Buf,
    a: Buf,
    b: Buf,
    scratch: Buf | None = None,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> None:
    m, n, kdim = mnk(k, a, b, transpose_lhs, transpose_rhs)
    matmul_kernel.emit(
        k, out, a, b, m=m, n=n, kdim=kdim, scratch=scratch, a_t=transpose_lhs, b_t=transpose_rhs
    )


def matmul_scratch(
    k: Kernel,
    ins: list[Buf],
    result_type: Attribute,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> DimV:
    """Room to pack a block of B (a fixed size, whatever M is), and a K block of a
    transposed A."""
    a, b = ins
    dims = mnk(k, a, b, transpose_lhs, transpose_rhs)
    return matmul_kernel.scratch_elems(k, a.elem, dims, transpose_lhs)


def matmul_grad(
    g: Any, y: Any, a: Any, b: Any, transpose_lhs: bool = False, transpose_rhs: bool = False
) -> tuple[Any, ...]:
    """d(a @ b): g @ b^T for a, and a^T @ g with a's leading dims folded into M for b;
    a transposed operand gets the transpose of its effective operand's gradient."""
    from aotk.dialect import gradlib as lib

    if transpose_lhs or transpose_rhs:
        a_eff = lib.transpose(a, (1, 0)) if transpose_lhs else a
        b_eff = lib.transpose(b, (1, 0)) if transpose_rhs else b
        ga, gb = matmul_grad(g, y, a_eff, b_eff)
        return (
            lib.transpose(ga, (1, 0)) if transpose_lhs else ga,
            lib.transpose(gb, (1, 0)) if transpose_rhs else gb,
        )
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
        numpy=np_matmul,
        lower=_lower,
        shape=matmul_shape,
        grad=matmul_grad,
        scratch=matmul_scratch,
    )
)
