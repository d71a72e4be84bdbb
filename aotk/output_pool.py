"""The output arrays of a compiled function's calls, reused once the caller drops them."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence

import numpy as np

from aotk import native_call, runtime

Shape = tuple[int, ...]


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


_refcount = sys.getrefcount  # bound once: `take` asks it twice per output
