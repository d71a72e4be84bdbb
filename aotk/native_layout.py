"""The C structures of the native call path (`runtime/aotk_pycall.c`) as ctypes sees them,
and the check that this interpreter lays its objects out as that file reads them."""

from __future__ import annotations

import ctypes
import sys

import numpy as np

P = ctypes.c_void_p
I64 = ctypes.c_int64


class Api(ctypes.Structure):
    _fields_ = [
        (name, P)
        for name in (
            "list_new",
            "capsule_pointer",
            "thread_ident",
            "save_thread",
            "restore_thread",
            "incref",
            "decref",
            "call_no_args",
        )
    ]


class State(ctypes.Structure):
    _fields_ = [
        ("ready", I64),
        ("thread", ctypes.c_uint64),
        ("writes", P),
        ("writes_seen", I64),
        ("list_type", P),
        ("tuple_type", P),
        ("array_type", P),
        ("declined", P),
        ("kernel", P),
        ("trampoline", P),
        ("n_inputs", I64),
        ("n_outputs", I64),
        ("n_args", I64),
        ("first_output", I64),
        ("descrs", P),
        ("ranks", P),
        ("itemsizes", P),
        ("shapes", P),
        ("out_ranks", P),
        ("out_shapes", P),
        ("outputs", P),
        ("args", P),
        ("refill", P),
        ("holds", P),
        ("scalars", P),
        ("converts", P),
        ("mutex", P),
        ("versions", P),
        ("n_versions", I64),
        ("short_kernel", I64),
    ]


class MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", P), ("flags", ctypes.c_int), ("doc", P)]


def layouts_match() -> bool:
    """Whether this interpreter's objects are laid out as `aotk_pycall.c` reads them."""
    word = ctypes.c_ssize_t
    probe = np.arange(6, dtype=np.float32).reshape(2, 3)
    view = probe[:, ::2]
    items = [probe, view, 3]
    fixed = (probe, view)
    at = id(probe)
    dims = ctypes.cast(P.from_address(at + 32).value or 0, ctypes.POINTER(word))
    item_at = P.from_address(id(items) + 24).value or 0
    return (
        word.from_address(id(items)).value == sys.getrefcount(items) - 1
        and P.from_address(id(items) + 8).value == id(list)
        and word.from_address(id(items) + 16).value == 3
        and ctypes.cast(item_at, ctypes.POINTER(P))[1] == id(view)
        and P.from_address(id(fixed) + 8).value == id(tuple)
        and word.from_address(id(fixed) + 16).value == 2
        and P.from_address(id(fixed) + 32).value == id(view)
        and P.from_address(at + 8).value == id(np.ndarray)
        and P.from_address(at + 16).value == probe.ctypes.data
        and ctypes.c_int.from_address(at + 24).value == 2
        and (dims[0], dims[1]) == (2, 3)
        and P.from_address(id(view) + 48).value == id(view.base)
        and P.from_address(at + 56).value == id(probe.dtype)
        and ctypes.c_int.from_address(at + 64).value & 1 == 1
        and ctypes.c_int.from_address(id(view) + 64).value & 1 == 0
    )
