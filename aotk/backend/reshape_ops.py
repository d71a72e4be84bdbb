"""`K.reshape`, whose dims may be known only at run time (`K.shape(x)[i]`, or another
tensor's `K.shape(y)[i]`, as Keras's Reshape and TimeDistributed layers pass them).

By what the trace knows, cheapest first: one unknown dim is a plain `aotk.reshape` (its -1
a division); several, each a product of x's own dims, an `aotk.view`; anything else an
`aotk.reshape_dims`, which reads the dims it names at run time and is checked at the call.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from xdsl.ir import SSAValue

from aotk.backend.static_eval import dim_of, static_int, static_ints
from aotk.backend.tensors import as_tensor
from aotk.dialect import data, trace
from aotk.dialect import shape as sh
from aotk.dialect.trace import KTensor
from aotk.dialect.views import ReshapeDimsOp


class _Taken(NamedTuple):
    """A dim known at run time: the size of `source`'s `axis`."""

    source: SSAValue
    axis: int


Dims = list[int | _Taken]  # an int, -1 to infer, or a dim taken at run time


def reshape(x: Any, shape: Any) -> KTensor:
    """Same elements, new shape; one dim may be -1 (or None).

    Dims may be scalar tensors, as Keras's Reshape layer passes `K.shape(x)[0]`: one known
    while tracing counts as its int, `K.shape(y)[i]` of a dynamic axis is that axis's size
    at run time (of x, or of another tensor)."""
    t = as_tensor(x, where="K.reshape")
    if isinstance(shape, int):
        shape = (shape,)
    if isinstance(shape, KTensor):
        known = static_ints(shape)
        if known is None or None in known:
            raise TypeError(
                "K.reshape: the shape must be ints, scalar tensors, or a tensor known while "
                f"tracing; got {shape!r}; pass a tuple with -1 for the unknown dim"
            )
        shape = known
    dims: Dims = [_reshape_dim(t, d) for d in shape]
    if sum(1 for d in dims if d == -1) > 1:
        raise ValueError(f"K.reshape: shape {_fmt(t, dims)} has more than one -1")
    own = {d.axis for d in dims if isinstance(d, _Taken) and d.source is t.value}
    foreign = any(isinstance(d, _Taken) and d.source is not t.value for d in dims)
    if not foreign and own and -1 in dims and own == _dynamic_axes(t):  # the -1 is static
        dims[dims.index(-1)] = _static_rest(t, dims)
    unknown = sum(1 for d in dims if d == -1 or isinstance(d, _Taken))
    if not foreign and unknown <= 1 and (-1 in dims or own == _dynamic_axes(t)):
        if own and -1 not in dims:
            _check_static_fit(t, dims)
        final = tuple(-1 if isinstance(d, _Taken) else d for d in dims)
        return trace.emit(sh.ReshapeOp, t, where="K.reshape", shape=final)
    if not foreign and _is_view(t, dims):
        return _view(t, dims)
    return _reshape_dims(t, dims)


def drop_axis(t: KTensor, axis: int) -> KTensor:
    """x without `axis`, of a size unknown while tracing: the call checks it is 1."""
    dims: Dims = [_Taken(t.value, a) if d is None else d for a, d in enumerate(t.shape)]
    del dims[axis]
    if not any(isinstance(d, _Taken) for d in dims):  # a static shape: the call checks it
        return trace.emit(sh.ReshapeOp, t, where="K.squeeze", shape=tuple(dims))
    return _reshape_dims(t, dims, "K.squeeze")  # not a -1, which would take the axis in


def _reshape_dim(t: KTensor, d: Any) -> int | _Taken:
    """An int (-1: infer), or the run-time size of a dynamic axis."""
    if d is None:
        return -1
    if not isinstance(d, KTensor):
        return int(d)
    known = static_int(d)
    if known is not None:
        return known
    origin = dim_of(d)
    if origin is None:
        raise TypeError(
            f"K.reshape: a dim must be an int or a tensor's dim read by K.shape, got {d!r}"
        )
    return _Taken(origin[0], origin[1])


def _dynamic_axes(t: KTensor) -> set[int]:
    return {a for a, d in enumerate(t.shape) if d is None}


def _static_rows(t: KTensor, dims: Dims) -> tuple[int, int]:
    """x's static elements, and the product of the shape's static dims."""
    total = math.prod(d for d in t.shape if d is not None)
    return total, math.prod(d for d in dims if isinstance(d, int) and d != -1)


def _static_rest(t: KTensor, dims: Dims) -> int:
    """What x's static dims leave for the -1 once the shape's static dims are taken."""
    total, known = _static_rows(t, dims)
    if known == 0 or total % known:
        raise ValueError(
            f"K.reshape: x {t.shape} does not fit shape {_fmt(t, dims)}: the static dims of x "
            f"({total} elements a row) do not divide by the shape's ({known})"
        )
    return total // known


def _check_static_fit(t: KTensor, dims: Dims) -> None:
    """With no -1, and x's dynamic axes taken one for one, the static dims must agree."""
    total, known = _static_rows(t, dims)
    if total != known:
        raise ValueError(
            f"K.reshape: x {t.shape} does not fit shape {_fmt(t, dims)}: the static dims of x "
            f"hold {total} elements a row, the shape's {known}"
        )


def _is_view(t: KTensor, dims: Dims) -> bool:
    """Whether each dim is a product of x's dims: each of x's dynamic axes taken once,
    or left to the -1, whose static factor is then whole."""
    taken = [d.axis for d in dims if isinstance(d, _Taken)]
    left = _dynamic_axes(t) - set(taken)
    total, known = _static_rows(t, dims)
    if len(set(taken)) != len(taken) or (left and -1 not in dims):
        return False
    return known != 0 and total % known == 0 if -1 in dims else total == known


def _view(t: KTensor, dims: Dims) -> KTensor:
    """An `aotk.view`: a taken dim is its axis, the -1 the other dynamic axes of x times
    the static size left."""
    result_dim = {d.axis: i for i, d in enumerate(dims) if isinstance(d, _Taken)}
    free = dims.index(-1) if -1 in dims else -1
    sources = [result_dim.get(a, free if size is None else -1) for a, size in enumerate(t.shape)]
    factors = [d if isinstance(d, int) and d != -1 else 1 for d in dims]
    if free >= 0:
        factors[free] = _static_rest(t, dims)
    return trace.emit(
        data.ViewOp, t, where="K.reshape", factors=tuple(factors), sources=tuple(sources)
    )


def _reshape_dims(t: KTensor, dims: Dims, where: str = "K.reshape") -> KTensor:
    """An `aotk.reshape_dims` reading the taken dims at run time."""
    donors: list[SSAValue] = [t.value]
    taken: list[int] = []
    for d in dims:
        if isinstance(d, _Taken):
            if d.source not in donors:
                donors.append(d.source)
            taken += [donors.index(d.source), d.axis]
    shape = tuple(-2 if isinstance(d, _Taken) else d for d in dims)
    return trace.emit(
        ReshapeDimsOp,
        *(KTensor(v) for v in donors),
        where=where,
        shape=shape,
        taken=tuple(taken),
    )


def _fmt(t: KTensor, dims: Dims) -> str:
    """A reshape target as written: K.shape(x)[i] for a dim of x taken at run time."""
    shown = [
        str(d) if not isinstance(d, _Taken) else f"K.shape({_name(t, d.source)})[{d.axis}]"
        for d in dims
    ]
    return "(" + ", ".join(shown) + ")"


def _name(t: KTensor, source: SSAValue) -> str:
    return "x" if source is t.value else source.name_hint or "y"


__all__ = ["drop_axis", "reshape"]
