"""A compiled function's planned calls run without Python bytecode (`runtime/aotk_pycall.c`).

`Entry.call(values)` is a builtin function: for a call from a thread that published a
plan (each of up to THREAD_PLANS threads has its own, as each has its own workspace), on
a list (or tuple) of dense, aligned arrays of the planned dtypes and shapes, while no
variable was written since, it runs the kernel on free pooled output arrays (the pool's
`refill` adds one where the caller holds both of an output's) and returns the outputs;
otherwise it returns `Entry.declined` and the caller takes the Python path
(`call_path`), which publishes the plan it used. The kernel runs with the GIL released,
unless a call of the plan took under 2 us. A function that writes its variables (a
training step, random-number state) is given a `Mutex` that every call of it holds
around its kernel, on either path; a native call moves the versions of the variables it
wrote as `runtime.bump_version` does.

It is used only where its C reads are known to be right: CPython on a 64-bit release
build with the GIL, whose object, list, tuple and ndarray layouts `native_layout` checks
against live objects first, and a C compiler to build the file with (cached like the
thread pool, `native_runtime`). `AOTK_NATIVE_CALL=0` turns it off.
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
from aotk.native_layout import I64, Api, MethodDef, P, State, layouts_match

SOURCES = ("aotk_pycall.c",)
LIBRARY = "libaotk_pycall.so"
STATE_NAME = b"aotk.call_state"
OUTPUT_SLOTS = 2  # pooled arrays per output (`output_pool.OutputPool`)
THREAD_PLANS = 8  # threads with a plan of their own at once (as `aotk_pycall.c` says)
_METH_O = 0x0008

_lock = threading.Lock()
_loaded: list[tuple[ctypes.CDLL, Api, MethodDef] | None] = []  # one entry once tried


def _library() -> tuple[ctypes.CDLL, Api, MethodDef] | None:
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
    return release_cpython and layouts_match() and native_runtime.compiler() is not None


def _load() -> tuple[ctypes.CDLL, Api, MethodDef] | None:
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
    table = Api(
        *(
            ctypes.cast(getattr(api, name), P)
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
    lib.aotk_call_init.argtypes = [ctypes.POINTER(Api)]
    lib.aotk_call_init(ctypes.byref(table))
    lib.aotk_mutex_size.restype = ctypes.c_size_t
    lib.aotk_mutex_init.restype = ctypes.c_int
    for name in ("aotk_mutex_init", "aotk_mutex_lock", "aotk_mutex_unlock"):
        getattr(lib, name).argtypes = [P]
    lib.aotk_thread_plans.restype = ctypes.c_int64
    if lib.aotk_thread_plans() != THREAD_PLANS:
        raise RuntimeError(f"aotk: {LIBRARY} keeps another number of plans than {__name__}")
    method = MethodDef(b"aotk_call", ctypes.cast(lib.aotk_call, P), _METH_O, None)
    return lib, table, method


# own prototypes: setting `ctypes.pythonapi`'s would change them for every other user
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, P, ctypes.c_char_p, P)(
    ("PyCapsule_New", ctypes.pythonapi)
)
_new_builtin = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.POINTER(MethodDef), ctypes.py_object, P)(
    ("PyCFunction_NewEx", ctypes.pythonapi)
)


def _builtin(method: MethodDef, states: Any) -> Any:
    """`aotk_call` bound to `states`, an array of THREAD_PLANS states (through a
    capsule), as a Python builtin function. The capsule does not keep `states` alive: its
    `Entry` does."""
    capsule = _new_capsule(ctypes.addressof(states), STATE_NAME, None)
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


class _Plan:
    """The plan one thread published: its C state, and what its arguments point into."""

    def __init__(self, state: State) -> None:
        self.state = state
        # its ctypes arrays, the workspace buffer and the variables' arrays, in one object
        # that a running call holds
        self.holds: tuple[list[Any], np.ndarray | None, tuple[object, ...]] = ([], None, ())
        self.inputs: tuple[object, ...] = ()  # the plan's `Inputs.key()`
        self.out_shapes: list[tuple[int, ...]] = []  # the plan's outputs

    @property
    def kept(self) -> list[Any]:
        """The ctypes arrays the state points into."""
        return self.holds[0]

    @property
    def workspace(self) -> np.ndarray | None:
        """The workspace buffer the plan points into."""
        return self.holds[1]


class Entry:
    """The native call path of one kernel (`make`): a plan for each of up to
    THREAD_PLANS threads, since each thread has its own workspace. Python publishes its
    plans into it while holding `lock`, the lock under which its output pool changes."""

    declined = object()  # what `call` returns for a call it does not take

    def __init__(
        self, lib: ctypes.CDLL, method: MethodDef, kernel: int, signature: str, layout: Layout
    ) -> None:
        self._states = (State * THREAD_PLANS)()
        self.mutex = Mutex(lib) if layout.locked else None
        self._slots = _array(P, [0] * (OUTPUT_SLOTS * layout.n_outputs))  # shared by all
        for st in self._states:
            st.writes = runtime.writes_address()
            st.list_type, st.tuple_type = id(list), id(tuple)
            st.array_type, st.declined = id(np.ndarray), id(self.declined)
            st.kernel = kernel
            st.n_inputs, st.n_outputs = len(layout.dtypes), layout.n_outputs
            st.n_args, st.first_output = len(signature) - 1, layout.first_output
            st.outputs = ctypes.addressof(self._slots)
            st.mutex = self.mutex.address if self.mutex is not None else None
        self._plans = [_Plan(st) for st in self._states]
        self._evicted = 0  # the plan that goes to a new thread when every one is in use
        self._signature = signature
        self._dtypes = layout.dtypes
        self._refill: Callable[[], None] | None = None
        self._versions: tuple[Any, list[np.ndarray]] = (None, [])
        self.call = _builtin(method, self._states)

    def plan_of(self, thread: int | None = None) -> _Plan | None:
        """The plan `thread` (default: this one) published last, if it still has it."""
        ident = threading.get_ident() if thread is None else thread
        for plan in self._plans:
            if plan.state.thread == ident:
                return plan
        return None

    @property
    def out_shapes(self) -> list[tuple[int, ...]]:
        """The outputs of this thread's plan (none without one)."""
        plan = self.plan_of()
        return plan.out_shapes if plan is not None else []

    def retract(self) -> None:
        """Decline every call of this thread until its next `publish`."""
        plan = self.plan_of()
        if plan is not None:
            plan.state.ready = 0

    def forget(self, thread: int) -> None:
        """Drop the plan of `thread`, which ended, and what it holds (its workspace). The
        caller holds `lock`: no plan is being published into the same state."""
        plan = self.plan_of(thread)
        if plan is not None:
            plan.state.ready = 0
            plan.state.thread = 0
            plan.holds, plan.inputs, plan.out_shapes = ([], None, ()), (), []

    def publishes(self, inputs: Inputs, writes: int, workspace: np.ndarray | None) -> bool:
        """Whether the plan for `inputs` is published for this thread at `writes`, with
        this `workspace` buffer."""
        plan = self.plan_of()
        if plan is None:
            return False
        st = plan.state
        return bool(
            st.ready
            and st.writes_seen == writes
            and plan.workspace is workspace
            and inputs.key() == plan.inputs
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
        thread's workspace moves, and forgets it when the thread ends: the other
        arguments follow from the shapes and the writes. The plan holds what its
        arguments point into: held = (the workspace buffer, the variables' arrays), the
        scalars and the conversion buffers; a call holds them all while its kernel runs,
        should another thread publish into the same state meanwhile."""
        workspace, arrays = held
        plan = self._plan_to_publish()
        st = plan.state
        st.ready = 0
        if not st.trampoline:
            st.trampoline = packed_entry.trampoline(self._signature)
        tables = native_inputs.template(inputs, self._dtypes, args[: st.n_inputs])
        fixed = list(args)  # the slots the C side fills per call are 0
        fixed[: st.n_inputs] = tables.slots
        fixed[st.first_output : st.first_output + st.n_outputs] = [0] * st.n_outputs
        kept = [
            _array(P, tables.descrs),
            _array(I64, [len(s) for s in inputs.shapes]),
            _array(I64, tables.itemsizes),
            _array(I64, [d for s in inputs.shapes for d in s]),
            _array(I64, [len(s) for s in out_shapes]),
            _array(I64, [d for s in out_shapes for d in s]),
            _array(P, tables.objects),
            _array(I64, tables.converts),
            _array(I64, fixed),  # last: tests read the arguments there
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
        plan.holds = (kept, workspace, (*arrays, *tables.held))
        plan.inputs = inputs.key()
        st.holds = id(plan.holds)
        plan.out_shapes = [tuple(s) for s in out_shapes]
        st.thread, st.writes_seen = threading.get_ident(), writes
        st.short_kernel = 0  # its first native call measures its kernel
        st.ready = 1

    def _plan_to_publish(self) -> _Plan:
        """This thread's plan; else one no call takes (unused or retracted); else the
        next in turn, whose thread takes the Python path until it publishes again."""
        plan = self.plan_of()
        if plan is None:
            plan = next((p for p in self._plans if not p.state.ready), None)
        if plan is None:
            plan = self._plans[self._evicted]
            self._evicted = (self._evicted + 1) % THREAD_PLANS
        return plan

    def set_refill(self, refill: Callable[[], None]) -> None:
        """Called by a matched call when the caller holds both arrays of one of the
        plan's outputs: it gives each such output a fresh array (`publish_output`)."""
        self._refill = refill
        for st in self._states:
            st.refill = id(refill)

    def set_versions(self, cells: Sequence[np.ndarray]) -> None:
        """The version cells (`runtime.StorageHolder.version_cell`) of the variables the
        kernel writes: a native call moves each, and the count of writes, after its
        kernel, and counts its own writes as seen by the plans."""
        addresses = _array(P, [runtime.address(c) for c in cells])
        self._versions = (addresses, list(cells))
        for st in self._states:
            st.versions, st.n_versions = ctypes.addressof(addresses), len(cells)

    def advance(self, writes: int, by: int) -> None:
        """Count `by` writes more as seen by every plan published when the count of
        writes read `writes`: a Python-path call's own writes, in place, of variables
        whose arrays every plan keeps (a native call's C side does the same)."""
        for st in self._states:
            if st.writes_seen == writes:
                st.writes_seen = writes + by

    def publish_output(self, i: int, arrays: Sequence[np.ndarray | None]) -> None:
        """The pooled arrays of output `i` (OUTPUT_SLOTS; None for none yet), which the
        pool holds for as long as they are published."""
        n_outputs = self._states[0].n_outputs
        for s, array in enumerate(arrays):
            self._slots[s * n_outputs + i] = 0 if array is None else id(array)


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
