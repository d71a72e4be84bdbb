"""Scans and index reductions along one axis: cumsum, cumprod, argmax and argmin.

Lowering views `x` as (outer, n, inner) around the axis. A scan over the last axis carries
its running value in a register; otherwise each step adds a whole contiguous row of
`inner` elements to the previous output row, so the inner loop stays contiguous. argmax
and argmin carry (best value, index) through the axis and keep the first extreme; a NaN
wins and its first occurrence is kept, as in NumPy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, elem_of, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import arg_extremum
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import by_type, compare, compute_type, const, storage_type

Step = Callable[[SSAValue, SSAValue], SSAValue]


class AxisOp(AotkOp):
    """One tensor in, one out, along one non-negative `axis`."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    axis = prop_def(IntegerAttr)
    traits = traits_def(Pure())


@irdl_op_definition
class CumSumOp(AxisOp):
    """Running sum along `axis`, in the dtype of `x`."""

    name = "aotk.cumsum"


@irdl_op_definition
class CumProdOp(AxisOp):
    """Running product along `axis`, in the dtype of `x`."""

    name = "aotk.cumprod"


@irdl_op_definition
class ArgMaxOp(AxisOp):
    """int64 index of the first maximum along `axis` (a NaN counts as the maximum)."""

    name = "aotk.argmax"


@irdl_op_definition
class ArgMinOp(AxisOp):
    """int64 index of the first minimum along `axis` (a NaN counts as the minimum)."""

    name = "aotk.argmin"


def _check_axis(x: Attribute, axis: int) -> tuple[int | None, ...]:
    shape = shape_of(x)
    if not 0 <= axis < len(shape):
        raise ValueError(f"axis {axis} is out of range for rank {len(shape)}")
    return shape


def infer_scan(x: Attribute, *, axis: int, **_: Any) -> Attribute:
    _check_axis(x, axis)
    if dtypes.is_bool(elem_of(x)):
        raise TypeError("cannot scan a bool tensor; cast it first")
    return tensor(elem_of(x), scan_shape(STATIC, [shape_of(x)], axis=axis))


def scan_shape(a: DimArith, dims: Sequence[Sequence[Dim]], *, axis: int) -> list[Dim]:
    return list(dims[0])


def infer_arg(x: Attribute, *, axis: int, **_: Any) -> Attribute:
    shape = _check_axis(x, axis)
    if shape[axis] == 0:
        raise ValueError(f"cannot take the index of an extremum over axis {axis} of size 0")
    return tensor(i64, arg_shape(STATIC, [shape], axis=axis))


def arg_shape(a: DimArith, dims: Sequence[Sequence[Dim]], *, axis: int) -> list[Dim]:
    """x's dims without `axis`."""
    return [d for i, d in enumerate(dims[0]) if i != axis]


def _np_scan(fn: Any) -> Any:
    def run(x: np.ndarray, *, axis: int) -> np.ndarray:
        with np.errstate(all="ignore"):
            return fn(x, axis=axis, dtype=x.dtype)

    return run


def _np_arg(fn: Any) -> Any:
    def run(x: np.ndarray, *, axis: int) -> np.ndarray:
        return fn(x, axis=axis).astype(np.int64)

    return run


def _split(k: Kernel, dims: Sequence[DimV], axis: int) -> tuple[DimV, DimV, DimV]:
    """(outer, n, inner) sizes around `axis`."""
    return k.product(dims[:axis]), dims[axis], k.product(dims[axis + 1 :])


def _rounded(k: Kernel, v: SSAValue, elem: Attribute) -> SSAValue:
    """`v` rounded to the storage type, so a carried float16 sum rounds like a stored one."""
    if compute_type(elem) == storage_type(elem) or not dtypes.is_float(elem):
        return v
    narrow = k.b.insert(arith.TruncFOp(v, storage_type(elem))).result
    return k.b.insert(arith.ExtFOp(narrow, compute_type(elem))).result


_SCAN_COMBINE = {
    "sum": by_type(arith.AddfOp, arith.AddiOp),
    "prod": by_type(arith.MulfOp, arith.MuliOp),
}


def _scan_identity(kind: str, elem: Attribute) -> float | int:
    if kind == "prod":
        return 1
    return -0.0 if dtypes.is_float(elem) else 0  # -0.0 + x is x, even for x = -0.0


def _scan_lowering(kind: str) -> Any:
    def lower(k: Kernel, out: Buf, x: Buf, *, axis: int) -> None:
        combine = _SCAN_COMBINE[kind]

        def step(acc: SSAValue, v: SSAValue) -> SSAValue:
            return combine(k.b, [acc, v], [x.elem, x.elem], x.elem)

        outer, n, inner = _split(k, x.dims, axis)
        init = _scan_identity(kind, x.elem)
        _by_layout(
            k,
            inner,
            lambda: _scan_rows(k, out, x, outer, n, init, step),
            lambda: _scan_sweep(k, out, x, outer, n, inner, step),
        )

    return lower


def _by_layout(
    k: Kernel, inner: DimV, rows: Callable[[], None], strided: Callable[[], None]
) -> None:
    """Emit `rows` when the axis is the innermost one (inner == 1), else `strided`; a
    dynamic `inner` decides at run time."""
    if inner == 1:
        rows()
    elif isinstance(inner, int):
        strided()
    else:
        k.if_else(k.b.insert(arith.CmpiOp(inner, k.index(1), "eq")).result, rows, strided)


def _scan_rows(
    k: Kernel, out: Buf, x: Buf, outer: DimV, n: DimV, init: float | int, step: Step
) -> None:
    """Scan contiguous rows, carrying the running value in a register."""
    with k.loop(outer, parallel=True) as o:  # each o writes its own rows
        base = k.mul(o, n)

        def body(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            at = k.add(base, i)
            acc = _rounded(k, step(carried[0], k.load_flat(x, at)), x.elem)
            k.store_flat(out, at, acc)
            return [acc]

        k.fold_loop(n, [const(k.b, init, compute_type(x.elem))], body)


def _scan_sweep(k: Kernel, out: Buf, x: Buf, outer: DimV, n: DimV, inner: DimV, step: Step) -> None:
    """Copy the first row, then combine each row with the previous output row."""
    first = k.mul(k.min(n, 1), inner)  # nothing to copy when the axis is empty
    with k.loop(outer, parallel=True) as o:
        base = k.mul(o, k.mul(n, inner))
        with k.loop(first) as j:
            k.store_flat(out, k.add(base, j), k.load_flat(x, k.add(base, j)))
        with k.loop(n, lb=1) as i:
            row = k.add(base, k.mul(i, inner))
            prev = k.sub(row, inner)
            with k.loop(inner) as j:
                acc = step(k.load_flat(out, k.add(prev, j)), k.load_flat(x, k.add(row, j)))
                k.store_flat(out, k.add(row, j), acc)


def _better(kind: str) -> Callable[[Kernel, SSAValue, SSAValue, Attribute], SSAValue]:
    """i1: should `v` replace `best`? Strictly better, or the first NaN."""

    def better(k: Kernel, v: SSAValue, best: SSAValue, elem: Attribute) -> SSAValue:
        if not dtypes.is_float(elem):
            return compare(k.b, "gt" if kind == "max" else "lt", v, best, elem)
        # unordered-greater is also true when v is NaN; nothing replaces a NaN best
        beats = k.b.insert(arith.CmpfOp(v, best, "ugt" if kind == "max" else "ult")).result
        best_is_number = k.b.insert(arith.CmpfOp(best, best, "ord")).result
        return k.b.insert(arith.AndIOp(beats, best_is_number)).result

    return better


_EXTREMUM = {
    "max": by_type(arith.MaximumfOp, arith.MaxSIOp, arith.MaxUIOp),
    "min": by_type(arith.MinimumfOp, arith.MinSIOp, arith.MinUIOp),
}


def _arg_lowering(kind: str) -> Any:
    def lower(k: Kernel, out: Buf, x: Buf, *, axis: int) -> None:
        outer, n, inner = _split(k, x.dims, axis)
        vectors = arg_extremum.handles(x.elem)  # else a scalar loop (ints, float16)
        rows = (
            partial(arg_extremum.emit_rows, k, out, x, (outer, n), kind)
            if vectors
            else partial(_arg_rows, k, out, x, outer, n, kind)
        )
        strided = (
            partial(arg_extremum.emit_strided, k, out, x, (outer, n, inner), kind)
            if vectors
            else partial(_arg_strided, k, out, x, outer, n, inner, kind)
        )
        _by_layout(k, inner, rows, strided)

    return lower


def _arg_rows(k: Kernel, out: Buf, x: Buf, outer: DimV, n: DimV, kind: str) -> None:
    """Two vectorizable passes per contiguous row: the extremum (NaN propagates), then the
    smallest index holding it (or holding a NaN)."""
    extremum = _EXTREMUM[kind]
    elem = x.elem
    with k.loop(outer, parallel=True) as o:
        base = k.mul(o, n)

        def fold(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            return [extremum(k.b, [carried[0], k.load_flat(x, k.add(base, i))], [elem] * 2, elem)]

        best = k.fold_loop(n, [k.load_flat(x, base)], fold, lb=1)[0]
        none = k.index(n)

        def find(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            hit = _matches(k, k.load_flat(x, k.add(base, i)), best, elem)
            candidate = k.b.insert(arith.SelectOp(hit, i, none)).result
            return [k.b.insert(arith.MinUIOp(carried[0], candidate)).result]

        index = k.fold_loop(n, [none], find)[0]
        k.store_flat(out, o, k.b.insert(arith.IndexCastOp(index, i64)).result)


def _matches(k: Kernel, v: SSAValue, best: SSAValue, elem: Attribute) -> SSAValue:
    """i1: `v` equals `best`; a NaN `v` also matches, since `best` is NaN when any `v` is."""
    if not dtypes.is_float(elem):
        return compare(k.b, "eq", v, best, elem)
    equal = k.b.insert(arith.CmpfOp(v, best, "oeq")).result
    is_nan = k.b.insert(arith.CmpfOp(v, v, "uno")).result
    return k.b.insert(arith.OrIOp(equal, is_nan)).result


def _arg_strided(k: Kernel, out: Buf, x: Buf, outer: DimV, n: DimV, inner: DimV, kind: str) -> None:
    """For each (outer, inner) position, carry (best value, index) down the strided axis."""
    better = _better(kind)
    with k.loop(outer, parallel=True) as o, k.loop(inner, parallel=True) as j:
        base = k.add(k.mul(o, k.mul(n, inner)), j)

        def body(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
            v = k.load_flat(x, k.add(base, k.mul(i, inner)))
            take = better(k, v, carried[0], x.elem)
            return [
                k.b.insert(arith.SelectOp(take, v, carried[0])).result,
                k.b.insert(arith.SelectOp(take, i, carried[1])).result,
            ]

        _, index = k.fold_loop(n, [k.load_flat(x, base), k.index(0)], body, lb=1)
        k.store_flat(
            out, k.add(k.mul(o, inner), j), k.b.insert(arith.IndexCastOp(index, i64)).result
        )


def _reverse(t: Any, axis: int) -> Any:
    from aotk.dialect import gradlib as lib
    from aotk.dialect.shape import SliceOp, reversal

    return lib.emit(SliceOp, t, **reversal(t.ndim, (axis,)))


def _grad_cumsum(g: Any, y: Any, x: Any, *, axis: int, **attrs: Any) -> tuple[Any, ...]:
    """The adjoint of a running sum is a running sum from the other end."""
    from aotk.dialect import gradlib as lib

    return (_reverse(lib.emit(CumSumOp, _reverse(g, axis), axis=axis, **attrs), axis),)


def _grad_cumprod(g: Any, y: Any, x: Any, **attrs: Any) -> tuple[Any, ...]:
    # d/dx_j of sum_i g_i prod_{k<=i} x_k = revcumsum(g * y)_j / x_j (exact for nonzero x)
    from aotk.dialect import gradlib as lib

    return (lib.div(_grad_cumsum(lib.mul(g, y), y, x, **attrs)[0], x),)


for _cls, _kind, _fn, _grad in [
    (CumSumOp, "sum", np.cumsum, _grad_cumsum),
    (CumProdOp, "prod", np.cumprod, _grad_cumprod),
]:
    register(
        OpDef(
            ir=_cls,
            kind=Kind.OPAQUE,
            infer=infer_scan,
            numpy=_np_scan(_fn),
            lower=_scan_lowering(_kind),
            grad=_grad,
            shape=scan_shape,
        )
    )

for _cls, _kind, _fn in [(ArgMaxOp, "max", np.argmax), (ArgMinOp, "min", np.argmin)]:
    register(
        OpDef(
            ir=_cls,
            kind=Kind.REDUCTION,
            infer=infer_arg,
            numpy=_np_arg(_fn),
            lower=_arg_lowering(_kind),
            grad=lambda g, y, x, **_: (None,),
            shape=arg_shape,
        )
    )

__all__ = ["ArgMaxOp", "ArgMinOp", "CumProdOp", "CumSumOp"]
