"""Neural-network functions of the Keras API: activations, normalization, losses.

All are compositions of aotk primitives, which `aotk-fuse` merges into few kernels; round,
sin, cos, log1p and expm1 are the primitives of `aotk.dialect.unary`. Losses take
`(target, output)` as in Keras 2.2 and follow its TensorFlow backend: probabilities are
clipped to [epsilon, 1 - epsilon]; logits go through max-shifted, overflow-free formulas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from aotk import dtypes
from aotk.backend import math_ops as m
from aotk.backend.config import epsilon as _epsilon
from aotk.backend.config import floatx
from aotk.backend.shape_ops import reshape
from aotk.backend.tensors import as_tensor, cast, scalar
from aotk.dialect import reduce as rd
from aotk.dialect import trace
from aotk.dialect import unary as un
from aotk.dialect.base import Shape, broadcast_shapes, fmt_shape, normalize_axis
from aotk.dialect.trace import KTensor


def _floating(x: Any, where: str) -> KTensor:
    """`x` as a float tensor: ints and bools are cast to floatx, as Keras does."""
    t = as_tensor(x, where=where)
    return t if dtypes.is_float(dtypes.element_type(t.dtype)) else cast(t, floatx())


def _axis(axis: Any, rank: int, where: str, name: str = "axis") -> int:
    try:
        return normalize_axis(axis, rank, name)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}: {err}") from None


def _is_one(value: Any) -> bool:
    return isinstance(value, int | float) and value == 1


def elu(x: Any, alpha: float = 1.0) -> KTensor:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    t = _floating(x, "K.elu")
    neg = trace.emit(un.Expm1Op, t, where="K.elu")
    if not _is_one(alpha):
        neg = m.multiply(neg, alpha)
    return m.where(m.greater(t, 0.0), t, neg, "K.elu")


def softsign(x: Any) -> KTensor:
    """x / (1 + |x|)."""
    t = _floating(x, "K.softsign")
    return m.divide(t, m.add(m.abs(t), 1.0))


def hard_sigmoid(x: Any) -> KTensor:
    """clip(0.2 * x + 0.5, 0, 1)."""
    t = _floating(x, "K.hard_sigmoid")
    return m.clip(m.add(m.multiply(t, 0.2), 0.5), 0.0, 1.0)


def round(x: Any) -> KTensor:
    """Round to the nearest integer, ties to even; integer tensors are unchanged."""
    return trace.emit(un.RoundOp, as_tensor(x, where="K.round"), where="K.round")


def sin(x: Any) -> KTensor:
    """Elementwise sine; integer tensors are cast to floatx."""
    return trace.emit(un.SinOp, _floating(x, "K.sin"), where="K.sin")


def cos(x: Any) -> KTensor:
    """Elementwise cosine; integer tensors are cast to floatx."""
    return trace.emit(un.CosOp, _floating(x, "K.cos"), where="K.cos")


def l2_normalize(x: Any, axis: int | Iterable[int] | None = None) -> KTensor:
    """x / sqrt(sum(x**2, axis)); a zero slice gives NaN, as in the reference."""
    t = _floating(x, "K.l2_normalize")
    try:
        axes = rd.normalize_axes(
            axis if axis is None or isinstance(axis, int) else tuple(axis), t.ndim
        )
    except (ValueError, TypeError) as err:
        raise type(err)(f"K.l2_normalize: {err} (x: shape {fmt_shape(t.shape)})") from None
    norm = m.sum(m.square(t), axes, keepdims=True)
    return m.divide(t, trace.emit(un.SqrtOp, norm, where="K.l2_normalize"))


def _same_float(p: Any, like: KTensor, name: str, where: str) -> KTensor:
    """A parameter tensor of `like`'s dtype; numbers and arrays are converted."""
    t = as_tensor(p, like.dtype, where) if not isinstance(p, KTensor) else p
    if t.dtype != like.dtype:
        raise TypeError(f"{where}: {name} has dtype {t.dtype}, expected {like.dtype} like x")
    return t


def _check_broadcast(p: KTensor, x: KTensor, name: str, where: str) -> None:
    """`p` must broadcast to x's shape without changing it."""
    try:
        out = broadcast_shapes(p.shape, x.shape)
    except ValueError:
        out = None
    if (
        out is None
        or len(out) != x.ndim
        or any(o != d and d is not None for o, d in zip(out, x.shape, strict=True))
    ):
        raise ValueError(
            f"{where}: {name} of shape {fmt_shape(p.shape)} does not broadcast to x of shape "
            f"{fmt_shape(x.shape)}"
        )


def _along_axis(p: KTensor, x: KTensor, axis: int, name: str, where: str) -> KTensor:
    """A vector `p` of x.shape[axis] (or 1) elements, shaped to broadcast along `axis`."""
    size, want = p.shape[0], x.shape[axis]
    if size is not None and size != 1 and want is not None and size != want:
        raise ValueError(
            f"{where}: {name} has {size} elements, expected {want} (x.shape[{axis}] of x with "
            f"shape {fmt_shape(x.shape)})"
        )
    target = [1] * x.ndim
    target[axis] = -1 if size is None else size
    return reshape(p, tuple(target))


def _bn_param(p: Any, x: KTensor, axis: int, name: str, where: str) -> KTensor:
    """A batch-norm parameter: a vector along `axis`, or broadcast NumPy-style against x."""
    t = _same_float(p, x, name, where)
    if t.ndim == 1 and x.ndim > 1:
        return _along_axis(t, x, axis, name, where)
    _check_broadcast(t, x, name, where)
    return t


def _normalize(
    x: KTensor,
    moments: tuple[KTensor, KTensor],
    beta: KTensor | None,
    gamma: KTensor | None,
    eps: Any,
    where: str,
) -> KTensor:
    """(x - mean) / sqrt(var + eps) * gamma + beta, with the scale formed on the small side."""
    mean, var = moments
    scale = m.divide(1.0, trace.emit(un.SqrtOp, m.add(var, eps), where=where))
    if gamma is not None:
        scale = m.multiply(scale, gamma)
    out = m.multiply(m.subtract(x, mean), scale)
    return out if beta is None else m.add(out, beta)


def batch_normalization(
    x: Any,
    mean: Any,
    var: Any,
    beta: Any,
    gamma: Any,
    axis: int = -1,
    epsilon: float = 0.001,
) -> KTensor:
    """(x - mean) / sqrt(var + epsilon) * gamma + beta.

    A parameter is either a vector of x.shape[axis] elements (placed along `axis`, as in the
    reference's fused path) or a tensor that broadcasts against x (beta and gamma may be None).
    """
    where = "K.batch_normalization"
    t = _floating(x, where)
    ax = _axis(axis, t.ndim, where)
    mean_t, var_t = (_bn_param(p, t, ax, n, where) for p, n in ((mean, "mean"), (var, "var")))
    beta_t = None if beta is None else _bn_param(beta, t, ax, "beta", where)
    gamma_t = None if gamma is None else _bn_param(gamma, t, ax, "gamma", where)
    return _normalize(t, (mean_t, var_t), beta_t, gamma_t, epsilon, where)


def _reduction_axes(axes: Any, rank: int, where: str) -> tuple[int, ...]:
    if axes == "per-activation":  # Theano's name: statistics of each activation over the batch
        return (0,)
    if isinstance(axes, int | str) or not isinstance(axes, Iterable):
        raise TypeError(f"{where}: reduction_axes must be an iterable of ints, got {axes!r}")
    return tuple(sorted({_axis(a, rank, where, "reduction axis") for a in axes}))


def _drop_axes(t: KTensor, axes: tuple[int, ...]) -> KTensor:
    """Remove the size-1 `axes` of t."""
    kept = [d for i, d in enumerate(t.shape) if i not in axes]
    if sum(1 for d in kept if d is None) <= 1:
        return reshape(t, tuple(-1 if d is None else d for d in kept))
    return m.sum(t, axes)  # summing size-1 axes drops them when reshape cannot


def _size(shape: Sequence[int | None]) -> int | None:
    """The number of elements of a shape, None when a dim is dynamic."""
    return None if None in shape else math.prod(d for d in shape if d is not None)


def _moment_param(p: Any, x: KTensor, axes: tuple[int, ...], name: str, where: str) -> KTensor:
    """gamma or beta: broadcast as given when of x's rank, else shaped like the kept axes."""
    t = _same_float(p, x, name, where)
    if t.ndim == x.ndim:
        _check_broadcast(t, x, name, where)
        return t
    kept = [i for i in range(x.ndim) if i not in axes]
    if len(kept) == 1 and t.ndim == 1:
        return _along_axis(t, x, kept[0], name, where)
    want = _size([x.shape[i] for i in kept])
    if want is None or want != _size(t.shape):
        raise ValueError(
            f"{where}: {name} of shape {fmt_shape(t.shape)} does not match the kept axes "
            f"{tuple(kept)} of x with shape {fmt_shape(x.shape)}"
        )
    return reshape(t, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))


def normalize_batch_in_training(
    x: Any, gamma: Any, beta: Any, reduction_axes: Any, epsilon: float = 0.001
) -> tuple[KTensor, KTensor, KTensor]:
    """Normalize x by its mean and (biased) variance over `reduction_axes`.

    Returns (normalized, mean, variance); mean and variance drop the reduced axes.
    """
    where = "K.normalize_batch_in_training"
    t = _floating(x, where)
    axes = _reduction_axes(reduction_axes, t.ndim, where)
    mean = m.mean(t, axes, keepdims=True)
    var = m.mean(m.square(m.subtract(t, mean)), axes, keepdims=True)
    beta_t = None if beta is None else _moment_param(beta, t, axes, "beta", where)
    gamma_t = None if gamma is None else _moment_param(gamma, t, axes, "gamma", where)
    normed = _normalize(t, (mean, var), beta_t, gamma_t, epsilon, where)
    return normed, _drop_axes(mean, axes), _drop_axes(var, axes)


def _class_axis(axis: Any, output: KTensor, where: str) -> int:
    """Keras accepts -1 or a non-negative axis of output."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{where}: axis must be an int, got {axis!r}")
    if axis != -1 and axis not in range(output.ndim):
        raise ValueError(
            f"{where}: unexpected channels axis {axis}; expected -1 or one of the axes of "
            f"output, which has {output.ndim} dimensions"
        )
    if output.ndim == 0:
        raise ValueError(f"{where}: output must have a class axis, got a scalar")
    return axis % output.ndim


def _target_like(target: Any, output: KTensor, where: str) -> KTensor:
    """The target in output's dtype."""
    t = as_tensor(target, output.dtype, where)
    return t if t.dtype == output.dtype else cast(t, output.dtype)


def _log_softmax(z: KTensor, axis: int) -> KTensor:
    shifted = m.subtract(z, m.max(z, axis, keepdims=True))
    return m.subtract(shifted, m.log(m.sum(m.exp(shifted), axis, keepdims=True)))


def categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1
) -> KTensor:
    """-sum(target * log(softmax probabilities), axis); probabilities are renormalized and
    clipped to [epsilon, 1 - epsilon] unless `from_logits`."""
    where = "K.categorical_crossentropy"
    out = _floating(output, where)
    ax = _class_axis(axis, out, where)
    tgt = _target_like(target, out, where)
    try:
        broadcast_shapes(tgt.shape, out.shape)
    except ValueError:
        raise ValueError(
            f"{where}: target of shape {fmt_shape(tgt.shape)} does not match output of shape "
            f"{fmt_shape(out.shape)}"
        ) from None
    if from_logits:
        log_p = _log_softmax(out, ax)
    else:
        eps = _epsilon()
        p = m.divide(out, m.sum(out, ax, keepdims=True))
        log_p = m.log(m.clip(p, eps, 1.0 - eps))
    return m.negative(m.sum(m.multiply(tgt, log_p), ax))


def _compatible(a: Shape, b: Shape) -> bool:
    return len(a) == len(b) and all(
        x is None or y is None or x == y for x, y in zip(a, b, strict=True)
    )


def _sparse_labels(target: Any, out: KTensor, ax: int, where: str) -> KTensor:
    """Integer labels shaped like output with a class axis of size 1."""
    t = as_tensor(target, "int32", where)
    if t.dtype not in ("int32", "int64"):
        t = cast(t, "int32")  # floats truncate, as Keras' cast to int64 does
    want = tuple(1 if i == ax else d for i, d in enumerate(out.shape))
    kept = tuple(d for i, d in enumerate(out.shape) if i != ax)
    if _compatible(t.shape, kept):
        dims = [*t.shape[:ax], 1, *t.shape[ax:]]
        if sum(1 for d in dims if d is None) > 1:
            raise ValueError(
                f"{where}: target of shape {fmt_shape(t.shape)} has more than one dynamic dim; "
                f"give it the class axis {ax} of size 1, shape {fmt_shape(want)}"
            )
        t = reshape(t, tuple(-1 if d is None else d for d in dims))
    if not _compatible(t.shape, want):
        raise ValueError(
            f"{where}: target of shape {fmt_shape(t.shape)} does not match output of shape "
            f"{fmt_shape(out.shape)}: expected {fmt_shape(kept)} or {fmt_shape(want)}"
        )
    return t


def sparse_categorical_crossentropy(
    target: Any, output: Any, from_logits: bool = False, axis: int = -1
) -> KTensor:
    """Categorical crossentropy with integer class labels; probabilities are clipped to
    [epsilon, 1 - epsilon] unless `from_logits`. Labels outside [0, classes) give NaN: a
    compiled kernel cannot raise."""
    where = "K.sparse_categorical_crossentropy"
    out = _floating(output, where)
    ax = _class_axis(axis, out, where)
    classes = out.shape[ax]
    if classes is None:
        raise ValueError(
            f"{where}: the class axis {ax} of output must have a static size, "
            f"got shape {fmt_shape(out.shape)}"
        )
    labels = _sparse_labels(target, out, ax, where)
    if not from_logits:
        eps = _epsilon()
        out = m.log(m.clip(out, eps, 1.0 - eps))
    ids = np.arange(classes, dtype=labels.dtype).reshape(
        [classes if i == ax else 1 for i in range(out.ndim)]
    )
    zero = scalar(0.0, out.dtype)
    in_range = m.where(m.less(labels, classes), zero, np.nan, where)
    missed = m.where(m.greater_equal(labels, 0), in_range, np.nan, where)
    hit = m.equal(labels, as_tensor(ids, where=where))
    return m.negative(m.sum(m.where(hit, _log_softmax(out, ax), missed, where), ax))


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> KTensor:
    """Elementwise sigmoid crossentropy; probabilities are clipped to [epsilon, 1 - epsilon]
    and turned back into logits unless `from_logits`."""
    where = "K.binary_crossentropy"
    out = _floating(output, where)
    tgt = _target_like(target, out, where)
    if not _compatible(tgt.shape, out.shape):
        raise ValueError(
            f"{where}: target of shape {fmt_shape(tgt.shape)} must have the shape of output, "
            f"{fmt_shape(out.shape)}"
        )
    z = out
    if not from_logits:
        eps = _epsilon()
        p = m.clip(out, eps, 1.0 - eps)
        z = m.log(m.divide(p, m.subtract(1.0, p)))
    soft = trace.emit(un.Log1pOp, m.exp(m.negative(m.abs(z))), where=where)
    return m.add(m.subtract(m.maximum(z, 0.0), m.multiply(z, tgt)), soft)


__all__ = [
    "batch_normalization",
    "binary_crossentropy",
    "categorical_crossentropy",
    "cos",
    "elu",
    "hard_sigmoid",
    "l2_normalize",
    "normalize_batch_in_training",
    "round",
    "sin",
    "softsign",
    "sparse_categorical_crossentropy",
]
