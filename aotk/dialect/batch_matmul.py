"""`aotk.batch_matmul`: one matrix product per batch entry, the core of `K.batch_dot`.

Each operand's middle dims fold into M or N, which costs nothing on dense row-major
buffers. `transpose_lhs` (lhs [B, K, M]) and `transpose_rhs` (rhs [B, N, K]) multiply by
an entry's transpose without materializing it: `aotk-simplify` folds a (0, 2, 1)
transpose into them, so `batch_dot` over other axes and the gradients copy nothing.
Each entry is one call of the float matmul micro-kernel on packed B (`matmul_kernel`).
Up to `BATCH_SLOTS` entries run side by side, a slot of scratch each; an entry big
enough to keep every thread busy runs alone, the micro-kernel's own loops splitting it.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import matmul_kernel
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import PARALLEL_GRAIN, Buf, DimV, Kernel

BATCH_SLOTS = 8  # entries in flight at once, each with its own slot of scratch
WHOLE_ENTRY_WORK = 1 << 24  # multiply-adds from which one entry takes every thread
SLOT_ALIGN = 16  # elements: each slot of scratch starts on a cache line


@irdl_op_definition
class BatchMatMulOp(AotkOp):
    """lhs [B, *Ms, K] times rhs [B, K, *Ns] -> [B, *Ms, *Ns], one product per batch entry.

    With `transpose_lhs`, lhs is [B, K, M]; with `transpose_rhs`, rhs is [B, N, K].
    """

    name = "aotk.batch_matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    transpose_lhs = opt_prop_def(IntegerAttr)
    transpose_rhs = opt_prop_def(IntegerAttr)
    traits = traits_def(Pure())


def _differ(a: int | None, b: int | None) -> bool:
    return a is not None and b is not None and a != b


def _contracted_axes(a: Sequence[Any], b: Sequence[Any], a_t: bool, b_t: bool) -> tuple[int, int]:
    """The axis of K in each operand."""
    return (1 if a_t else len(a) - 1), (2 if b_t else 1)


def infer_batch_matmul(
    lhs: Attribute, rhs: Attribute, transpose_lhs: bool = False, transpose_rhs: bool = False
) -> Attribute:
    a, b = shape_of(lhs), shape_of(rhs)
    if elem_of(lhs) != elem_of(rhs):
        raise TypeError(f"operands have different dtypes {dtype_of(lhs)} and {dtype_of(rhs)}")
    if dtypes.is_bool(elem_of(lhs)):
        raise TypeError("cannot multiply bool matrices")
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"expected operands of rank >= 2, got {fmt_shape(a)} and {fmt_shape(b)}")
    for name, shape, flag in (("lhs", a, transpose_lhs), ("rhs", b, transpose_rhs)):
        if flag and len(shape) != 3:
            raise ValueError(f"a transposed {name} must have rank 3, got {fmt_shape(shape)}")
    if _differ(a[0], b[0]):
        raise ValueError(f"batch sizes differ: {fmt_shape(a)} and {fmt_shape(b)}")
    ka, kb = _contracted_axes(a, b, transpose_lhs, transpose_rhs)
    if _differ(a[ka], b[kb]):
        raise ValueError(
            f"contracted dims differ: axis {ka} of {fmt_shape(a)} and axis {kb} of {fmt_shape(b)}"
        )
    dims = batch_matmul_shape(STATIC, [a, b], transpose_lhs, transpose_rhs)
    return tensor(elem_of(lhs), dims)


def batch_matmul_shape(
    a: DimArith,
    dims: Sequence[Sequence[Dim]],
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> list[Dim]:
    """[B, *Ms, *Ns]; B from whichever operand knows it (they agree at run time)."""
    lhs, rhs = dims
    batch = lhs[0] if isinstance(lhs[0], int) else rhs[0]
    rows = [lhs[2]] if transpose_lhs else lhs[1:-1]
    cols = [rhs[1]] if transpose_rhs else rhs[2:]
    return [batch, *rows, *cols]


def _np_batch_matmul(
    a: np.ndarray, b: np.ndarray, transpose_lhs: bool = False, transpose_rhs: bool = False
) -> np.ndarray:
    a = np.swapaxes(a, 1, 2) if transpose_lhs else a
    b = np.swapaxes(b, 1, 2) if transpose_rhs else b
    batch, kdim = a.shape[0], a.shape[-1]
    m, n = pymath.prod(a.shape[1:-1]), pymath.prod(b.shape[2:])
    prod = np.matmul(a.reshape(batch, m, kdim), b.reshape(batch, kdim, n))
    return prod.astype(a.dtype, copy=False).reshape(batch, *a.shape[1:-1], *b.shape[2:])


def _mnk(k: Kernel, a: Buf, b: Buf, a_t: bool, b_t: bool) -> tuple[DimV, DimV, DimV]:
    m = a.dims[2] if a_t else k.product(a.dims[1:-1])
    n = b.dims[1] if b_t else k.product(b.dims[2:])
    return m, n, a.dims[1] if a_t else a.dims[-1]


def _at_least(k: Kernel, value: DimV, bound: int) -> SSAValue | bool:
    if isinstance(value, int):
        return value >= bound
    return k.b.insert(arith.CmpiOp(k.index(value), k.index(bound), "sge")).result


def _slots(k: Kernel, batch: DimV, mnk: tuple[DimV, DimV, DimV]) -> DimV:
    """Entries run side by side: up to BATCH_SLOTS, or one (the micro-kernel's loops
    then split each entry) when one entry is big enough, or all of them too little, to
    repay a thread."""
    work = k.mul(mnk[0], k.mul(mnk[1], mnk[2]))
    alone = _at_least(k, work, WHOLE_ENTRY_WORK)
    if alone is True:
        return 1
    enough = _at_least(k, k.mul(work, batch), PARALLEL_GRAIN)
    slots = k.select(enough, k.max(k.min(batch, BATCH_SLOTS), 1), 1)
    return slots if alone is False else k.select(alone, 1, slots)


def _slot_elems(k: Kernel, elem: Attribute, mnk: tuple[DimV, DimV, DimV], a_t: bool) -> DimV:
    return k.round_up(matmul_kernel.scratch_elems(k, elem, mnk, a_t), SLOT_ALIGN)


def _scratch(
    k: Kernel,
    ins: list[Buf],
    result_type: Attribute,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> DimV:
    """A slot of the micro-kernel's scratch for each entry in flight."""
    a, b = ins
    mnk = _mnk(k, a, b, transpose_lhs, transpose_rhs)
    if matmul_kernel.scratch_elems(k, a.elem, mnk, transpose_lhs) == 0:
        return 0
    return k.mul(_slots(k, a.dims[0], mnk), _slot_elems(k, a.elem, mnk, transpose_lhs))


def _lower(
    k: Kernel,
    out: Buf,
    a: Buf,
    b: Buf,
    scratch: Buf | None = None,
    transpose_lhs: bool = False,
    transpose_rhs: bool = False,
) -> None:
    a_t, b_t = transpose_lhs, transpose_rhs
    m, n, kdim = mnk = _mnk(k, a, b, a_t, b_t)
    batch = a.dims[0]
    slots = _slots(k, batch, mnk)
    per_slot = k.div(k.add(batch, k.sub(slots, 1)), slots)
    room = _slot_elems(k, a.elem, mnk, a_t) if scratch is not None else 0
    # each slot's trip is at least PARALLEL_GRAIN of work, or there is only one slot
    with k.loop(slots, parallel=True, trip_cost=PARALLEL_GRAIN) as slot:
        own = None if scratch is None else k.view(scratch, k.mul(slot, room), [room])
        first = k.mul(slot, per_slot)
        with k.loop(k.min(k.add(first, per_slot), batch), lb=first) as i:
            c_i = k.view(out, k.mul(i, k.mul(m, n)), (m, n))
            a_i = k.view(a, k.mul(i, k.mul(m, kdim)), (kdim, m) if a_t else (m, kdim))
            b_i = k.view(b, k.mul(i, k.mul(kdim, n)), (n, kdim) if b_t else (kdim, n))
            matmul_kernel.emit(k, c_i, a_i, b_i, m=m, n=n, kdim=kdim, scratch=own, a_t=a_t, b_t=b_t)


def _grad(
    g: Any, y: Any, a: Any, b: Any, transpose_lhs: bool = False, transpose_rhs: bool = False
) -> tuple[Any, ...]:
    """Per batch entry, with A and B the effective operands: dA = G @ B^T and
    dB = A^T @ G, on [B, M, K] / [B, K, N] views; a transposed operand's gradient is
    the transpose, (G @ B^T)^T = B @ G^T and (A^T @ G)^T = G^T @ A. Each is one
    batch_matmul reading its operands as stored, with flags."""
    from aotk.dialect import gradlib as lib
    from aotk.dialect.data import ViewOp, view_attrs

    a_t, b_t = transpose_lhs, transpose_rhs
    n_m = 1 if a_t else a.ndim - 2  # the *Ms axes of the result

    def group(axes: range) -> tuple[int, ...] | int:
        return tuple(axes) or 1  # no axes: a static size-1 dim

    def view3(t: Any, groups: list[tuple[int, ...] | int]) -> Any:
        if t.ndim == 3 and all(isinstance(x, tuple) and len(x) == 1 for x in groups):
            return t
        return lib.emit(ViewOp, t, **view_attrs(groups, t.ndim))

    def product(x: Any, z: Any, x_t: bool, z_t: bool) -> Any:
        flags = {"transpose_lhs": x_t, "transpose_rhs": z_t}
        return lib.emit(BatchMatMulOp, x, z, **{name: True for name, on in flags.items() if on})

    a3 = view3(a, [(0,), group(range(1, 1 + n_m)), (a.ndim - 1,)])
    b3 = view3(b, [(0,), (1,), group(range(2, b.ndim))])
    g3 = view3(g, [(0,), group(range(1, 1 + n_m)), group(range(1 + n_m, g.ndim))])
    ga = product(b3, g3, b_t, True) if a_t else product(g3, b3, False, not b_t)
    gb = product(g3, a3, True, a_t) if b_t else product(a3, g3, not a_t, False)
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
        scratch=_scratch,
    )
)
