"""Calling a compiled kernel from Python: input checks, output buffers, the native call.

A call with input shapes not seen before takes the checked path: each input is coerced
to its placeholder's dtype and checked against its shape (`call_check`), and the output
shapes are inferred, so an impossible broadcast is a ValueError before native code runs.
What those shapes determine (output shapes, dynamic dims, workspace size) is then kept as
a plan. A later call whose inputs are dense, aligned, writable arrays of exactly the
placeholders' dtypes, in shapes planned before, takes the planned path: a few attribute
reads per array, then the native call. Anything else takes the checked path again.

A planned call publishes its plan to the native call path (`native_call`), which then
runs the same thread's calls of those shapes without Python bytecode, until something it
cannot see changes (another thread's call, a variable written elsewhere). A function
that writes its variables runs one call at a time, on either path.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aotk import native_call, runtime
from aotk.call_check import ShapeChecker, coerce_input

Shape = tuple[int, ...]
_PLANS_KEPT = 256  # shape signatures remembered; more means dims vary call to call


@dataclass(frozen=True)
class Plan:
    """What a call with given input shapes needs besides the inputs' addresses."""

    outputs: list[Shape]  # the shapes of the function's outputs
    dims: list[int]  # the dynamic dims, in the kernel's order
    workspace: int  # bytes


@dataclass(frozen=True)
class Signature:
    """A compiled function's inputs and outputs, as the call path sees them."""

    where: str
    inputs: list[tuple[str, tuple[int | None, ...], np.dtype]]  # name, shape, dtype
    out_dtypes: list[np.dtype]  # outputs, then updated variables
    n_outputs: int
    dynamic: list[tuple[int, int]]  # (input, axis) of each dynamic dim


@dataclass(frozen=True)
class Kernel:
    """A compiled function's kernel: a Python callable, and its address and signature
    code (`jit.signatures`) for the native call path."""

    call: Callable[..., Any]
    address: int
    code: str


class CallPath:
    """Runs one compiled kernel on lists of arrays, from any thread."""

    def __init__(
        self,
        signature: Signature,
        kernel: Kernel,
        workspace_size: Callable[..., int],
        checker: ShapeChecker,
        state: tuple[list[Any], list[Any]],
        locked: bool,
        packs: Any = None,
    ) -> None:
        self.sig, self._kernel, self._ws_size, self._checker = (
            signature,
            kernel.call,
            workspace_size,
            checker,
        )
        self._captures, self._updated = state  # objects with a `storage` array
        self._holders = [*self._captures, *self._updated]
        # the variables' arrays and their addresses, replaced together (calls may race)
        self._stored: tuple[list[np.ndarray], list[int]] = ([], [])
        self._stored_arrays()
        self._in_dtypes = [dtype for _, _, dtype in signature.inputs]
        self._plans: dict[tuple[Shape, ...], Plan] = {}
        self._workspace_sizes: dict[tuple[int, ...], int] = {}
        self._packs = packs  # `weight_packs.Packs`: copies of weights, after the captures
        self._native = native = self._native_entry(kernel, locked)
        # a training step reads and writes its variables: its calls run one at a time
        self._call_lock: Any = None
        if locked:
            self._call_lock = native.mutex if native is not None else threading.Lock()
        # the plan published points into this thread's workspace: withdrawn if it moves
        self._workspace = runtime.Workspace(self._native.retract if self._native else None)
        self._pool = OutputPool(signature.out_dtypes[: signature.n_outputs], self._native)
        if self._native is not None:
            self._native.set_refill(self._pool.refill)
        self._outputs = self._pool.take
        # thread -> its published plan's workspace: bytes used, and the buffer
        self._guarded: dict[int, tuple[int, np.ndarray | None]] = {}

    def _native_entry(self, kernel: Kernel, locked: bool) -> native_call.Entry | None:
        """The native call path, where its view of the variables holds (every capture
        counts a new array as a write)."""
        if not all(isinstance(h, runtime.StorageHolder) for h in self._holders):
            return None
        n_in = len(self._in_dtypes)
        n_packed = len(self._packs.addresses) if self._packs is not None else 0
        first_output = n_in + len(self._captures) + n_packed
        layout = native_call.Layout(self._in_dtypes, self.sig.n_outputs, first_output, locked)
        entry = native_call.make(kernel.address, kernel.code, layout)
        if entry is not None:
            entry.set_versions([var.version_cell() for var in self._updated])
        return entry

    def run(self, values: Sequence[Any]) -> list[np.ndarray]:
        """The outputs of one call on `values` (one per input)."""
        native = self._native
        if native is not None:
            outs = native.call(values)
            if outs is not native_call.Entry.declined:
                if self._workspace.checked:
                    self._verify_guard(self._guarded[threading.get_ident()])
                return outs
        planned = self._run_planned(values)
        return planned if planned is not None else self._run_checked(values)

    def _run_planned(self, values: Sequence[Any]) -> list[np.ndarray] | None:
        if type(values) is not list or len(values) != len(self._in_dtypes):
            return None
        shapes, addresses = [], []
        for value, dtype in zip(values, self._in_dtypes, strict=False):  # lengths checked
            # builtin dtypes are singletons: `is` settles the common case cheaply
            if type(value) is not np.ndarray or (value.dtype is not dtype and value.dtype != dtype):
                return None
            try:  # succeeds only for a writable, non-empty, C-contiguous array
                at = _addressof(_char_view(value))  # type: ignore[arg-type]
            except (TypeError, ValueError, BufferError):
                return None
            if at % dtype.itemsize:
                return None
            shapes.append(value.shape)
            addresses.append(at)
        key = tuple(shapes)
        plan = self._plans.get(key)
        if plan is None:
            return None
        return self._call(addresses, plan, key)

    def _run_checked(self, values: Sequence[Any]) -> list[np.ndarray]:
        arrays = self._coerce(values)
        shapes = [a.shape for a in arrays]
        out_shapes = self._checker.output_shapes(
            shapes + [tuple(c.storage.shape) for c in self._captures]
        )
        n_out = self.sig.n_outputs
        for var, shape in zip(self._updated, out_shapes[n_out:], strict=True):
            if tuple(shape) != var.storage.shape:
                raise ValueError(
                    f"{self.sig.where}: the update of variable '{var.name}' has shape {shape}, "
                    f"the variable {var.storage.shape}"
                )
        dims = [shapes[i][a] for i, a in self.sig.dynamic]
        plan = Plan(list(out_shapes[:n_out]), dims, self._workspace_bytes(dims))
        if len(self._plans) >= _PLANS_KEPT:
            self._plans.clear()
        self._plans[tuple(shapes)] = plan
        # copied only now that the call is known to fit (a strided view may be huge); the
        # list holds the copies until the kernel returns
        buffers = [runtime.kernel_buffer(a) for a in arrays]
        return self._call([at for _, at in buffers], plan)

    def _call(
        self, addresses: list[int], plan: Plan, published: tuple[Shape, ...] | None = None
    ) -> list[np.ndarray]:
        """Run the kernel; publish the plan to the native path for inputs of shapes
        `published` if given."""
        writes = runtime.writes()  # before the weights' addresses are read
        outs, out_at = self._outputs(plan.outputs)
        # the variables' arrays, held here until the kernel returns: another thread may
        # give a variable a new array meanwhile, and drop the last other reference
        stored: list[np.ndarray] = []
        if self._holders or self._packs is not None:
            stored, stored_at = self._stored_arrays()
            n_captured = len(self._captures)
            packed: list[int] = []
            if self._packs is not None:
                self._packs.refresh()
                packed = self._packs.addresses
            pointers = [
                *addresses,
                *stored_at[:n_captured],
                *packed,
                *out_at,
                *stored_at[n_captured:],
            ]
        else:
            pointers = addresses + out_at
        pointers.append(self._workspace.address(plan.workspace))
        if self._call_lock is None:
            self._kernel(*pointers, *plan.dims)
        else:
            with self._call_lock:
                self._kernel(*pointers, *plan.dims)
            for var in self._updated:  # other functions' packed copies of it are stale
                runtime.bump_version(var)
            if runtime.writes() == writes + len(self._updated):  # these writes alone
                writes += len(self._updated)
        if self._workspace.checked:
            self._workspace.verify(plan.workspace, self.sig.where)
        native = self._native
        if published is not None and native is not None:
            buffer = self._workspace.buffer()
            if self._workspace.checked:
                self._guarded[threading.get_ident()] = (plan.workspace, buffer)
            if not native.publishes(published, writes, buffer):
                with self._pool.lock:
                    args = [*pointers, *plan.dims]
                    native.publish(published, plan.outputs, args, writes, buffer, stored)
        return outs

    def _verify_guard(self, guarded: tuple[int, np.ndarray | None]) -> None:
        """Check the guard after a native call's workspace, and lay it again. The plan's
        buffer, not this thread's: a thread given an ended one's id runs its plan."""
        nbytes, buffer = guarded
        if buffer is not None:
            self._workspace.verify(nbytes, self.sig.where, buffer)
            runtime.Workspace.lay_guard(buffer, nbytes)

    def _coerce(self, values: Sequence[Any]) -> list[np.ndarray]:
        """The inputs as arrays of the placeholders' dtypes and shapes."""
        where, names = self.sig.where, [name for name, _, _ in self.sig.inputs]
        if isinstance(values, np.ndarray) or not isinstance(values, list | tuple):
            raise TypeError(
                f"{where}: call it with a list of {len(names)} arrays, got {type(values).__name__}"
            )
        if len(values) != len(names):
            raise ValueError(
                f"{where}: expected {len(names)} inputs ({', '.join(names)}), got {len(values)}"
            )
        return [
            coerce_input(value, name, shape, dtype, where)
            for value, (name, shape, dtype) in zip(values, self.sig.inputs, strict=True)
        ]

    def _stored_arrays(self) -> tuple[list[np.ndarray], list[int]]:
        """The captured and updated variables' arrays and where they are (found again
        only if one was given a new array)."""
        stored = self._stored
        arrays = stored[0]
        if len(arrays) == len(self._holders):
            for holder, array in zip(self._holders, arrays, strict=False):  # equal lengths
                if holder.storage is not array:
                    break
            else:
                return stored
        arrays = [h.storage for h in self._holders]
        fresh = (arrays, [runtime.address(a) for a in arrays])
        self._stored = fresh
        return fresh

    def _workspace_bytes(self, dims: list[int]) -> int:
        """The workspace size for these dynamic dims, asked of the compiled code once."""
        key = tuple(dims)
        size = self._workspace_sizes.get(key)
        if size is None:
            if len(self._workspace_sizes) > _PLANS_KEPT:
                self._workspace_sizes.clear()
            size = int(self._ws_size(*dims))
            if size < 0:  # the shape check bounds each tensor; this bounds their sum too
                raise ValueError(
                    f"{self.sig.where}: size overflows: the workspace for dynamic dims "
                    f"{dims} exceeds any addressable size"
                )
            self._workspace_sizes[key] = size
        return size


class OutputPool:
    """The output arrays of a compiled function's calls: two per output, the last two
    calls' (a loop `y = f(x)` holds one while it calls), each reused once the caller has
    dropped it, else a fresh one replaces the older."""

    def __init__(self, dtypes: Sequence[np.dtype], native: native_call.Entry | None = None) -> None:
        self._dtypes = list(dtypes)
        n = len(self._dtypes)
        self._slots: list[list[np.ndarray | None]] = [[None] * n, [None] * n]
        self._addresses = [[0] * n, [0] * n]
        self.lock = threading.Lock()  # held while the slots change or are published
        self._native = native

    def take(self, shapes: Sequence[Shape]) -> tuple[list[np.ndarray], list[int]]:
        """Arrays of `shapes` for a call, and their addresses."""
        # A fresh 16 MiB array costs thousands of page faults per call. Reusing a released
        # one is safe because nothing else can observe it: neither the array nor its memory
        # (which views of it would share through `.base`) is referenced outside the pool.
        (first, second), (first_at, second_at) = self._slots, self._addresses
        arrays: list[np.ndarray] = []
        addresses: list[int] = []
        self.lock.acquire()  # not `with`, which costs twice as much, every call
        try:
            for i, shape in enumerate(shapes):
                for slot, slot_at in ((first, first_at), (second, second_at)):
                    old = slot[i]
                    # expected references: the pool's, `old`, getrefcount's argument; and
                    # of its memory, the array's `.base` and the argument
                    if (
                        old is not None
                        and old.shape == shape
                        and _refcount(old) == 3
                        and _refcount(old.base) == 2
                    ):
                        arrays.append(old)
                        addresses.append(slot_at[i])
                        break
                else:
                    arrays.append(self._replace_older(i, shape))
                    addresses.append(first_at[i])
            return arrays, addresses
        finally:
            self.lock.release()

    def refill(self) -> None:
        """A free array for each output of the native path's plan (which calls this when
        its caller holds both arrays of an output: a loop collecting them): what `take`
        gives, dropped again."""
        native = self._native
        if native is not None:
            self.take(native.out_shapes)

    def _replace_older(self, i: int, shape: Shape) -> np.ndarray:
        """A fresh array for output `i`, which takes the older slot's place."""
        (first, second), (first_at, second_at) = self._slots, self._addresses
        new = runtime.aligned_empty(shape, self._dtypes[i])
        # The native path reads the slots it was given, unlocked: the dropped array
        # outlives its slot there, and `new` is held twice (`new`, the pool) before it
        # is published, so that no other call takes it as free.
        dropped = second[i]
        second[i], second_at[i] = first[i], first_at[i]
        first[i], first_at[i] = new, runtime.address(new)
        if self._native is not None:
            self._native.publish_output(i, (new, second[i]))
        del dropped
        return new


# bound once: a small call spends a tenth of its time finding these by attribute
_char_view = ctypes.c_char.from_buffer
_addressof = ctypes.addressof
_refcount = sys.getrefcount
