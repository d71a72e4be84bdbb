"""Reductions over a set of axes: sum, prod, max, min, with keepdims.

Lowering picks the loop order by layout: when the last axis is reduced, each output
element accumulates in a register across an inner loop; otherwise the output is
initialised and the input is swept in memory order, so the inner loop stays contiguous
(and vectorizes) in both cases. Threads split the outermost kept axis; when the first axis
is reduced and the output is small (BatchNorm's statistics, a bias gradient), up to
PARTIAL_SUMS chunks of it sweep in parallel into copies of the output in scratch memory,
then combined in a fixed order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, elem_of, normalize_axis, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import by_type, compute_type, const, reassociating_add

PARTIAL_SUMS = 8  # chunks of a reduced first axis summed apart (BatchNorm's statistics)
PARTIALS_LIMIT = 1 << 14  # output elements up to which each chunk has its own copy
MIN_PER_ROW = 64  # elements each index of the first axis adds to an output, at least


class ReduceOp(AotkOp):
    """Reduce `x` over `axes` (sorted, non-negative); `keepdims` keeps them as size 1."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    axes = prop_def(DenseArrayBase)
    keepdims = prop_def(IntegerAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class ReduceSumOp(ReduceOp):
    """Sum over `axes`."""

    name = "aotk.reduce_sum"


@irdl_op_definition
class ReduceProdOp(ReduceOp):
    """Product over `axes`."""

    name = "aotk.reduce_prod"


@irdl_op_definition
class ReduceMaxOp(ReduceOp):
    """Maximum over `axes`; NaN propagates."""

    name = "aotk.reduce_max"


@irdl_op_definition
class ReduceMinOp(ReduceOp):
    """Minimum over `axes`; NaN propagates."""

    name = "aotk.reduce_min"


def normalize_axes(axes: Sequence[int] | int | None, rank: int) -> tuple[int, ...]:
    """Sorted unique non-negative axes; None means all."""
    if axes is None:
        return tuple(range(rank))
    if isinstance(axes, int):
        axes = (axes,)
    if not isinstance(axes, Sequence):
        raise TypeError(f"axis: expected an int, a list of ints or None, got {axes!r}")
    out = sorted({normalize_axis(a, rank) for a in axes})
    return tuple(out)


def infer_reduce(x: Attribute, *, axes: Sequence[int], keepdims: bool, **_: Any) -> Attribute:
    shape = shape_of(x)
    for a in axes:
        if not 0 <= a < len(shape):
            raise ValueError(f"axis {a} is out of range for rank {len(shape)}")
    if dtypes.is_bool(elem_of(x)):
        raise TypeError("cannot reduce a bool tensor; cast it first")
    return tensor(elem_of(x), reduce_shape(STATIC, [shape], axes=axes, keepdims=keepdims))


def reduce_shape(
    a: DimArith, dims: Sequence[Sequence[Dim]], *, axes: Sequence[int], keepdims: bool
) -> list[Dim]:
    """x's dims without `axes`, or with them as 1 under `keepdims`."""
    if keepdims:
        return [1 if i in axes else d for i, d in enumerate(dims[0])]
    return [d for i, d in enumerate(dims[0]) if i not in axes]


def _infer_extremum(x: Attribute, **attrs: Any) -> Attribute:
    shape = shape_of(x)
    for a in attrs["axes"]:
        if 0 <= a < len(shape) and shape[a] == 0:
            raise ValueError(f"cannot take the max/min over axis {a} of size 0")
    return infer_reduce(x, **attrs)


def _np_reduce(fn: Any) -> Any:
    def run(x: np.ndarray, *, axes: Sequence[int], keepdims: bool) -> np.ndarray:
        return fn(x, axis=tuple(axes), keepdims=bool(keepdims)).astype(x.dtype, copy=False)

    return run


def _identity(kind: str, elem: Attribute) -> float | int:
    if kind == "sum":
        return 0
    if kind == "prod":
        return 1
    if dtypes.is_float(elem):
        return float("-inf") if kind == "max" else float("inf")
    info = np.iinfo(dtypes.numpy_dtype(elem))
    return int(info.min) if kind == "max" else int(info.max)


_COMBINE = {
    "sum": by_type(reassociating_add, arith.AddiOp),
    "prod": by_type(arith.MulfOp, arith.MuliOp),
    "max": by_type(arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp),
    "min": by_type(arith.MinimumfOp, arith.MinSIOp, arith.MinUIOp),
}


def _reduce_lowering(kind: str) -> Any:
    def lower(
        k: Kernel,
        out: Buf,
        x: Buf,
        *,
        axes: Sequence[int],
        keepdims: bool,
        scratch: Buf | None = None,
    ) -> None:
        combine = _COMBINE[kind]
        elem = x.elem

        def step(acc: SSAValue, v: SSAValue) -> SSAValue:
            return combine(k.b, [acc, v], [elem, elem], elem)

        kept = [i for i in range(x.rank) if i not in axes]
        out_strides = k.strides([x.dims[i] for i in kept])
        init = _identity(kind, elem)
        if x.rank == 0 or (x.rank - 1) in axes:
            _register_reduce(k, out, x, kept, list(axes), out_strides, init, step)
        elif scratch is not None:
            _chunked_sweep(k, (out, x, scratch), kept, out_strides, init, step)
        else:
            _sweep_reduce(k, out, x, kept, out_strides, init, step)

    return lower


def _partial_outputs(k: Kernel, ins: Sequence[Buf], result_type: Attribute, **attrs: Any) -> DimV:
    """Scratch for `_chunked_sweep`: PARTIAL_SUMS copies of the output, when the first
    axis is reduced, the last is not, the output is static and at most PARTIALS_LIMIT
    elements, and the other reduced axes give each output at least MIN_PER_ROW elements
    per index of the first (a dense layer's bias gradient, one per row, sweeps serially:
    setting and combining the copies would cost a tenth of it). 0: one serial sweep."""
    x, axes = ins[0], attrs["axes"]
    kept = [x.dims[i] for i in range(x.rank) if i not in axes]
    per_row = [x.dims[i] for i in axes if i != 0]
    if x.rank < 2 or 0 not in axes or (x.rank - 1) in axes:
        return 0
    if not all(isinstance(d, int) for d in [*kept, *per_row]):
        return 0
    size = math.prod(d for d in kept if isinstance(d, int))
    if math.prod(d for d in per_row if isinstance(d, int)) < MIN_PER_ROW:
        return 0
    return PARTIAL_SUMS * size if 0 < size <= PARTIALS_LIMIT else 0


def _register_reduce(
    k: Kernel,
    out: Buf,
    x: Buf,
    kept: list[int],
    axes: list[int],
    out_strides: Sequence[DimV],
    init: float | int,
    step: Any,
) -> None:
    """For each output element, fold the reduced axes in a loop-carried register."""
    x_strides = k.strides(x.dims)
    with k.nest([x.dims[i] for i in kept], parallel=True) as ivs:
        base = k.linear(ivs, [x_strides[i] for i in kept])
        acc0 = const(k.b, init, compute_type(x.elem))

        def fold(depth: int, offset: DimV, acc: SSAValue) -> SSAValue:
            if depth == len(axes):
                return step(acc, k.load_flat(x, offset))
            ax = axes[depth]

            def body(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
                return [fold(depth + 1, k.add(offset, k.mul(i, x_strides[ax])), carried[0])]

            return k.fold_loop(x.dims[ax], [acc], body)[0]

        k.store_flat(out, k.linear(ivs, out_strides), fold(0, base, acc0))


def _sweep_reduce(
    k: Kernel,
    out: Buf,
    x: Buf,
    kept: list[int],
    out_strides: Sequence[DimV],
    init: float | int,
    step: Any,
) -> None:
    """Initialise the output, then sweep the input in memory order accumulating into it."""
    out_size = k.product(out.dims)
    with k.loop(out_size) as i:
        k.store_flat(out, i, const(k.b, init, compute_type(x.elem)))
    # an outer kept axis gives each thread its own outputs; a reduced one would not
    with k.nest(x.dims, parallel=0 in kept) as ivs:
        o = k.linear([ivs[i] for i in kept], out_strides)
        k.store_flat(out, o, step(k.load_flat(out, o), k.load(x, ivs)))


def _chunked_sweep(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    kept: list[int],
    out_strides: Sequence[DimV],
    init: float | int,
    step: Any,
) -> None:
    """The first axis reduced: up to PARTIAL_SUMS chunks of it sweep in parallel, each
    into its own copy of the output in `scratch`, which are then combined in order (so
    the result does not depend on the thread count)."""
    out, x, scratch = bufs
    size = k.product(out.dims)
    first = x.dims[0]
    chunks = k.min(first, PARTIAL_SUMS)
    identity = const(k.b, init, compute_type(x.elem))
    with k.loop(chunks, parallel=True) as t:
        base = k.mul(t, size)
        with k.loop(size) as o:
            k.store_flat(scratch, k.add(base, o), identity)
        lo, hi = (k.div(k.mul(k.add(t, i), first), chunks) for i in (0, 1))
        with k.loop(hi, lb=lo) as n, k.nest(x.dims[1:]) as rest:
            ivs = [n, *rest]
            at = k.add(base, k.linear([ivs[i] for i in kept], out_strides))
            k.store_flat(scratch, at, step(k.load_flat(scratch, at), k.load(x, ivs)))
    with k.loop(size) as o:

        def combine(t: SSAValue, acc: Sequence[SSAValue]) -> list[SSAValue]:
            return [step(acc[0], k.load_flat(scratch, k.add(k.mul(t, size), o)))]

        k.store_flat(out, o, k.fold_loop(chunks, [identity], combine)[0])


def _grad_sum(g: Any, y: Any, x: Any, *, axes: Sequence[int], keepdims: bool) -> tuple[Any, ...]:
    from aotk.dialect import gradlib as lib

    return (lib.broadcast_back(g, x, axes, keepdims),)


def _grad_prod(g: Any, y: Any, x: Any, *, axes: Sequence[int], keepdims: bool) -> tuple[Any, ...]:
    # g * prod / x: exact where x != 0; a zero factor gives inf/NaN, as in Theano
    from aotk.dialect import gradlib as lib

    spread = lib.broadcast_back(lib.mul(g, y), x, axes, keepdims)
    return (lib.div(spread, x),)


def _grad_extremum(
    g: Any, y: Any, x: Any, *, axes: Sequence[int], keepdims: bool
) -> tuple[Any, ...]:
    """Split the cotangent evenly among the elements that attain the extremum."""
    from aotk.dialect import gradlib as lib
    from aotk.dialect.compare import EqualOp

    y_full = lib.broadcast_back(y, x, axes, keepdims)
    hits = lib.cast(lib.emit(EqualOp, x, y_full), x.dtype)
    count = lib.reduce_sum(hits, axes, keepdims=True)
    share = lib.div(lib.broadcast_back(g, x, axes, keepdims), count)
    return (lib.mul(share, hits),)


for _cls, _kind, _fn, _grad in [
    (ReduceSumOp, "sum", np.sum, _grad_sum),
    (ReduceProdOp, "prod", np.prod, _grad_prod),
    (ReduceMaxOp, "max", np.max, _grad_extremum),
    (ReduceMinOp, "min", np.min, _grad_extremum),
]:
    register(
        OpDef(
            ir=_cls,
            kind=Kind.REDUCTION,
            infer=_infer_extremum if _kind in ("max", "min") else infer_reduce,
            numpy=_np_reduce(_fn),
            lower=_reduce_lowering(_kind),
            shape=reduce_shape,
            grad=_grad,
            scratch=_partial_outputs,
        )
    )
