"""`aotk.matmul_update`: acc + alpha * (lhs @ rhs), an update computed by the matmul.

A training step's `w - lr * x^T @ dz` is a gradient matmul and an elementwise update: the
gradient is written out, then read back with w, and w written, three passes over a
matrix of w's size. As one op, the matmul's micro-kernel adds each tile of the product,
scaled by alpha, to the accumulator where it stores the tile (`matmul_kernel.emit` with
`alpha`): one pass. `aotk-matmul-updates` forms it from such an update after
differentiation. The result may be computed into the accumulator's buffer: a weight
updated in place (`OpDef.accumulates_into`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect import linalg
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import matmul_kernel
from aotk.kernels.dim_arith import Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel


@irdl_op_definition
class MatMulUpdateOp(AotkOp):
    """acc + alpha * (lhs @ rhs): acc of the product's type, alpha a scalar of its dtype
    (float32 or float64); `transpose_lhs`/`transpose_rhs` as for `aotk.matmul`."""

    name = "aotk.matmul_update"
    acc = operand_def(TensorType)
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    alpha = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_lhs = opt_prop_def(IntegerAttr)
    transpose_rhs = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())


def _infer(
    acc: Attribute,
    lhs: Attribute,
    rhs: Attribute,
    alpha: Attribute,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> Attribute:
    product = linalg.infer_matmul(lhs, rhs, transpose_lhs, transpose_rhs)
    if not dtypes.is_float(elem_of(product)) or dtypes.byte_size(elem_of(product)) < 4:
        raise TypeError(f"expected float32 or float64 operands, got {dtype_of(product)}")
    if acc != product:
        raise ValueError(
            f"expected an accumulator of the product's type {dtype_of(product)}"
            f"{fmt_shape(shape_of(product))}, got {dtype_of(acc)}{fmt_shape(shape_of(acc))}"
        )
    if alpha != tensor(elem_of(product), ()):
        raise ValueError(
            f"expected a scalar alpha of dtype {dtype_of(product)}, "
            f"got {dtype_of(alpha)}{fmt_shape(shape_of(alpha))}"
        )
    return acc


def _shape(a: DimArith, dims: Sequence[Sequence[Dim]], **_: Any) -> list[Dim]:
    return list(dims[0])


def _numpy(
    acc: np.ndarray,
    lhs: np.ndarray,
    rhs: np.ndarray,
    alpha: np.ndarray,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> np.ndarray:
    product = linalg.np_matmul(lhs, rhs, transpose_lhs, transpose_rhs)
    return (acc + alpha * product).astype(acc.dtype, copy=False)


def _lower(
    k: Kernel,
    out: Buf,
    acc: Buf,
    lhs: Buf,
    rhs: Buf,
    alpha: Buf,
    scratch: Buf | None = None,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> None:
    """out = acc unless out is acc's buffer (an update in place), then the matmul adds
    alpha times its product to out."""
    _copy_unless_same(k, out, acc)
    m, n, kdim = linalg.mnk(k, lhs, rhs, transpose_lhs, transpose_rhs)
    matmul_kernel.emit(
        k,
        out,
        lhs,
        rhs,
        m=m,
        n=n,
        kdim=kdim,
        scratch=scratch,
        a_t=transpose_lhs,
        b_t=transpose_rhs,
        alpha=alpha,
    )


def _copy_unless_same(k: Kernel, out: Buf, src: Buf) -> None:
    """out[:] = src[:] where the two are different buffers; a caller may pass a variable
    and its update as one buffer or as two, so that is known only at run time."""
    if out.mem is src.mem:
        return
    addresses = [k.b.insert(memref.ExtractAlignedPointerAsIndexOp.get(b.mem)) for b in (out, src)]
    differ = arith.CmpiOp(addresses[0].aligned_pointer, addresses[1].aligned_pointer, "ne")
    k.if_else(k.b.insert(differ).result, lambda: k.copy(src, out, parallel=True), None)


def _scratch(
    k: Kernel,
    ins: list[Buf],
    result_type: Attribute,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> DimV:
    """The matmul's scratch (`aotk.matmul`'s rule)."""
    return linalg.matmul_scratch(k, ins[1:3], result_type, transpose_lhs, transpose_rhs)


def _grad(
    g: Any,
    y: Any,
    acc: Any,
    lhs: Any,
    rhs: Any,
    alpha: Any,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> tuple[Any, ...]:
    """g for acc; the matmul's gradients of alpha * g for lhs and rhs; for alpha, the sum
    of g times the product."""
    from aotk.dialect import gradlib as lib

    ga, gb = linalg.matmul_grad(lib.mul(g, alpha), y, lhs, rhs, transpose_lhs, transpose_rhs)
    a = lib.transpose(lhs, (1, 0)) if transpose_lhs else lhs
    b = lib.transpose(rhs, (1, 0)) if transpose_rhs else rhs
    product = lib.mul(g, lib.matmul(a, b))
    return g, ga, gb, lib.reduce_sum(product, list(range(y.ndim)), keepdims=False)


register(
    OpDef(
        ir=MatMulUpdateOp,
        kind=Kind.CONTRACTION,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        shape=_shape,
        grad=_grad,
        scratch=_scratch,
        accumulates_into=0,
    )
)
