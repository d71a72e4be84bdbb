"""Calling a compiled kernel from Python: input checks, output buffers, the native call.

A call with input shapes not seen before takes the checked path: each input is coerced
to its placeholder's dtype and checked against its shape (`call_check`), and the output
shapes are inferred, so an impossible broadcast is a ValueError before native code runs.
What those shapes determine (output shapes, dynamic dims, workspace size) is then kept as
a plan. A later call whose inputs are dense, aligned, writable arrays of exactly the
placeholders' dtypes, in shapes planned before, takes the planned path: a few attribute
reads per array, then the native call. Anything else takes the checked path again.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from aotk import runtime
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


class CallPath:
    """Runs one compiled kernel on lists of arrays, from any thread."""

    def __init__(
        self,
        signature: Signature,
        kernel: Callable[..., Any],
        workspace_size: Callable[..., int],
        checker: ShapeChecker,
        state: tuple[list[Any], list[Any]],
        locked: bool,
        packs: Any = None,
    ) -> None:
        self.sig, self._kernel, self._ws_size, self._checker = (
            signature,
            kernel,
            workspace_size,
            checker,
        )
        self._captures, self._updated = state  # objects with a `storage` array
        self._holders = [*self._captures, *self._updated]
        # the variables' arrays and their addresses, replaced together (calls may race)
        self._stored: tuple[list[np.ndarray], list[int]] = ([], [])
        self._stored_addresses()
        self._in_dtypes = [dtype for _, _, dtype in signature.inputs]
        self._plans: dict[tuple[Shape, ...], Plan] = {}
        self._workspace_sizes: dict[tuple[int, ...], int] = {}
        self._workspace = runtime.Workspace()
        self._outputs = OutputPool(signature.out_dtypes[: signature.n_outputs]).take
        self._call_lock = threading.Lock() if locked else None
        self._packs = packs  # `weight_packs.Packs`: copies of weights, after the captures

    def run(self, values: Sequence[Any]) -> list[np.ndarray]:
        """The outputs of one call on `values` (one per input)."""
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
        plan = self._plans.get(tuple(shapes))
        if plan is None:
            return None
        return self._call(addresses, plan)

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

    def _call(self, addresses: list[int], plan: Plan) -> list[np.ndarray]:
        outs, out_at = self._outputs(plan.outputs)
        if self._holders or self._packs is not None:
            stored_at = self._stored_addresses()
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
            with self._call_lock:  # a training step reads and writes its variables
                self._kernel(*pointers, *plan.dims)
            for var in self._updated:  # other functions' packed copies of it are stale
                runtime.bump_version(var)
        if self._workspace.checked:
            self._workspace.verify(plan.workspace, self.sig.where)
        return outs

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

    def _stored_addresses(self) -> list[int]:
        """Where the captured and updated variables' arrays are (found again only if one
        was given a new array)."""
        arrays, addresses = self._stored
        if len(arrays) == len(self._holders):
            for holder, array in zip(self._holders, arrays, strict=False):  # equal lengths
                if holder.storage is not array:
                    break
            else:
                return addresses
        arrays = [h.storage for h in self._holders]
        fresh = (arrays, [runtime.address(a) for a in arrays])
        self._stored = fresh
        return fresh[1]

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
    """The output arrays of a compiled function's calls: last call's when the caller has
    dropped them, else fresh ones."""

    def __init__(self, dtypes: Sequence[np.dtype]) -> None:
        self._dtypes = list(dtypes)
        self._arrays: list[np.ndarray | None] = [None] * len(dtypes)
        self._addresses = [0] * len(dtypes)
        self._lock = threading.Lock()

    def take(self, shapes: Sequence[Shape]) -> tuple[list[np.ndarray], list[int]]:
        """Arrays of `shapes` for a call, and their addresses."""
        # A fresh 16 MiB array costs thousands of page faults per call. Reusing a released
        # one is safe because nothing else can observe it: neither the array nor its memory
        # (which views of it would share through `.base`) is referenced outside the pool.
        pool, pool_at = self._arrays, self._addresses
        self._lock.acquire()  # not `with`, which costs twice as much, every call
        try:
            for i, shape in enumerate(shapes):
                old = pool[i]
                # expected references: the pool's, `old`, getrefcount's argument; and
                # of its memory, the array's `.base` and the argument
                if (
                    old is None
                    or old.shape != shape
                    or not (_refcount(old) == 3 and _refcount(old.base) == 2)
                ):
                    del old
                    pool[i] = new = runtime.aligned_empty(shape, self._dtypes[i])
                    pool_at[i] = runtime.address(new)
            return pool[:], pool_at[:]  # type: ignore[return-value]
        finally:
            self._lock.release()


# bound once: a small call spends a tenth of its time finding these by attribute
_char_view = ctypes.c_char.from_buffer
_addressof = ctypes.addressof
_refcount = sys.getrefcount
