"""Values known while tracing: constants, static dims, and small arithmetic on them.

Keras builds shapes out of tensors (`K.shape(x)[1] * 2`, a stack of such scalars) and
hands them to functions whose results must have static dims (a transposed convolution's
`output_shape`, `K.tile`'s reps, `K.arange`'s bounds). `known_entries` evaluates such a
small tensor with the ops' NumPy rules, tracking which entries depend only on constants
and static dims; entries that depend on run-time data (a dynamic batch) stay unknown.
"""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np
from xdsl.ir import BlockArgument, Operation, SSAValue

from aotk.dialect import data as dg
from aotk.dialect import elementwise as ew
from aotk.dialect import gather as ga
from aotk.dialect import reduce as rd
from aotk.dialect import shape as sh
from aotk.dialect import shape_query as sq
from aotk.dialect import trace
from aotk.dialect.base import AotkOp, shape_of
from aotk.dialect.registry import Kind, lookup
from aotk.dialect.trace import KTensor

MAX_ELEMENTS = 4096  # larger values are never folded: tracing must stay cheap
Folded = tuple[np.ndarray, np.ndarray] | None  # (values, known mask), or nothing known

# ops that move elements without computing: the known mask moves the same way
_MOVERS = (sh.ReshapeOp, sh.TransposeOp, sh.ConcatOp, sh.SliceOp, dg.ViewOp, dg.BroadcastToOp)
# ops whose NumPy rule gives compiled code's value bit for bit
_EXACT = (ew.ConstantOp, sq.ShapeOfOp, *_MOVERS)


def known_entries(x: Any) -> Folded:
    """(values, mask of the entries known while tracing) of a small tensor, or None."""
    if not isinstance(x, KTensor):
        return None
    return _fold(x.value, {})


def static_value(x: Any) -> np.ndarray | None:
    """The value of `x` when all of it is known while tracing, else None."""
    folded = known_entries(x)
    if folded is None or not folded[1].all():
        return None
    return folded[0]


def static_ints(x: Any) -> list[int | None] | None:
    """A rank-0 or rank-1 integer tensor's entries as ints (None where unknown)."""
    folded = known_entries(x)
    if folded is None or folded[0].ndim > 1 or folded[0].dtype.kind not in "iu":
        return None
    values, mask = (a.reshape(-1) for a in folded)
    return [int(v) if k else None for v, k in zip(values, mask, strict=True)]


def moved_constants(x: Any) -> np.ndarray | None:
    """A copy of `x`'s value when it is only constants moved about (concatenated,
    reshaped, sliced, broadcast): then NumPy gives compiled code's value bit for bit, and
    `K.eval` needs no compile. Keras's zeros and ones initializers of a metric's scalar
    state, or an LSTM's `unit_forget_bias` (a concat of three constants), are such."""
    folded = _fold(x.value, {}, exact=True) if isinstance(x, KTensor) else None
    if folded is None or not folded[1].all():
        return None
    return np.array(folded[0], copy=True)


def static_int(x: Any) -> int | None:
    """A scalar integer tensor's value when known while tracing, else None."""
    known = static_ints(x) if isinstance(x, KTensor) and x.ndim == 0 else None
    return known[0] if known else None


def _fold(v: SSAValue, memo: dict[SSAValue, Folded], exact: bool = False) -> Folded:
    """`exact`: fold only ops whose NumPy rule is compiled code's value bit for bit."""
    if v not in memo:
        memo[v] = _fold_value(v, memo, exact)
    return memo[v]


def _fold_value(v: SSAValue, memo: dict[SSAValue, Folded], exact: bool) -> Folded:
    shape = shape_of(v.type)
    if None in shape or math.prod(d or 0 for d in shape) > MAX_ELEMENTS:
        return None
    if isinstance(v, BlockArgument):
        return _captured_constant(v)
    op = v.owner
    if not isinstance(op, AotkOp) or op.regions or (exact and not isinstance(op, _EXACT)):
        return None
    if isinstance(op, sq.ShapeOfOp):
        dims = shape_of(op.x.type)
        mask = np.array([d is not None for d in dims], dtype=bool)
        return np.array([d or 0 for d in dims], dtype=np.int32), mask
    operands = [_fold(u, memo, exact) for u in op.operands]
    if any(f is None for f in operands):
        return None
    return _apply(op, operands)  # type: ignore[arg-type]


def _captured_constant(arg: BlockArgument) -> Folded:
    from aotk.backend.tensors import KConstant

    owner = trace.graph().captures.get(arg)
    if not isinstance(owner, KConstant):
        return None
    return owner.storage, np.ones(owner.storage.shape, dtype=bool)


def _apply(op: AotkOp, operands: list[tuple[np.ndarray, np.ndarray]]) -> Folded:
    opdef = lookup(op)
    values = [f[0] for f in operands]
    masks = [f[1] for f in operands]
    if not _pure(op):
        return None
    with np.errstate(all="ignore"):
        out = np.asarray(opdef.numpy(*values, **op.attrs()))
    if opdef.kind is Kind.ELEMENTWISE:
        mask = np.broadcast_to(functools.reduce(np.logical_and, masks, True), out.shape)
    elif isinstance(op, _MOVERS):  # move a 0/1 copy of the masks as the values move
        flags = [m.astype(v.dtype) for m, v in zip(masks, values, strict=True)]
        mask = np.asarray(opdef.numpy(*flags, **op.attrs())) != 0
    elif all(m.all() for m in masks):
        mask = np.ones(out.shape, dtype=bool)
    else:
        return None
    return out, np.array(mask, dtype=bool)


def _pure(op: Operation) -> bool:
    """Ops whose NumPy rule is a function of their operands alone (no random state)."""
    return bool(op.operands) or isinstance(op, ew.ConstantOp | ga.IotaOp)


def dim_of(x: Any) -> tuple[SSAValue, int] | None:
    """(tensor, axis) when scalar `x` is `K.shape(tensor)[axis]` (maybe cast), else None."""
    if not isinstance(x, KTensor) or x.ndim != 0:
        return None
    v: SSAValue = x.value
    while isinstance(v.owner, sh.ReshapeOp | dg.ViewOp | ew.CastOp):
        v = v.owner.operands[0]
    op = v.owner
    if not isinstance(op, sh.SliceOp) or len(shape_of(v.type)) != 1 or shape_of(v.type)[0] != 1:
        return None
    source = op.operands[0].owner
    if not isinstance(source, sq.ShapeOfOp):
        return None
    axis = op.attrs()["start"][0]
    rank = len(shape_of(source.x.type))
    return (source.x, axis % rank) if -rank <= axis < rank else None


class DimProduct(NamedTuple):
    """A count known at run time: the product of dims `axes` of `source`."""

    source: SSAValue
    axes: tuple[int, ...]


def entry_dims(x: KTensor) -> list[int | DimProduct | None] | None:
    """The entries of a rank-1 int tensor: an int where known while tracing, else a
    `DimProduct` where one is (`K.shape(y)[i]`, `K.size(y)`, stacked and cast), else None."""
    shape = shape_of(x.value.type)
    if len(shape) != 1 or shape[0] is None or shape[0] > MAX_ELEMENTS:
        return None
    known = static_ints(x) or [None] * shape[0]
    return [k if k is not None else _entry(x.value, i) for i, k in enumerate(known)]


def _entry(v: SSAValue, i: int) -> int | DimProduct | None:
    """Entry i of `v` (rank 0 or 1): an int, or a product of dims, when it is one."""
    if not shape_of(v.type):
        if (known := static_int(KTensor(v))) is not None:
            return known
        if (found := dim_of(KTensor(v))) is not None:
            return DimProduct(found[0], (found[1],))
    op = v.owner
    if isinstance(op, ew.CastOp | sh.ReshapeOp | dg.ViewOp):
        return _entry(op.operands[0], i)
    if isinstance(op, sh.ConcatOp):
        for part in op.operands:
            size = shape_of(part.type)[0] if shape_of(part.type) else 1
            if size is None:
                return None
            if i < size:
                return _entry(part, i)
            i -= size
        return None
    if isinstance(op, sq.ShapeOfOp):
        return DimProduct(op.x, (i,))
    if isinstance(op, rd.ReduceProdOp) and isinstance(op.operands[0].owner, sq.ShapeOfOp):
        source = op.operands[0].owner.x
        return DimProduct(source, tuple(range(len(shape_of(source.type)))))
    return None
