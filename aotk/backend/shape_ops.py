"""dot, reshapes, permutations, concatenation, bias_add and `x[...]` slicing."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from aotk.backend.config import check_data_format
from aotk.backend.math_ops import add
from aotk.backend.reshape_ops import drop_axis, reshape
from aotk.backend.sparse import KSparseTensor, concatenate_sparse, densify
from aotk.backend.static_eval import static_int
from aotk.backend.tensors import as_tensor
from aotk.dialect import data, gather, linalg, trace
from aotk.dialect import shape as sh
from aotk.dialect.base import normalize_axis
from aotk.dialect.trace import KTensor


def _axis(axis: int, rank: int, where: str) -> int:
    try:
        return normalize_axis(axis, rank)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}: {err}") from None


def dot(x: Any, y: Any) -> KTensor:
    """Matrix product; nD x nD follows Theano: contract x's last axis with y's second-to-last.
    A sparse operand is made dense first."""
    x, y = (densify(v, "K.dot") if isinstance(v, KSparseTensor) else v for v in (x, y))
    a, b = as_tensor(x, where="K.dot"), as_tensor(y, where="K.dot")
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(
            f"K.dot: expected tensors of rank >= 1, got shapes {a.shape} and {b.shape}"
        )
    if b.ndim == 1:
        out = trace.emit(
            linalg.MatMulOp,
            a,
            reshape(b, (b.shape[0] if b.shape[0] is not None else -1, 1)),
            where="K.dot",
        )
        return regroup(out, [(i,) for i in range(a.ndim - 1)], "K.dot")
    if b.ndim == 2:
        return trace.emit(linalg.MatMulOp, a, b, where="K.dot")
    # y (..., K, N) -> (K, ... * N): the contracted axis first, every other axis flattened after it
    perm = (b.ndim - 2, *range(b.ndim - 2), b.ndim - 1)
    if None in b.shape:
        raise ValueError(
            f"K.dot: the right operand of an nD dot needs a static shape, got {b.shape}"
        )
    flat_b = reshape(permute_dimensions(b, perm), (b.shape[-2], -1))
    out = trace.emit(linalg.MatMulOp, a, flat_b, where="K.dot")
    static_b = [int(d) for d in b.shape if d is not None]  # all of them, checked above
    return regroup(out, [*((i,) for i in range(a.ndim - 1)), *static_b[:-2], static_b[-1]], "K.dot")


def regroup(x: KTensor, spec: Sequence[int | Sequence[int]], where: str) -> KTensor:
    """A free reshape: each result dim is a static size or the product of some of x's axes
    (axes left out must be static). One dynamic result dim at most is a plain reshape;
    more need `aotk.view`, which can keep several dynamic dims."""
    dims: list[int | None] = []
    for entry in spec:
        if isinstance(entry, int):
            dims.append(entry)
            continue
        sizes = [x.shape[a] for a in entry]
        dims.append(None if None in sizes else math.prod(sizes))  # type: ignore[arg-type]
    # a plain reshape infers its one dynamic dim by a division, so no static dim may be 0
    if sum(1 for d in dims if d is None) <= 1 and 0 not in dims:
        return trace.emit(sh.ReshapeOp, x, where=where, shape=_known(dims))
    return trace.emit(data.ViewOp, x, where=where, **data.view_attrs(spec, x.ndim))


def _known(shape: Sequence[int | None]) -> tuple[int, ...]:
    """A reshape target: at most one unknown dim, written -1."""
    if sum(1 for d in shape if d is None) > 1:
        raise ValueError(f"cannot express shape {tuple(shape)} with one inferred dim")
    return tuple(-1 if d is None else d for d in shape)


def transpose(x: Any) -> KTensor:
    """Reverse the axes."""
    t = as_tensor(x, where="K.transpose")
    return permute_dimensions(t, tuple(reversed(range(t.ndim))))


def permute_dimensions(x: Any, pattern: Sequence[int]) -> KTensor:
    """Reorder the axes: result axis i is x's axis pattern[i]."""
    t = as_tensor(x, where="K.permute_dimensions")
    return trace.emit(
        sh.TransposeOp, t, where="K.permute_dimensions", perm=tuple(int(p) for p in pattern)
    )


def batch_flatten(x: Any) -> KTensor:
    """(batch, ...) -> (batch, prod(...))."""
    t = as_tensor(x, where="K.batch_flatten")
    if t.ndim == 0:
        raise ValueError("K.batch_flatten: expected a tensor of rank >= 1, got a scalar")
    return regroup(t, [(0,), tuple(range(1, t.ndim))], "K.batch_flatten")


def flatten(x: Any) -> KTensor:
    """Flatten to one dim."""
    return reshape(as_tensor(x, where="K.flatten"), (-1,))


def expand_dims(x: Any, axis: int = -1) -> KTensor:
    """Insert a size-1 axis at `axis`."""
    t = as_tensor(x, where="K.expand_dims")
    pos = _axis(axis, t.ndim + 1, "K.expand_dims")
    spec: list[int | tuple[int, ...]] = [(i,) for i in range(t.ndim)]
    spec.insert(pos, 1)
    return regroup(t, spec, "K.expand_dims")


def squeeze(x: Any, axis: int) -> KTensor:
    """Remove the size-1 axis `axis` (one unknown while tracing is checked at the call,
    as Keras's sparse_categorical_accuracy squeezes targets of shape (None, None))."""
    t = as_tensor(x, where="K.squeeze")
    if t.ndim == 0:
        raise ValueError("K.squeeze: x is a scalar, it has no axis to remove")
    pos = _axis(axis, t.ndim, "K.squeeze")
    if t.shape[pos] is None:
        return drop_axis(t, pos)
    if t.shape[pos] != 1:
        raise ValueError(
            f"K.squeeze: axis {axis} of shape {t.shape} has size {t.shape[pos]}, not 1"
        )
    return regroup(t, [(i,) for i in range(t.ndim) if i != pos], "K.squeeze")


def concatenate(tensors: Sequence[Any], axis: int = -1) -> KTensor:
    """Join tensors along `axis`; sparse tensors give a sparse tensor."""
    if tensors and all(isinstance(t, KSparseTensor) for t in tensors):
        pos = _axis(axis, tensors[0].ndim, "K.concatenate")
        return concatenate_sparse(list(tensors), pos, "K.concatenate")  # type: ignore[return-value]
    ts = [as_tensor(t, where="K.concatenate") for t in tensors]
    if not ts:
        raise ValueError("K.concatenate: needs at least one tensor")
    pos = _axis(axis, ts[0].ndim, "K.concatenate")
    if len(ts) == 1:
        return ts[0]
    return trace.emit(sh.ConcatOp, *ts, where="K.concatenate", axis=pos)


def bias_add(x: Any, bias: Any, data_format: str | None = None) -> KTensor:
    """Add a bias vector (or a tensor of rank ndim(x) - 1) along the channels axis."""
    fmt = check_data_format(data_format, "K.bias_add")
    t, b = as_tensor(x, where="K.bias_add"), as_tensor(bias, where="K.bias_add")
    if t.ndim == 0:
        raise ValueError("K.bias_add: x is a scalar, it has no channels axis")
    if b.ndim != 1 and b.ndim != t.ndim - 1:
        raise ValueError(
            f"K.bias_add: bias must be a vector or of rank {t.ndim - 1}, "
            f"got shape {b.shape} for x of shape {t.shape}"
        )
    channels = t.shape[1] if fmt == "channels_first" and t.ndim > 1 else t.shape[-1]
    if b.ndim == 1 and None not in (channels, b.shape[0]) and channels != b.shape[0]:
        raise ValueError(
            f"K.bias_add: bias of shape {b.shape} does not match "
            f"{channels} channels of x {t.shape} ({fmt})"
        )
    if fmt == "channels_first" and t.ndim > 2:
        if b.ndim > 1:
            # the reference reshapes (it does not transpose) the bias to (channels, *spatial)
            b = reshape(b, _known((b.shape[-1], *b.shape[:-1])))
        b = reshape(b, _known((*b.shape, *([1] * (t.ndim - b.ndim - 1)))))
    return add(t, b)


def getitem(x: KTensor, key: Any) -> KTensor:
    """`x[key]` with ints, slices (steps, negatives) and Ellipsis."""
    keys = key if isinstance(key, tuple) else (key,)
    if sum(1 for k in keys if k is Ellipsis) > 1:
        raise IndexError("K: an index can have at most one Ellipsis")
    if Ellipsis in keys:
        i = keys.index(Ellipsis)
        keys = keys[:i] + (slice(None),) * (x.ndim - len(keys) + 1) + keys[i + 1 :]
    if len(keys) > x.ndim:
        raise IndexError(f"K: too many indices ({len(keys)}) for a tensor of rank {x.ndim}")
    keys = keys + (slice(None),) * (x.ndim - len(keys))
    keys = tuple(_static_index(k) for k in keys)
    picks = {axis: k for axis, k in enumerate(keys) if isinstance(k, KTensor)}
    keys = tuple(slice(None) if isinstance(k, KTensor) else k for k in keys)
    start, stop, step, drop = [], [], [], []
    for axis, k in enumerate(keys):
        if isinstance(k, slice):
            s = 1 if k.step is None else int(k.step)
            start.append((0 if s > 0 else -1) if k.start is None else int(k.start))
            stop.append(
                sh.FULL
                if k.stop is None and s > 0
                else (sh.BEFORE if k.stop is None else int(k.stop))
            )
            step.append(s)
        elif isinstance(k, int):
            d = x.shape[axis]
            if d is not None and not -d <= k < d:
                raise IndexError(f"K: index {k} is out of bounds for axis {axis} of size {d}")
            start.append(k)
            stop.append(sh.FULL if k == -1 else k + 1)
            step.append(1)
            drop.append(axis)
        else:
            raise TypeError(f"K: unsupported index {k!r}; use ints, slices and Ellipsis")
    out = trace.emit(
        sh.SliceOp, x, where="K.slice", start=tuple(start), stop=tuple(stop), step=tuple(step)
    )
    if drop:
        out = regroup(out, [(i,) for i in range(out.ndim) if i not in drop], "K.slice")
    for axis in sorted(picks, reverse=True):  # later axes first: earlier positions hold
        at = axis - sum(1 for d in drop if d < axis)
        out = trace.emit(gather.GatherOp, out, picks[axis], where="K.slice", axis=at, batch_dims=0)
    return out


def _static_index(k: Any) -> Any:
    """An index that is a tensor: its int when known while tracing, else a scalar int tensor
    (which picks at run time; out of range gives zeros, as K.gather)."""
    if not isinstance(k, KTensor):
        return k
    if k.ndim != 0 or k.dtype not in ("int32", "int64"):
        raise TypeError(f"K: a tensor index must be an int32/int64 scalar, got {k!r}")
    known = static_int(k)
    return k if known is None else known


__all__ = [
    "batch_flatten",
    "bias_add",
    "concatenate",
    "dot",
    "expand_dims",
    "flatten",
    "permute_dimensions",
    "reshape",
    "squeeze",
    "transpose",
]
