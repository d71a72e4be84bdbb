"""Calling a compiled kernel from Python: input checks, output buffers, the native call.

A call with input shapes not seen before takes the checked path: each input is coerced
to its placeholder's dtype and checked against its shape (`call_check`), and the output
shapes are inferred, so an impossible broadcast is a ValueError before native code runs.
What those shapes determine (output shapes, dynamic dims, workspace size) is then kept as
a plan. A later call whose inputs are dense, aligned, writable arrays of exactly the
placeholders' dtypes, in shapes planned before, takes the planned path: a few attribute
reads per array, then the native call. Anything else takes the checked path again.

A planned call publishes its plan to the native call path (`native_call`), which then
runs the same thread's calls of those shapes without Python bytecode (each thread has a
plan of its own), until something it cannot see changes (a variable written elsewhere,
the thread's workspace grown). A function that writes its variables runs one call at a
time, on either path.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aotk import native_call, native_inputs, runtime
from aotk.call_check import ShapeChecker, coerce_input
from aotk.native_inputs import Inputs, Scalar
from aotk.output_pool import OutputPool

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
        self._scalars: dict[tuple[int, type, object], np.ndarray] = {}  # `_scalar_input`
        self._workspace_sizes: dict[tuple[int, ...], int] = {}
        self._packs = packs  # `weight_packs.Packs`: copies of weights, after the captures
        self._native = native = self._native_entry(kernel, locked)
        # a training step reads and writes its variables: its calls run one at a time
        self._call_lock: Any = None
        if locked:
            self._call_lock = native.mutex if native is not None else threading.Lock()
        self._pool = OutputPool(signature.out_dtypes[: signature.n_outputs], self._native)
        if self._native is not None:
            self._native.set_refill(self._pool.refill)
        self._outputs = self._pool.take
        # thread -> its published plan's workspace: bytes used, and the buffer
        self._guarded: dict[int, tuple[int, np.ndarray | None]] = {}
        # the plan published points into this thread's workspace: withdrawn if it moves,
        # and let go of (with the workspace) when the thread ends
        self._workspace = runtime.Workspace(
            native.retract if native else None,
            _forgetting(native, self._pool.lock, self._guarded) if native else None,
        )

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
        if type(values) is not list and type(values) is not tuple:
            return None
        if len(values) != len(self._in_dtypes):
            return None
        shapes, addresses = [], []
        scalars: list[Scalar] = []
        fed: list[tuple[int, np.dtype]] = []  # arrays of other dtypes the C side converts
        copies: list[np.ndarray] = []  # inputs converted to their dtype, held for the call
        for value, dtype in zip(values, self._in_dtypes, strict=False):  # lengths checked
            if type(value) is not np.ndarray:
                converted = self._scalar_input(len(shapes), value)
                if converted is None:
                    return None
                scalars.append((len(shapes), value, converted))
                value = converted
            # builtin dtypes are singletons: `is` settles the common case cheaply
            elif value.dtype is not dtype and value.dtype != dtype:
                converted = self._converted(len(shapes), value)
                if converted is None:
                    return None
                if native_inputs.converts(value, converted):
                    fed.append((len(shapes), value.dtype))
                copies.append(converted)
                value = converted
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
        return self._call(addresses, plan, Inputs(key, tuple(scalars), tuple(fed)))

    def _converted(self, i: int, value: object) -> np.ndarray | None:
        """Input `i` converted to its dtype as the checked path converts it (float64 data
        for a float32 placeholder, say: Keras feeds what the user gave); None where the
        checked path would raise."""
        name, shape, dtype = self.sig.inputs[i]
        try:
            return coerce_input(value, name, shape, dtype, self.sig.where)
        except (TypeError, ValueError):
            return None

    def _scalar_input(self, i: int, value: object) -> np.ndarray | None:
        """The 0-d array that a Python or NumPy scalar fed to input `i`, of rank 0,
        converts to (as Keras feeds the learning phase: 1 or 0.), converted and checked
        once per value; None for anything else, or a value the checked path rejects."""
        scalar = isinstance(value, bool | int | float | np.number | np.bool_)
        if not scalar or self.sig.inputs[i][1]:
            return None
        key = (i, type(value), value)
        array = self._scalars.get(key)
        if array is None:
            converted = self._converted(i, value)
            if converted is None:
                return None
            array = np.array(converted)  # its own memory, which the cache keeps
            if len(self._scalars) >= _PLANS_KEPT:
                self._scalars.clear()
            self._scalars[key] = array
        return array

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
        try:
            return self._call([at for _, at in buffers], plan)
        except MemoryError as err:
            self._plans.pop(tuple(shapes), None)  # a later call of these shapes says it again
            raise MemoryError(
                f"{self.sig.where}: inputs of shapes {', '.join(map(str, shapes))} need "
                f"outputs of shapes {', '.join(map(str, plan.outputs))} and "
                f"{plan.workspace} bytes of workspace; they cannot be allocated ({err})"
            ) from None

    def _call(
        self, addresses: list[int], plan: Plan, published: Inputs | None = None
    ) -> list[np.ndarray]:
        """Run the kernel; publish the plan to the native path for inputs fed as
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
            writes = self._count_writes(writes)
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
                    native.publish(published, plan.outputs, args, writes, (buffer, stored))
        return outs

    def _count_writes(self, writes: int) -> int:
        """After a call that wrote the updated variables (in place): move their versions
        (other functions' packed copies of them are stale), and count these writes as
        seen by the native plan, as a native call does; `writes` (read before the call)
        moved past them if no other write came between."""
        before, n = runtime.writes(), len(self._updated)
        for var in self._updated:
            runtime.bump_version(var)
        if self._native is not None:
            self._native.advance(before, n)
        return writes + n if before == writes else writes

    def _verify_guard(self, guarded: tuple[int, np.ndarray | None]) -> None:
        """Check the guard after a native call's workspace, and lay it again: in the
        buffer of this thread's plan, which that plan holds."""
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


def _forgetting(
    native: native_call.Entry, lock: threading.Lock, guarded: dict[int, Any]
) -> Callable[[int], None]:
    """What lets go of the plan and guard of a thread that ended, its workspace with them
    (it holds neither the `CallPath` nor its workspace: no cycle through a thread-local)."""

    def thread_ended(thread: int) -> None:
        guarded.pop(thread, None)
        with lock:  # no plan is published into its state meanwhile
            native.forget(thread)

    return thread_ended


# bound once: a small call spends a tenth of its time finding these by attribute
_char_view = ctypes.c_char.from_buffer
_addressof = ctypes.addressof
