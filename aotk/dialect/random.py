"""Counter-based random numbers generated inside compiled code.

`aotk.random_uniform` and `aotk.random_normal` read a `state` operand, the int64 pair
(seed, calls), and add one to `calls` every time they run: they have an effect, so they are
not Pure, and CSE never merges two of them. Samples come from Philox-4x32-10 with key = seed
and counter = (block index, calls); block i holds elements [i*m, (i+1)*m) (m = 4, or 2 for
float64), so the numbers depend on the state and the element index only: not on loop
order, threads or the process. Truncated normals re-draw each value beyond two standard
deviations from block (attempt * blocks + i), attempt = 1, 2, ... as TF does.

Result dims come from `shape`, except where `like_axes[i] >= 0`: that dim of the optional
`like` operand, read at run time. The NumPy oracle is `aotk.dialect.random_numpy`. Each op
lowers to one call of a micro-kernel (`aotk.kernels.random_kernels`) that samples and
advances the state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects.builtin import (
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    TensorType,
    i64,
)
from xdsl.ir import Attribute
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def

from aotk import dtypes
from aotk.dialect import random_numpy
from aotk.dialect.base import (
    AotkOp,
    ElementTypeAttr,
    dtype_of,
    elem_of,
    fmt_shape,
    shape_of,
    tensor,
)
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import library, random_kernels
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, Kernel

FLOATS = ("float16", "float32", "float64")


class RandomOpBase(AotkOp):
    """Random samples of `dtype`; reads and advances the (seed, calls) `state`."""

    state = operand_def(TensorType)
    like = var_operand_def(TensorType)
    result = result_def(TensorType)
    dtype = prop_def(ElementTypeAttr)
    shape = prop_def(DenseArrayBase)
    like_axes = prop_def(DenseArrayBase)


@irdl_op_definition
class RandomUniformOp(RandomOpBase):
    """Uniform samples in [minval, maxval): units on a grid of 2**-10, 2**-23 or 2**-52, scaled."""

    name = "aotk.random_uniform"
    minval = prop_def(FloatAttr)
    maxval = prop_def(FloatAttr)


@irdl_op_definition
class RandomNormalOp(RandomOpBase):
    """Normal samples (Box-Muller); `truncated` re-draws those beyond 2 stddev."""

    name = "aotk.random_normal"
    mean = prop_def(FloatAttr)
    stddev = prop_def(FloatAttr)
    truncated = prop_def(IntegerAttr)


def infer_random(
    state: Attribute,
    *like: Attribute,
    dtype: str,
    shape: Sequence[int],
    like_axes: Sequence[int],
    **_: Any,
) -> Attribute:
    """Check the state, the dims and the like operand; return the result type."""
    if shape_of(state) != (2,) or elem_of(state) != i64:
        raise TypeError(f"state must be a tensor<2xi64> (seed, calls), got {state}")
    if dtype not in FLOATS:
        raise TypeError(f"dtype must be one of {', '.join(FLOATS)}, got {dtype!r}")
    if len(shape) != len(like_axes):
        raise ValueError(f"shape {tuple(shape)} and like_axes {tuple(like_axes)} differ in rank")
    if len(like) > 1 or (like and all(a < 0 for a in like_axes)):
        raise ValueError("expected one like operand exactly when like_axes uses it")
    if any(d < 0 for d, axis in zip(shape, like_axes, strict=True) if axis < 0):
        raise ValueError(f"dims must be >= 0, got shape {tuple(shape)}")
    if any(axis >= 0 for axis in like_axes) and not like:
        raise ValueError(f"like_axes {tuple(like_axes)} needs a like operand")
    operands = [shape_of(t) for t in (state, *like)]
    for axis in like_axes:
        if axis >= len(operands[-1]):
            raise ValueError(
                f"like axis {axis} is out of range for shape {fmt_shape(operands[-1])}"
            )
    out = random_shape(STATIC, operands, shape=shape, like_axes=like_axes)
    return tensor(dtypes.element_type(dtype), out)


def infer_uniform(state: Attribute, *like: Attribute, **attrs: Any) -> Attribute:
    result = infer_random(state, *like, **attrs)
    random_numpy.uniform_bounds(dtype_of(result), attrs["minval"], attrs["maxval"])
    return result


def infer_normal(state: Attribute, *like: Attribute, **attrs: Any) -> Attribute:
    return infer_random(state, *like, **attrs)


def random_shape(
    a: DimArith,
    dims: Sequence[Sequence[Dim]],
    *,
    shape: Sequence[int],
    like_axes: Sequence[int],
    **_: Any,
) -> list[Dim]:
    """`shape`, except dim i is the like operand's dim like_axes[i] where that is >= 0."""
    return [dims[1][axis] if axis >= 0 else d for d, axis in zip(shape, like_axes, strict=True)]


def micro_kernel_call(op_type: type[RandomOpBase], attrs: dict[str, Any]) -> tuple[str, list[int]]:
    """The micro-kernel an op of `op_type` and `attrs` calls, and its parameters after
    (out, state, n): floats as their bits."""
    dtype = attrs["dtype"]
    if op_type is RandomUniformOp:
        minval, maxval = attrs["minval"], attrs["maxval"]
        lo = float(random_numpy.compute_dtype(dtype)(minval))
        scale = random_numpy.uniform_scale(dtype, minval, maxval)
        low, high = random_numpy.uniform_bounds(dtype, minval, maxval)
        floats = [lo, scale, low, high]
        name = random_kernels.uniform_name(dtype)
    else:
        floats = [attrs["mean"], attrs["stddev"]]
        name = random_kernels.normal_name(dtype, bool(attrs["truncated"]))
    return name, [random_kernels.float_bits(v) for v in floats]


def _lowering(op_type: type[RandomOpBase]) -> Any:
    def lower(k: Kernel, out: Buf, state: Buf, *like: Buf, **attrs: Any) -> None:
        name, params = micro_kernel_call(op_type, attrs)
        library.call(k, name, [out, state, k.product(out.dims), *params])

    return lower


def _no_dependence(g: Any, y: Any, *xs: Any, **_: Any) -> tuple[None, ...]:
    """Samples do not depend on the values of the state or the like operand."""
    return (None,) * len(xs)


register(
    OpDef(
        ir=RandomUniformOp,
        kind=Kind.OPAQUE,
        infer=infer_uniform,
        numpy=random_numpy.uniform,
        lower=_lowering(RandomUniformOp),
        grad=_no_dependence,
        shape=random_shape,
    )
)
register(
    OpDef(
        ir=RandomNormalOp,
        kind=Kind.OPAQUE,
        infer=infer_normal,
        numpy=random_numpy.normal,
        lower=_lowering(RandomNormalOp),
        grad=_no_dependence,
        shape=random_shape,
    )
)

__all__ = ["RandomNormalOp", "RandomOpBase", "RandomUniformOp"]
