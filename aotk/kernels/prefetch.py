"""Software prefetch: a kernel asks for a cache line some time before it touches it.

The hardware prefetchers follow a stream only while the loop's own misses drive them,
so a kernel that computes between its passes over memory leaves memory idle meanwhile
(`matmul_prefetch`, `row_reductions`). `llvm.prefetch` never faults, but its address is
an inbounds GEP once lowered, so callers keep the element inside its buffer.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerAttr, i32

from aotk import dtypes
from aotk.kernels.kernel import Buf, DimV, Kernel

LINE_BYTES = 64
# llvm.prefetch's arguments after the address: a read (0) or a write (1), into L2
# (locality 2 of 0-3), data
_READ, _WRITE, _INTO_L2, _DATA = 0, 1, 2, 1


def prefetch(k: Kernel, buf: Buf, offset: DimV, *, write: bool = False) -> None:
    """Ask for the cache line holding element `offset` of `buf` to be brought into L2:
    to be read, or with `write` to be written (x86's prefetchw fetches it owned, so the
    store that follows does not wait for the line's other copies to be invalidated)."""
    at = k.moved(k.pointer(buf.mem), k.mul(offset, dtypes.byte_size(buf.elem)))
    flags = [
        k.b.insert(llvm.ConstantOp(IntegerAttr(v, i32), i32)).result
        for v in (_WRITE if write else _READ, _INTO_L2, _DATA)
    ]
    k.b.insert(llvm.CallIntrinsicOp("llvm.prefetch.p0", [at, *flags], []))
