"""The ctypes side of calling kernels: aligned buffers for outputs and workspaces.

Buffers aotk allocates start on 64-byte boundaries. Kernels only assume the alignment of
one element (every load and store says so), so a caller's dense row-major array is used
in place, and only strided or misaligned arrays are copied.
"""

from __future__ import annotations

import ctypes
import math
import os
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

ALIGN = 64


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype | str) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on a 64-byte boundary."""
    dtype = np.dtype(dtype)
    count = math.prod(shape)  # `np.prod` and `.ctypes.data` took 4/5 of a small one's 22 us
    # at least one element's room, so that an empty array still has an address
    raw = np.empty(max(count, 1) * dtype.itemsize + ALIGN, dtype=np.uint8)
    start = -address(raw) % ALIGN
    return raw[start : start + count * dtype.itemsize].view(dtype).reshape(shape)


def aligned_copy(a: np.ndarray, dtype: np.dtype | str | None = None) -> np.ndarray:
    out = aligned_empty(a.shape, dtype or a.dtype)
    np.copyto(out, a, casting="unsafe")
    return out


def address(a: np.ndarray) -> int:
    """Where `a`'s data starts. Through the buffer protocol where it can (3x faster than
    `a.ctypes.data`, which builds an object per call: a call's overhead is mostly this)."""
    try:
        # an ndarray is a writable buffer; the stubs do not say so
        return ctypes.addressof(ctypes.c_char.from_buffer(a))  # type: ignore[arg-type]
    except (TypeError, ValueError, BufferError):  # read-only, empty or not contiguous
        return a.ctypes.data


def as_kernel_buffer(a: np.ndarray) -> np.ndarray:
    """`a` itself if a kernel can read it in place, else an aligned copy."""
    return kernel_buffer(a)[0]


def kernel_buffer(a: np.ndarray) -> tuple[np.ndarray, int]:
    """`a` itself if a kernel can read it in place (dense, row-major, aligned to its
    element size), else an aligned copy; with its address, found once."""
    at = address(a)
    if a.flags.c_contiguous and at % a.dtype.itemsize == 0:
        return a, at
    copy = aligned_copy(a)
    return copy, address(copy)


class SlotAddresses:
    """The addresses of arrays that seldom change (captured variables), one slot each:
    recomputed only when a slot holds another array than last time."""

    def __init__(self, slots: int) -> None:
        self._arrays: list[np.ndarray | None] = [None] * slots
        self._addresses = [0] * slots

    def get(self, slot: int, a: np.ndarray) -> int:
        if self._arrays[slot] is not a:
            self._addresses[slot] = address(a)
            self._arrays[slot] = a
        return self._addresses[slot]


class _AtThreadEnd:
    """Kept in a thread-local: when the thread ends, its locals go, and this calls
    `on_end` with the thread's id."""

    def __init__(self, on_end: Callable[[int], None]) -> None:
        self._on_end, self._thread = on_end, threading.get_ident()

    def __del__(self) -> None:
        self._on_end(self._thread)


class Workspace:
    """Scratch memory for intermediates: grows on demand, one buffer per thread.

    With `AOTK_CHECK_WORKSPACE=1` (the test suite sets it), GUARD bytes of a pattern
    follow each call's workspace and are checked after it: a kernel that writes past
    its workspace (a wrong size computed for it) raises instead of corrupting the heap.
    """

    GUARD = 4096
    PATTERN = 0xA5

    def __init__(
        self,
        on_move: Callable[[], None] | None = None,
        on_end: Callable[[int], None] | None = None,
    ) -> None:
        """`on_move`: called before a thread's buffer is replaced (and freed); `on_end`:
        with the id of a thread that had a buffer, when the thread ends."""
        self._local = threading.local()
        self.checked = os.environ.get("AOTK_CHECK_WORKSPACE", "0") not in ("0", "")
        self._on_move = on_move
        self._on_end = on_end

    def get(self, nbytes: int) -> np.ndarray:
        return self._held(nbytes)[2]

    def buffer(self) -> np.ndarray | None:
        """This thread's buffer, if it has one."""
        held = getattr(self._local, "held", None)
        return None if held is None else held[2]

    def address(self, nbytes: int) -> int:
        """The address of this thread's buffer of at least `nbytes`; 0 for none (a
        kernel that needs no workspace never reads its pointer)."""
        if not self.checked:
            return self._held(nbytes)[1] if nbytes else 0
        _, start, buf = self._held(nbytes + self.GUARD)
        self.lay_guard(buf, nbytes)
        return start

    @classmethod
    def lay_guard(cls, buf: np.ndarray, nbytes: int) -> None:
        """Fill the GUARD bytes after the first `nbytes` of `buf` with the pattern."""
        buf[nbytes : nbytes + cls.GUARD] = cls.PATTERN

    def verify(self, nbytes: int, where: str, buf: np.ndarray | None = None) -> None:
        """Raise if the guard after `nbytes` of `buf` (by default this thread's buffer,
        as `address` set it) was written."""
        if buf is None:
            buf = self._held(nbytes + self.GUARD)[2]
        guard = buf[nbytes : nbytes + self.GUARD]
        written = np.flatnonzero(guard != self.PATTERN)
        if written.size:
            raise RuntimeError(
                f"{where}: the kernel wrote {written[-1] + 1} bytes past its workspace of "
                f"{nbytes} bytes (a wrong workspace size: a bug in aotk)"
            )

    def _held(self, nbytes: int) -> tuple[int, int, np.ndarray]:
        """(size, address, buffer) of this thread's buffer, grown to `nbytes` if needed."""
        held = getattr(self._local, "held", None)
        if held is None or held[0] < nbytes:
            if held is not None and self._on_move is not None:
                self._on_move()
            if held is None and self._on_end is not None:
                self._local.ending = _AtThreadEnd(self._on_end)
            buf = aligned_empty((max(nbytes, ALIGN),), "uint8")
            self._local.held = held = (buf.nbytes, address(buf), buf)
        return held


# bump_version calls so far, in memory the native call path reads (`native_call`):
# packed copies and published plans look again only when it moved
_writes = ctypes.c_int64(0)


def bump_version(holder: Any) -> None:
    """Record that a variable's array was written: packed copies of it are stale
    (`aotk.weight_packs`). The native call path moves the same counts (`native_call`)."""
    if isinstance(holder, StorageHolder):
        holder.version_cell()[0] += 1
    else:
        holder.version = getattr(holder, "version", 0) + 1
    _writes.value += 1


def writes() -> int:
    """How many times variables were written (`bump_version`) in this process."""
    return _writes.value


def writes_address() -> int:
    """Where `writes()` is kept."""
    return ctypes.addressof(_writes)


class StorageHolder:
    """Something captured whose array is its `storage`: binding another array to it
    counts as a write, so that code holding the old one's address finds the new one."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "storage":
            _writes.value += 1

    @property
    def version(self) -> int:
        """How many times its array was written (`bump_version`)."""
        cell = self.__dict__.get("_version")
        return 0 if cell is None else int(cell[0])

    def version_cell(self) -> np.ndarray:
        """The int64 array of one element that holds `version`, which native code moves."""
        cell = self.__dict__.get("_version")
        if cell is None:  # setdefault: two threads asking at once get the same cell
            cell = self.__dict__.setdefault("_version", np.zeros(1, np.int64))
        return cell
