"""Creating and inspecting tensors: placeholders, variables, constants, and their values."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from aotk import dtypes, runtime
from aotk.backend.config import floatx, resolve_dtype
from aotk.backend.sparse import KSparseTensor, densify, sparse_placeholder
from aotk.dialect import elementwise as ew
from aotk.dialect import shape_query as sq
from aotk.dialect import trace
from aotk.dialect.base import MAX_RANK, check_size
from aotk.dialect.trace import KTensor


class KVariable(runtime.StorageHolder, KTensor):
    """A variable: a tensor whose value lives in an aligned native buffer between calls."""

    def __init__(self, value: np.ndarray, name: str):
        self.storage = runtime.aligned_copy(value)
        super().__init__(trace.capture_arg(self, self.storage, name), name=name)
        self.constraint: Any = None
        # As a TF variable's: Keras's Layer tracks a variable set as its attribute by it.
        self.trainable = True
        self._keras_shape, self._uses_learning_phase = self.shape, False


class KConstant(runtime.StorageHolder, KTensor):
    """A captured array constant (read-only buffer)."""

    def __init__(self, value: np.ndarray, name: str):
        self.storage = runtime.aligned_copy(value)
        self.storage.flags.writeable = False
        super().__init__(trace.capture_arg(self, self.storage, name), name=name)


def _check_shape(shape: Any, where: str) -> tuple[int | None, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, Sequence):
        raise TypeError(f"{where}: shape must be a tuple of ints or None, got {shape!r}")
    out: list[int | None] = []
    for i, d in enumerate(shape):
        if d is None:
            out.append(None)
        elif isinstance(d, int | np.integer) and not isinstance(d, bool) and d >= 0:
            out.append(int(d))
        else:
            raise ValueError(
                f"{where}: shape {tuple(shape)!r} has a bad dim at axis {i}: "
                f"expected an int >= 0 or None, got {d!r}"
            )
    try:
        check_size(out)
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    return tuple(out)


def placeholder(
    shape: Any = None,
    ndim: int | None = None,
    dtype: Any = None,
    sparse: bool = False,
    name: str | None = None,
) -> KTensor:
    """A symbolic input; None dims stay dynamic in the compiled code."""
    if shape is None:
        if ndim is None:
            raise ValueError("K.placeholder: give a shape or an ndim")
        if not isinstance(ndim, int) or not 0 <= ndim <= MAX_RANK:
            raise ValueError(f"K.placeholder: ndim must be an int in [0, {MAX_RANK}], got {ndim!r}")
        shape = (None,) * ndim
    dims = _check_shape(shape, "K.placeholder")
    if ndim is not None and ndim != len(dims):
        raise ValueError(f"K.placeholder: shape {dims} has rank {len(dims)} but ndim is {ndim}")
    name = name or f"placeholder_{len(trace.graph().placeholders)}"
    if sparse:
        sp = sparse_placeholder(dims, resolve_dtype(dtype, "K.placeholder"), name)
        return sp  # type: ignore[return-value]
    x = KTensor(trace.placeholder_arg(dims, resolve_dtype(dtype, "K.placeholder"), name), name=name)
    x.sparse = bool(sparse)  # type: ignore[attr-defined]
    x._keras_shape, x._uses_learning_phase = dims, False
    return x


def _array(value: Any, dtype: Any, where: str) -> np.ndarray:
    if isinstance(value, KTensor):
        value = eval(value)
    return np.asarray(value).astype(resolve_dtype(dtype, where))


def variable(
    value: Any, dtype: Any = None, name: str | None = None, constraint: Any = None
) -> KVariable:
    """A variable initialised from `value` (default dtype: floatx); a scipy.sparse matrix
    gives a sparse tensor whose values are a variable."""
    if hasattr(value, "tocoo"):
        return _sparse_variable(value, dtype, name)  # type: ignore[return-value]
    name = trace.scoped_name(name or f"variable_{len(trace.graph().captures)}")
    var = KVariable(_array(value, dtype, "K.variable"), name)
    var.constraint = constraint
    return var


def _sparse_variable(value: Any, dtype: Any, name: str | None) -> KSparseTensor:
    coo = value.tocoo()
    name = name or f"variable_{len(trace.graph().captures)}"
    indices = np.stack([np.asarray(coo.row), np.asarray(coo.col)], axis=1).astype(np.int64)
    values = KVariable(np.asarray(coo.data).astype(resolve_dtype(dtype, "K.variable")), name)
    return KSparseTensor(constant(indices, "int64"), values, tuple(coo.shape), name=name)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> KTensor:
    """A constant tensor; a scalar becomes an IR constant, an array a captured buffer."""
    dtype = resolve_dtype(dtype, "K.constant")
    array = np.asarray(value, dtype=dtype)
    if shape is not None:
        dims = _check_shape(shape, "K.constant")
        if array.ndim == 0:
            array = np.full(_static(dims, "K.constant"), array, dtype=dtype)
        elif array.size != math.prod(d or 0 for d in dims):
            raise ValueError(f"K.constant: value of shape {array.shape} does not fit shape {dims}")
        else:
            array = array.reshape(dims)  # type: ignore[arg-type]
    if array.ndim == 0:
        return scalar(array.item(), dtype)
    return KConstant(array, name or f"constant_{len(trace.graph().captures)}")


def scalar(value: float | int | bool, dtype: str) -> KTensor:
    """A rank-0 constant of `dtype` (an integer one holds its value exactly)."""
    integral = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
    in_int64 = integral and dtypes.is_int(dtypes.element_type(dtype)) and -(2**63) <= value < 2**63
    held = int(value) if in_int64 else float(value)  # a float64 holds 53 bits of an int64
    return trace.emit(ew.ConstantOp, where="K.constant", value=held, dtype=dtype)


def as_tensor(x: Any, dtype: str | None = None, where: str = "K") -> KTensor:
    """`x` if it is a tensor, else a constant of `dtype` (default: floatx for floats)."""
    if isinstance(x, KTensor):
        return x
    if isinstance(x, bool | int | float | np.number | np.bool_):
        default = "bool" if isinstance(x, bool | np.bool_) else floatx()
        return scalar(x.item() if isinstance(x, np.generic) else x, dtype or default)
    if isinstance(x, list | tuple) and _holds_tensors(x):
        return _stack_mixed(x, dtype, where)
    if isinstance(x, np.ndarray | list | tuple):
        return constant(np.asarray(x), dtype=dtype or _default_dtype(np.asarray(x)))
    raise TypeError(f"{where}: expected a tensor, an array or a number, got {type(x).__name__}")


def _holds_tensors(x: Any) -> bool:
    if isinstance(x, list | tuple):
        return any(_holds_tensors(v) for v in x)
    return isinstance(x, KTensor)


def _first_dtype(x: Any) -> str | None:
    if isinstance(x, KTensor):
        return x.dtype
    for v in x if isinstance(x, list | tuple) else ():
        if (found := _first_dtype(v)) is not None:
            return found
    return None


def _stack_mixed(x: list[Any] | tuple[Any, ...], dtype: str | None, where: str) -> KTensor:
    """A (nested) list of tensors and numbers as one tensor of the tensors' dtype."""
    from aotk.backend.data_ops import stack  # data_ops builds on this module

    dtype = dtype or _first_dtype(x)
    parts = [as_tensor(v, dtype, where) for v in x]
    return stack([p if p.dtype == dtype else cast(p, dtype) for p in parts])


def _default_dtype(a: np.ndarray) -> str:
    return "bool" if a.dtype.kind == "b" else floatx() if a.dtype.kind == "f" else a.dtype.name


def zeros(shape: Any, dtype: Any = None, name: str | None = None) -> KVariable:
    """An all-zeros variable."""
    return variable(np.zeros(_static(shape, "K.zeros")), dtype, name)


def ones(shape: Any, dtype: Any = None, name: str | None = None) -> KVariable:
    """An all-ones variable."""
    return variable(np.ones(_static(shape, "K.ones")), dtype, name)


def eye(size: Any, dtype: Any = None, name: str | None = None) -> KVariable:
    """An identity-matrix variable; `size` is n or (rows, cols)."""
    rows, cols = _static((size, size) if isinstance(size, int) else size, "K.eye")
    return variable(np.eye(rows, cols), dtype, name)


def _static(shape: Any, where: str) -> tuple[int, ...]:
    dims = _check_shape(shape, where)
    if None in dims:
        raise ValueError(f"{where}: shape {dims} must be fully known")
    return dims  # type: ignore[return-value]


def zeros_like(x: Any, dtype: Any = None, name: str | None = None) -> KTensor:
    """A tensor of zeros shaped like `x`."""
    x = as_tensor(x)
    return trace.emit(
        ew.FillLikeOp,
        x,
        where="K.zeros_like",
        value=0.0,
        dtype=resolve_dtype(dtype or x.dtype, "K.zeros_like"),
    )


def ones_like(x: Any, dtype: Any = None, name: str | None = None) -> KTensor:
    """A tensor of ones shaped like `x`."""
    x = as_tensor(x)
    return trace.emit(
        ew.FillLikeOp,
        x,
        where="K.ones_like",
        value=1.0,
        dtype=resolve_dtype(dtype or x.dtype, "K.ones_like"),
    )


def eval(x: Any) -> np.ndarray:
    """The value of a tensor, computed by compiled code (variables: their buffer; a random
    op's samples: its micro-kernel, called directly, `random_draw`; constants only moved
    about: NumPy, `static_eval.moved_constants`).

    Evaluating a K.update result applies the update and returns the new value."""
    from aotk.backend.training import KUpdate  # training builds on this module
    from aotk.function import Function

    if isinstance(x, KVariable | KConstant):
        return x.storage.copy()
    if isinstance(x, KSparseTensor):
        x = densify(x, "K.eval")
    if isinstance(x, KUpdate):  # as in TensorFlow, evaluating an update applies it
        return Function([], [x.value], [x], where="K.eval")([])[0]
    if not isinstance(x, KTensor):
        raise TypeError(f"K.eval: expected a tensor or variable, got {type(x).__name__}")
    from aotk.backend import random_draw, static_eval  # they build on this module

    moved = static_eval.moved_constants(x)
    if moved is not None:
        return moved
    drawn = random_draw.draw(x)
    return drawn if drawn is not None else Function([], x, where="K.eval")([])


def get_value(x: KVariable) -> np.ndarray:
    """The value of a variable."""
    if not isinstance(x, KVariable):
        raise TypeError(f"K.get_value: expected a variable, got {x!r}")
    return x.storage.copy()


def set_value(x: KVariable, value: Any) -> None:
    """Write `value` into a variable's buffer (same shape; cast to its dtype)."""
    if not isinstance(x, KVariable):
        raise TypeError(f"K.set_value: expected a variable, got {x!r}")
    array = np.asarray(value)
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"K.set_value: variable '{x.name}' is {x.storage.dtype}, got a value of dtype "
            f"{array.dtype} (expected numbers or bools)"
        )
    if array.shape != x.storage.shape:
        raise ValueError(
            f"K.set_value: variable '{x.name}' has shape {x.storage.shape}, "
            f"got a value of shape {array.shape}"
        )
    np.copyto(x.storage, array, casting="unsafe")
    runtime.bump_version(x)


def batch_get_value(ops: Sequence[KVariable]) -> list[np.ndarray]:
    """The values of several variables."""
    return [get_value(x) for x in ops]


def batch_set_value(tuples: Sequence[tuple[KVariable, Any]]) -> None:
    """Set several variables: an iterable of (variable, value) pairs."""
    for pair in tuples:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise TypeError(f"K.batch_set_value: expected (variable, value) pairs, got {pair!r}")
        set_value(pair[0], pair[1])


def int_shape(x: Any) -> tuple[int | None, ...]:
    """The static shape, with None for dynamic dims."""
    if isinstance(x, np.ndarray):
        return tuple(x.shape)
    t = _tensor(x, "K.int_shape")
    return trace.merge_shape_hint(t.shape, t._shape_hint)


def ndim(x: Any) -> int:
    """The rank of a tensor."""
    return len(int_shape(x))


def dtype(x: Any) -> str:
    """The dtype of a tensor, as a string."""
    return _tensor(x, "K.dtype").dtype


def shape(x: Any) -> KTensor:
    """The symbolic shape of a tensor: an int32 vector read at run time."""
    return trace.emit(sq.ShapeOfOp, _tensor(x, "K.shape"), where="K.shape")


def count_params(x: Any) -> int:
    """The number of elements of a tensor with a static shape."""
    dims = int_shape(x)
    if None in dims:
        raise ValueError(f"K.count_params: shape {dims} of {x!r} is not fully known")
    return int(math.prod(dims))  # type: ignore[arg-type]


def cast(x: Any, dtype: Any) -> KTensor:
    """Convert a tensor to `dtype` (float -> int truncates toward zero)."""
    x = as_tensor(x)
    return trace.emit(ew.CastOp, x, where="K.cast", dtype=dtypes.normalize(dtype, "K.cast: dtype"))


def cast_to_floatx(x: Any) -> np.ndarray:
    """A NumPy array cast to floatx."""
    return np.asarray(x, dtype=floatx())


def _tensor(x: Any, where: str) -> KTensor:
    if not isinstance(x, KTensor):
        raise TypeError(f"{where}: expected a tensor, got {type(x).__name__}")
    return x


def dtypes_of(*xs: KTensor) -> list[str]:
    return [x.dtype for x in xs]


__all__ = [
    "batch_get_value",
    "batch_set_value",
    "cast",
    "cast_to_floatx",
    "constant",
    "count_params",
    "dtype",
    "eval",
    "eye",
    "get_value",
    "int_shape",
    "ndim",
    "ones",
    "ones_like",
    "placeholder",
    "set_value",
    "shape",
    "variable",
    "zeros",
    "zeros_like",
]
