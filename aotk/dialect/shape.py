"""Data movement: reshape (a view), transpose, concatenate and strided slicing."""

from __future__ import annotations

import math as pymath
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IntegerAttr,
    TensorType,
)
from xdsl.ir import Attribute
from xdsl.irdl import (
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import transpose as transpose_kernel
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel

FULL = 2**63 - 1  # slice stop meaning "to the end of the axis"
BEFORE = -(2**62)  # a slice stop before the first element (negative steps)


@irdl_op_definition
class ReshapeOp(AotkOp):
    """Same elements, new dims; one dim of `shape` may be -1 (inferred)."""

    name = "aotk.reshape"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    shape = prop_def(DenseArrayBase)
    traits = traits_def(Pure())


@irdl_op_definition
class TransposeOp(AotkOp):
    """Permute the axes: result dim i is x dim perm[i]; x is read back to front along the
    axes `reverse` (if any): the transpose of K.reverse(x, reverse), in one pass."""

    name = "aotk.transpose"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    perm = prop_def(DenseArrayBase)
    reverse = opt_prop_def(DenseArrayBase)
    traits = traits_def(Pure())


@irdl_op_definition
class ConcatOp(AotkOp):
    """Join tensors along `axis`."""

    name = "aotk.concat"
    xs = var_operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class SliceOp(AotkOp):
    """x[start:stop:step] on every axis (stop FULL: to the end)."""

    name = "aotk.slice"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    start = prop_def(DenseArrayBase)
    stop = prop_def(DenseArrayBase)
    step = prop_def(DenseArrayBase)
    traits = traits_def(Pure())


def infer_reshape(x: Attribute, *, shape: Sequence[int], **_: Any) -> Attribute:
    src = shape_of(x)
    if sum(1 for d in shape if d == -1) > 1:
        raise ValueError(f"at most one dim may be -1, got {tuple(shape)}")
    if any(d < -1 for d in shape):
        raise ValueError(f"dims must be >= 0 or -1, got {tuple(shape)}")
    known = pymath.prod(d for d in shape if d != -1)
    if -1 in shape and known == 0:  # NumPy refuses it too, whatever x holds
        raise ValueError(f"cannot infer the -1 dim of {tuple(shape)}: the others hold 0 elements")
    total = STATIC.product(src)  # known when every dim is, or some dim is 0
    if total is not None and (total % known if -1 in shape else total != known):
        raise ValueError(f"cannot reshape {fmt_shape(src)} ({total} elements) into {tuple(shape)}")
    return tensor(elem_of(x), reshape_shape(STATIC, [src], shape=shape))


def reshape_shape(a: DimArith, dims: Sequence[Sequence[Dim]], *, shape: Sequence[int]) -> list[Dim]:
    """`shape`, its -1 dim (if any) being the elements of x the others leave."""
    if -1 not in shape:
        return list(shape)
    known = pymath.prod(d for d in shape if d != -1)
    missing = a.div(a.product(dims[0]), known)
    return [missing if d == -1 else d for d in shape]


def infer_transpose(
    x: Attribute, *, perm: Sequence[int], reverse: Sequence[int] = (), **_: Any
) -> Attribute:
    src = shape_of(x)
    if sorted(perm) != list(range(len(src))):
        raise ValueError(
            f"perm {tuple(perm)} is not a permutation of the {len(src)} axes of {fmt_shape(src)}"
        )
    if list(reverse) != sorted(set(reverse)) or not all(0 <= a < len(src) for a in reverse):
        raise ValueError(
            f"reverse {tuple(reverse)} must be increasing axes of {fmt_shape(src)}, each once"
        )
    return tensor(elem_of(x), transpose_shape(STATIC, [src], perm=perm))


def transpose_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, perm: Sequence[int], **_: Any
) -> list[Dim]:
    return [dims[0][p] for p in perm]


def _np_transpose(x: np.ndarray, *, perm: Sequence[int], reverse: Sequence[int] = ()) -> np.ndarray:
    return np.transpose(np.flip(x, tuple(reverse)), perm).copy()


def _lower_transpose(
    k: Kernel, out: Buf, x: Buf, *, perm: Sequence[int], reverse: Sequence[int] = ()
) -> None:
    shape = transpose_kernel.as_batched_2d(x.dims, perm, k)
    flips = transpose_kernel.reversed_batch(x.dims, perm, reverse)
    if shape is not None and flips is not None:
        transpose_kernel.emit(k, out, x, shape, dtypes.byte_size(x.elem), flips)
        return
    x_strides = k.strides(x.dims)
    with k.nest(out.dims, parallel=True) as ivs:
        coords = [
            k.sub(k.sub(x.dims[p], 1), i) if p in reverse else i
            for i, p in zip(ivs, perm, strict=True)
        ]
        src = k.linear(coords, [x_strides[p] for p in perm])
        k.store(out, ivs, k.load_flat(x, src))


def infer_concat(*xs: Attribute, axis: int, **_: Any) -> Attribute:
    if not xs:
        raise ValueError("needs at least one tensor")
    shapes = [shape_of(x) for x in xs]
    rank = len(shapes[0])
    if not 0 <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    for x, s in zip(xs, shapes, strict=True):
        if elem_of(x) != elem_of(xs[0]):
            raise TypeError(f"dtypes differ: {dtype_of(xs[0])} and {dtype_of(x)}")
        if len(s) != rank or any(
            a != b and None not in (a, b)
            for i, (a, b) in enumerate(zip(s, shapes[0], strict=True))
            if i != axis
        ):
            raise ValueError(
                f"shapes {fmt_shape(shapes[0])} and {fmt_shape(s)} differ off axis {axis}"
            )
    return tensor(elem_of(xs[0]), concat_shape(STATIC, shapes, axis=axis))


def concat_shape(a: DimArith, dims: Sequence[Sequence[Dim]], *, axis: int) -> list[Dim]:
    """The first operand's dims, with the operands' sizes along `axis` summed."""
    out = list(dims[0])
    total: Dim = 0
    for d in dims:
        total = a.add(total, d[axis])
    out[axis] = total
    return out


def _lower_concat(k: Kernel, out: Buf, *xs: Buf, axis: int) -> None:
    offset: DimV = 0
    for x in xs:
        with k.nest(x.dims, parallel=True) as ivs:
            dst: list[DimV] = list(ivs)
            dst[axis] = k.add(ivs[axis], offset)
            k.store(out, dst, k.load(x, ivs))
        offset = k.add(offset, x.dims[axis])


def slice_len(dim: int, start: int, stop: int, step: int) -> tuple[int, int]:
    """Normalized start and length of a Python slice on an axis of size `dim`."""
    s, _, _ = slice(start, None if stop == FULL else stop, step).indices(dim)
    return s, len(range(*slice(start, None if stop == FULL else stop, step).indices(dim)))


def slice_bounds(a: DimArith, d: Dim, start: int, stop: int, step: int) -> tuple[Dim, Dim]:
    """(first index, number of elements) of x[start:stop:step] on an axis of size d, as
    `slice_len` gives them; for d only known at run time too."""
    first = _slice_index(a, start, d, step)
    # a FULL stop is Python's None: past the end in the step's direction
    last = (d if step > 0 else -1) if stop == FULL else _slice_index(a, stop, d, step)
    if step > 0 and first == 0:  # 0 <= last: x[:n] and x[:] of a run-time d need no max
        span = last
    else:
        span = a.max(a.sub(last, first) if step > 0 else a.sub(first, last), 0)
    return first, a.div(a.add(span, abs(step) - 1), abs(step))


def _slice_index(a: DimArith, i: int, d: Dim, step: int) -> Dim:
    """Python's normalization of a start or stop index for a slice of `step`."""
    low, high = (0, d) if step > 0 else (-1, a.sub(d, 1))
    if i <= BEFORE:  # clamped as Python does, without overflowing d + i
        return low
    if i == 0 and step > 0:  # min(0, d) of a dim
        return 0
    if i >= 0:
        return a.min(i, high)
    return a.max(a.add(d, i), low)


def reversal(rank: int, axes: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """The attributes of K.reverse's slice: every axis of `rank` whole, `axes` back to
    front."""
    return {
        "start": tuple(-1 if a in axes else 0 for a in range(rank)),
        "stop": tuple(BEFORE if a in axes else FULL for a in range(rank)),
        "step": tuple(-1 if a in axes else 1 for a in range(rank)),
    }


def reversed_axes(attrs: dict[str, Any]) -> tuple[int, ...] | None:
    """The axes a slice of attributes `attrs` reverses when it is K.reverse's (`reversal`:
    every axis whole, some back to front), else None."""
    triples = list(zip(attrs["start"], attrs["stop"], attrs["step"], strict=True))
    backwards = [(start, step) == (-1, -1) and stop <= BEFORE for start, stop, step in triples]
    if not all(b or t == (0, FULL, 1) for b, t in zip(backwards, triples, strict=True)):
        return None
    return tuple(a for a, b in enumerate(backwards) if b)


def infer_slice(
    x: Attribute, *, start: Sequence[int], stop: Sequence[int], step: Sequence[int], **_: Any
) -> Attribute:
    src = shape_of(x)
    if not len(start) == len(stop) == len(step) == len(src):
        raise ValueError(f"needs one (start, stop, step) per axis of {fmt_shape(src)}")
    for axis, c in enumerate(step):
        if c == 0:
            raise ValueError(f"slice step of axis {axis} is zero")
    return tensor(elem_of(x), slice_shape(STATIC, [src], start=start, stop=stop, step=step))


def slice_shape(
    a: DimArith,
    dims: Sequence[Sequence[Dim]],
    *,
    start: Sequence[int],
    stop: Sequence[int],
    step: Sequence[int],
) -> list[Dim]:
    bounds = zip(dims[0], start, stop, step, strict=True)
    return [slice_bounds(a, d, i, j, c)[1] for d, i, j, c in bounds]


def _np_slice(
    x: np.ndarray, *, start: Sequence[int], stop: Sequence[int], step: Sequence[int]
) -> np.ndarray:
    key = tuple(
        slice(a, None if b == FULL else b, c) for a, b, c in zip(start, stop, step, strict=True)
    )
    return x[key]


def _lower_slice(
    k: Kernel, out: Buf, x: Buf, *, start: Sequence[int], stop: Sequence[int], step: Sequence[int]
) -> None:
    x_strides = k.strides(x.dims)
    with k.nest(out.dims, parallel=True) as ivs:
        src: list[DimV] = []
        for axis, iv in enumerate(ivs):
            first = slice_bounds(k, x.dims[axis], start[axis], stop[axis], step[axis])[0]
            src.append(
                k.add(first, k.mul(iv, step[axis]))
                if step[axis] > 0
                else k.sub(first, k.mul(iv, -step[axis]))
            )
        k.store(out, ivs, k.load_flat(x, k.linear(src, x_strides)))


def _grad_reshape(g: Any, y: Any, x: Any, **_: Any) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.reshape_like(g, x),)


def _grad_transpose(
    g: Any, y: Any, x: Any, *, perm: Sequence[int], reverse: Sequence[int] = ()
) -> tuple[Any, ...]:
    """g transposed back, read back to front along the axes that were reversed."""
    from aotk.dialect import gradlib as lib

    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return (lib.transpose(g, inverse, sorted(inverse[a] for a in reverse)),)


def _grad_concat(g: Any, y: Any, *xs: Any, axis: int) -> tuple[Any, ...]:
    """Each input gets its own block of g along `axis`."""
    from aotk.dialect import gradlib as lib

    out = []
    offset = 0
    for x in xs:
        size = x.shape[axis]
        if size is None:
            raise ValueError("K.gradients: concatenate along a dynamic axis has no gradient")
        start = [0] * g.ndim
        stop = [FULL] * g.ndim
        start[axis], stop[axis] = offset, offset + size
        out.append(lib.emit(SliceOp, g, start=tuple(start), stop=tuple(stop), step=(1,) * g.ndim))
        offset += size
    return tuple(out)


def _grad_slice(
    g: Any, y: Any, x: Any, *, start: Sequence[int], stop: Sequence[int], step: Sequence[int]
) -> tuple[Any, ...]:
    """Put g back where the slice read it from, zeros elsewhere."""
    from aotk.dialect import gradlib as lib
    from aotk.dialect.unslice import UnsliceOp

    return (lib.emit(UnsliceOp, g, x, start=tuple(start), stop=tuple(stop), step=tuple(step)),)


register(
    OpDef(
        ir=ReshapeOp,
        kind=Kind.VIEW,
        infer=infer_reshape,
        numpy=lambda x, *, shape: x.reshape(shape),
        lower=None,
        shape=reshape_shape,
        grad=_grad_reshape,
    )
)
register(
    OpDef(
        ir=TransposeOp,
        kind=Kind.OPAQUE,
        infer=infer_transpose,
        numpy=_np_transpose,
        lower=_lower_transpose,
        shape=transpose_shape,
        grad=_grad_transpose,
    )
)
register(
    OpDef(
        ir=ConcatOp,
        kind=Kind.OPAQUE,
        infer=infer_concat,
        numpy=lambda *xs, axis: np.concatenate(xs, axis=axis),
        lower=_lower_concat,
        shape=concat_shape,
        grad=_grad_concat,
    )
)
register(
    OpDef(
        ir=SliceOp,
        kind=Kind.OPAQUE,
        infer=infer_slice,
        numpy=_np_slice,
        lower=_lower_slice,
        shape=slice_shape,
        grad=_grad_slice,
    )
)
