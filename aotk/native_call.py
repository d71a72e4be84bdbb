"""A compiled function's planned calls run without Python bytecode (`runtime/aotk_pycall.c`).

`Entry.call(values)` is a builtin function: for a call from the thread that published
the current plan, on a list (or tuple) of dense, aligned arrays of the planned dtypes and shapes,
while no variable was written since, it runs the kernel on free pooled output arrays
(the pool's `refill` adds one where the caller holds both of an output's) and returns
the outputs; otherwise it returns `Entry.declined` and the caller takes the Python path
(`call_path`), which publishes the plan it used. A function that writes its variables
(a training step, random-number state) is given a `Mutex` that every call of it holds
around its kernel, on either path; a native call moves the versions of the variables it
wrote as `runtime.bump_version` does.

It is used only where its C reads are known to be right: CPython on a 64-bit release
build with the GIL, whose object, list, tuple and ndarray layouts this module checks against
live objects first, and a C compiler to build the file with (cached like the thread pool,
`native_runtime`). `AOTK_NATIVE_CALL=0` turns it off.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import sysconfig
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from aotk import native_inputs, runtime
from aotk.codegen import native_runtime, packed_entry
from aotk.native_inputs import Inputs

SOURCES = ("aotk_pycall.c",)
LIBRARY = "libaotk_pycall.so"
STATE_NAME = b"aotk.call_state"
OUTPUT_SLOTS = 2  # pooled arrays per output (`output_pool.OutputPool`)
_METH_O = 0x0008
_P = ctypes.c_void_p
_I = ctypes.c_int64


class _Api(ctypes.Structure):
    _fields_ = [
        (name, _P)
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


class _State(ctypes.Structure):
    _fields_ = [
        ("ready", _I),
        ("thread", ctypes.c_uint64),
        ("writes", _P),
        ("writes_seen", _I),
        ("list_type", _P),
        ("tuple_type", _P),
        ("array_type", _P),
        ("declined", _P),
        ("kernel", _P),
        ("trampoline", _P),
        ("n_inputs", _I),
        ("n_outputs", _I),
        ("n_args", _I),
        ("first_output", _I),
        ("descrs", _P),
        ("ranks", _P),
        ("itemsizes", _P),
        ("shapes", _P),
        ("out_ranks", _P),
        ("out_shapes", _P),
        ("outputs", _P),
        ("args", _P),
        ("refill", _P),
        ("holds", _P),
        ("scalars", _P),
        ("converts", _P),
        ("mutex", _P),
        ("versions", _P),
        ("n_versions", _I),
    ]


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", _P), ("flags", ctypes.c_int), ("doc", _P)]


_lock = threading.Lock()
_loaded: list[tuple[ctypes.CDLL, _Api, _MethodDef] | None] = []  # one entry once tried


def _library() -> tuple[ctypes.CDLL, _Api, _MethodDef] | None:
    """The built C file with its interpreter functions set, or None where it cannot run."""
    with _lock:
        if not _loaded:
            _loaded.append(_load() if _usable() else None)
        return _loaded[0]


def _usable() -> bool:
    if os.environ.get("AOTK_NATIVE_CALL", "1") == "0":
        return False
    release_cpython = (
        sys.implementation.name == "cpython"
        and sys.maxsize == 2**63 - 1
        and not hasattr(sys, "gettotalrefcount")  # a debug build's objects are larger
        and not sysconfig.get_config_var("Py_GIL_DISABLED")
    )
    return release_cpython and _layouts_match() and native_runtime.compiler() is not None


def _layouts_match() -> bool:
    """Whether this interpreter's objects are laid out as `aotk_pycall.c` reads them."""
    word = ctypes.c_ssize_t
    probe = np.arange(6, dtype=np.float32).reshape(2, 3)
    view = probe[:, ::2]
    items = [probe, view, 3]
    fixed = (probe, view)
    at = id(probe)
    dims = ctypes.cast(_P.from_address(at + 32).value or 0, ctypes.POINTER(word))
    item_at = _P.from_address(id(items) + 24).value or 0
    return (
        word.from_address(id(items)).value == sys.getrefcount(items) - 1
        and _P.from_address(id(items) + 8).value == id(list)
        and word.from_address(id(items) + 16).value == 3
        and ctypes.cast(item_at, ctypes.POINTER(_P))[1] == id(view)
        and _P.from_address(id(fixed) + 8).value == id(tuple)
        and word.from_address(id(fixed) + 16).value == 2
        and _P.from_address(id(fixed) + 32).value == id(view)
        and _P.from_address(at + 8).value == id(np.ndarray)
        and _P.from_address(at + 16).value == probe.ctypes.data
        and ctypes.c_int.from_address(at + 24).value == 2
        and (dims[0], dims[1]) == (2, 3)
        and _P.from_address(id(view) + 48).value == id(view.base)
        and _P.from_address(at + 56).value == id(probe.dtype)
        and ctypes.c_int.from_address(at + 64).value & 1 == 1
        and ctypes.c_int.from_address(id(view) + 64).value & 1 == 0
    )


def _load() -> tuple[ctypes.CDLL, _Api, _MethodDef] | None:
    cc = native_runtime.compiler()
    if cc is None:
        return None
    try:
        path = native_runtime.build(cc, SOURCES, LIBRARY)
        lib = ctypes.CDLL(str(path))
        native_runtime.remove_private_build(path)
    except (OSError, RuntimeError, subprocess.CalledProcessError):
        return None  # the Python path serves every call; nothing is lost but time
    api = ctypes.pythonapi
    table = _Api(
        *(
            ctypes.cast(getattr(api, name), _P)
            for name in (
                "PyList_New",
                "PyCapsule_GetPointer",
                "PyThread_get_thread_ident",
                "PyEval_SaveThread",
                "PyEval_RestoreThread",
                "Py_IncRef",
                "Py_DecRef",
                "PyObject_CallNoArgs",
            )
        )
    )
    lib.aotk_call_init.argtypes = [ctypes.POINTER(_Api)]
    lib.aotk_call_init(ctypes.byref(table))
    lib.aotk_mutex_size.restype = ctypes.c_size_t
    lib.aotk_mutex_init.restype = ctypes.c_int
    for name in ("aotk_mutex_init", "aotk_mutex_lock", "aotk_mutex_unlock"):
        getattr(lib, name).argtypes = [_P]
    method = _MethodDef(b"aotk_call", ctypes.cast(lib.aotk_call, _P), _METH_O, None)
    return lib, table, method


# own prototypes: setting `ctypes.pythonapi`'s would change them for every other user
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, _P, ctypes.c_char_p, _P)(
    ("PyCapsule_New", ctypes.pythonapi)
)
_new_builtin = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.POINTER(_MethodDef), ctypes.py_object, _P
)(("PyCFunction_NewEx", ctypes.pythonapi))


def _builtin(method: _MethodDef, state: _State) -> Any:
    """`aotk_call` bound to `state` (through a capsule) as a Python builtin function. The
    capsule does not keep `state` alive: its `Entry` does."""
    capsule = _new_capsule(ctypes.addressof(state), STATE_NAME, None)
    return _new_builtin(ctypes.byref(method), capsule, None)


def _array(ctype: Any, values: Sequence[int]) -> Any:
    return (ctype * max(len(values), 1))(*values)


class Mutex:
    """A pthread mutex, taken with the GIL released: by a native call around its kernel
    and, as a `with` block, by the Python path (through ctypes, which releases it)."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._memory = ctypes.create_string_buffer(lib.aotk_mutex_size())  # malloc-aligned
        self.address = ctypes.addressof(self._memory)
        if lib.aotk_mutex_init(self.address):
            raise MemoryError("aotk: could not make a mutex for a compiled function")
        self._lock, self._unlock = lib.aotk_mutex_lock, lib.aotk_mutex_unlock

    def __enter__(self) -> None:
        self._lock(self.address)

    def __exit__(self, *exc: object) -> None:
        self._unlock(self.address)


class Entry:
    """The native call path of one kernel (`make`). Python publishes its plans into it
    while holding `lock`, the lock under which its output pool changes."""

    declined = object()  # what `call` returns for a call it does not take

    def __init__(
        self, lib: ctypes.CDLL, method: _MethodDef, kernel: int, signature: str, layout: Layout
    ) -> None:
        self._state = st = _State()
        st.writes = runtime.writes_address()
        st.list_type, st.tuple_type = id(list), id(tuple)
        st.array_type, st.declined = id(np.ndarray), id(self.declined)
        st.kernel = kernel
        st.n_inputs, st.n_outputs = len(layout.dtypes), layout.n_outputs
        st.n_args, st.first_output = len(signature) - 1, layout.first_output
        self._signature = signature
        self._dtypes = layout.dtypes
        # what the plan's arguments point into: its ctypes arrays, the workspace buffer
        # and the variables' arrays, one object that a running call holds
        self._holds: tuple[list[Any], np.ndarray | None, tuple[object, ...]] = ([], None, ())
        self._inputs: tuple[object, ...] = ()  # the plan's `Inputs.key()`
        self.out_shapes: list[tuple[int, ...]] = []  # the plan's outputs
        self._refill: Callable[[], None] | None = None
        self._versions: tuple[Any, list[np.ndarray]] = (None, [])
        self.mutex = None
        if layout.locked:
            self.mutex = Mutex(lib)
            st.mutex = self.mutex.address
        self._slots = _array(_P, [0] * (OUTPUT_SLOTS * layout.n_outputs))
        st.outputs = ctypes.addressof(self._slots)
        self.call = _builtin(method, st)

    @property
    def _kept(self) -> list[Any]:
        """The ctypes arrays the state points into."""
        return self._holds[0]

    @property
    def _workspace(self) -> np.ndarray | None:
        """The workspace buffer the plan points into."""
        return self._holds[1]

    def retract(self) -> None:
        """Decline every call until the next `publish`."""
        self._state.ready = 0

    def publishes(self, inputs: Inputs, writes: int, workspace: np.ndarray | None) -> bool:
        """Whether the plan for `inputs` is published for this thread at `writes`, with
        this `workspace` buffer (a thread given an ended one's id has its own)."""
        st = self._state
        return bool(
            st.ready
            and st.thread == threading.get_ident()
            and st.writes_seen == writes
            and self._workspace is workspace
            and inputs.key() == self._inputs
        )

    def publish(
        self,
        inputs: Inputs,
        out_shapes: Sequence[tuple[int, ...]],
        args: Sequence[int],
        writes: int,
        held: tuple[np.ndarray | None, Sequence[np.ndarray]] = (None, ()),
    ) -> None:
        """Take calls from this thread on `inputs` with the kernel arguments `args` (the
        slots of the inputs read in place and of the outputs aside) while no variable
        was written since `runtime.writes()` read `writes`. The output arrays, of
        `out_shapes`, come from `publish_output`. The caller retracts the plan when this
        thread's workspace moves: the other arguments follow from the shapes and the
        writes. The plan holds what its arguments point into: held = (the workspace
        buffer, the variables' arrays) (a thread that ends frees its own workspace, and
        a new thread may then be given the same id), the scalars and the conversion
        buffers; a call holds them all while its kernel runs, should another thread
        publish another plan meanwhile."""
        workspace, arrays = held
        st = self._state
        st.ready = 0
        if not st.trampoline:
            st.trampoline = packed_entry.trampoline(self._signature)
        tables = native_inputs.template(inputs, self._dtypes, args[: st.n_inputs])
        fixed = list(args)  # the slots the C side fills per call are 0
        fixed[: st.n_inputs] = tables.slots
        fixed[st.first_output : st.first_output + st.n_outputs] = [0] * st.n_outputs
        kept = [
            _array(_P, tables.descrs),
            _array(_I, [len(s) for s in inputs.shapes]),
            _array(_I, tables.itemsizes),
            _array(_I, [d for s in inputs.shapes for d in s]),
            _array(_I, [len(s) for s in out_shapes]),
            _array(_I, [d for s in out_shapes for d in s]),
            _array(_P, tables.objects),
            _array(_I, tables.converts),
            _array(_I, fixed),  # last: tests read the arguments there
        ]
        (
            st.descrs,
            st.ranks,
            st.itemsizes,
            st.shapes,
            st.out_ranks,
            st.out_shapes,
            st.scalars,
            st.converts,
            st.args,
        ) = map(ctypes.addressof, kept)
        if not any(tables.objects):  # the C side skips what is NULL
            st.scalars = None
        if not any(tables.converts):
            st.converts = None
        self._holds = (kept, workspace, (*arrays, *tables.held))
        self._inputs = inputs.key()
        st.holds = id(self._holds)
        self.out_shapes = [tuple(s) for s in out_shapes]
        st.thread, st.writes_seen = threading.get_ident(), writes
        st.ready = 1

    def set_refill(self, refill: Callable[[], None]) -> None:
        """Called by a matched call when the caller holds both arrays of one of the
        plan's outputs: it gives each such output a fresh array (`publish_output`)."""
        self._refill = refill
        self._state.refill = id(refill)

    def set_versions(self, cells: Sequence[np.ndarray]) -> None:
        """The version cells (`runtime.StorageHolder.version_cell`) of the variables the
        kernel writes: a native call moves each, and the count of writes, after its
        kernel, and counts its own writes as seen by the plan."""
        addresses = _array(_P, [runtime.address(c) for c in cells])
        self._versions = (addresses, list(cells))
        self._state.versions = ctypes.addressof(addresses)
        self._state.n_versions = len(cells)

    def advance(self, writes: int, by: int) -> None:
        """Count `by` writes more as seen if the plan was published when the count of
        writes read `writes`: a Python-path call's own writes, in place, of variables whose
        arrays every plan keeps (a native call's C side does the same)."""
        st = self._state
        if st.writes_seen == writes:
            st.writes_seen = writes + by

    def publish_output(self, i: int, arrays: Sequence[np.ndarray | None]) -> None:
        """The pooled arrays of output `i` (OUTPUT_SLOTS; None for none yet), which the
        pool holds for as long as they are published."""
        for s, array in enumerate(arrays):
            self._slots[s * self._state.n_outputs + i] = 0 if array is None else id(array)


class Layout:
    """Where a kernel's inputs and outputs sit among its arguments, and whether its
    calls must run one at a time (`locked`: they write its variables)."""

    def __init__(
        self, dtypes: Sequence[np.dtype], n_outputs: int, first_output: int, locked: bool = False
    ) -> None:
        self.dtypes, self.n_outputs, self.first_output = list(dtypes), n_outputs, first_output
        self.locked = locked


def make(kernel: int, signature: str, layout: Layout) -> Entry | None:
    """The native call path of the kernel at address `kernel` of signature code
    `signature` (`jit.signatures`), or None where there is none."""
    loaded = _library()
    return None if loaded is None else Entry(loaded[0], loaded[2], kernel, signature, layout)
