"""The JIT's side of `aotk.print_tensor`: the runtime calls a kernel makes to print a
tensor (see runtime/aotk_print.c), bound to Python for in-process code.

A kernel reports `begin(message, dtype, rank)`, each dim, each element (as a double or
an int64), then `end`. Here they collect the tensor and print it to `sys.stdout` as
`print(message, array)` does, so notebooks and redirected streams see it, in NumPy's
format, like Keras's Theano backend. Exported libraries bind the same calls to C instead.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

import numpy as np
from llvmlite import binding as llvm_binding

_line = threading.local()  # each calling thread prints lines of its own


def _begin(message: bytes, dtype: bytes, rank: int) -> int:
    _line.parts = (message.decode("utf-8", "replace"), dtype.decode(), [], [])
    return 0


def _dim(d: int) -> int:
    _line.parts[2].append(d)
    return 0


def _element(value: float | int) -> int:
    _line.parts[3].append(value)
    return 0


def _end() -> int:
    message, dtype, dims, values = _line.parts
    array = np.array(values).astype(dtype).reshape(dims)
    print(message, array, file=sys.stdout, flush=True)
    return 0


_I32, _PTR = ctypes.c_int32, ctypes.c_char_p
_CALLBACKS: dict[str, Any] = {
    "aotk_print_begin": ctypes.CFUNCTYPE(_I32, _PTR, _PTR, ctypes.c_int64)(_begin),
    "aotk_print_dim": ctypes.CFUNCTYPE(_I32, ctypes.c_int64)(_dim),
    "aotk_print_f64": ctypes.CFUNCTYPE(_I32, ctypes.c_double)(_element),
    "aotk_print_i64": ctypes.CFUNCTYPE(_I32, ctypes.c_int64)(_element),
    "aotk_print_end": ctypes.CFUNCTYPE(_I32)(_end),
}


def register() -> None:
    """Make in-process code resolve the print calls to the functions above."""
    for name, callback in _CALLBACKS.items():
        llvm_binding.add_symbol(name, ctypes.cast(callback, ctypes.c_void_p).value)
