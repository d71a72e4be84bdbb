"""Keras dtype names, NumPy dtypes and IR element types, and the mapping between them.

Signed integers are signless IR integers, uint8 is `ui8`, and bool is `i1` in the IR and one
byte in memory, as NumPy stores it.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")

_ELEMENT_TYPES: dict[str, Attribute] = {
    "float16": Float16Type(),
    "float32": Float32Type(),
    "float64": Float64Type(),
    "int8": IntegerType(8),
    "int16": IntegerType(16),
    "int32": IntegerType(32),
    "int64": IntegerType(64),
    "uint8": IntegerType(8, Signedness.UNSIGNED),
    "bool": IntegerType(1),
}
_NAMES = {str(t): name for name, t in _ELEMENT_TYPES.items()}
# by the type itself: printing one (`str`) took 23 us, a lookup a fraction of one
_NAMES_BY_TYPE: dict[Attribute, str] = {t: name for name, t in _ELEMENT_TYPES.items()}


def normalize(dtype: object, where: str = "dtype") -> str:
    """Return the Keras name of `dtype` (a name, NumPy dtype or type); raise on others."""
    try:
        name = np.dtype(dtype).name  # type: ignore[arg-type]
    except TypeError:
        name = None
    if name not in _ELEMENT_TYPES:
        raise TypeError(f"{where}: expected one of {', '.join(DTYPES)}, got {dtype!r}")
    return name


def element_type(dtype: str) -> Attribute:
    """Return the IR element type of a Keras dtype name."""
    return _ELEMENT_TYPES[normalize(dtype)]


def name_of(element: Attribute) -> str:
    """Return the Keras dtype name of an IR element type."""
    known = _NAMES_BY_TYPE.get(element)
    if known is not None:
        return known
    try:
        return _NAMES[str(element)]
    except KeyError:
        raise TypeError(f"aotk has no dtype for IR element type {element}") from None


def numpy_dtype(element: Attribute) -> np.dtype:
    """Return the NumPy dtype of an IR element type."""
    return np.dtype(name_of(element))


def is_float(element: Attribute) -> bool:
    return isinstance(element, Float16Type | Float32Type | Float64Type)


def is_bool(element: Attribute) -> bool:
    return isinstance(element, IntegerType) and element.width.data == 1


def is_unsigned(element: Attribute) -> bool:
    return isinstance(element, IntegerType) and element.signedness.data == Signedness.UNSIGNED


def is_int(element: Attribute) -> bool:
    return isinstance(element, IntegerType) and not is_bool(element)


def byte_size(element: Attribute) -> int:
    """Bytes one element takes in a buffer (bool takes one)."""
    return numpy_dtype(element).itemsize
