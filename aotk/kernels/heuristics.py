"""Tile sizes and other target-dependent choices, kept apart from the passes' mechanism."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from aotk.kernels.kernel import DimV

L1_BYTES = 32 * 1024
# Rows of B whose length has this power of two (or a larger one) as a factor fall in few
# cache sets: 2 KiB apart, every 32nd set of a line's 64 in L1; in an L2 of ALIASING_L2
# bytes, the K rows of a sliver (a line each) overflow their sets once K times that power
# exceeds it. ALIASING_L2 is the L2 where the rule was measured (2 MiB a core); the tiles
# still assume L2_BYTES.
ALIASED_ROW_BYTES = 2048
ALIASING_L2 = 2 * 1024 * 1024
L2_BYTES = 1024 * 1024
# 256-bit vectors: the row reductions' (memory-bound, they gained nothing from zmm) and
# conv tiles' whose output channels do not fill a zmm.
VECTOR_BYTES = 32
# (bytes per vector register, registers) by instruction set
VECTOR_SHAPES = {"sse": (16, 16), "avx": (32, 16), "avx2": (32, 16), "avx512": (64, 32)}
# the instruction sets whose CPUs multiply-add in one rounding (FMA3): "avx" is AVX
# without them (Sandy Bridge, or a target given AVX but not FMA)
WITH_FMA = ("avx2", "avx512")
# features that imply others which decide the instruction set, as LLVM enables them
IMPLIED = (("avx512f", ("avx2", "fma")), ("avx2", ("avx",)), ("fma", ("avx",)))
# the instruction set kernels are compiled for, when not the host's: per thread, so an
# export for another CPU does not change what a JIT compile on another thread does
_pinned: ContextVar[str | None] = ContextVar("aotk_tiled_for", default=None)


def pin_vector_shape(isa: str | None) -> None:
    """Tile kernels for `isa` (a key of VECTOR_SHAPES) rather than for this host; None:
    for the host again. For printing IR that is the same on every machine (aotk-opt's
    --aotk-tile-for, its lit tests): the code stays correct on any x86-64 host, where
    LLVM splits or merges vectors, but only the host's shape is fast."""
    if isa is not None and isa not in VECTOR_SHAPES:
        raise ValueError(f"tiles for {isa!r}: expected one of {', '.join(VECTOR_SHAPES)}")
    _pinned.set(isa)


@contextmanager
def tiled_for(isa: str) -> Iterator[None]:
    """Kernels lowered in the block are compiled for `isa` (`isa_of` a target's features):
    tiled for its vector registers, and multiply-adds fused only where it has FMA."""
    previous = _pinned.get()
    pin_vector_shape(isa)
    try:
        yield
    finally:
        _pinned.set(previous)


def isa_of(features: Iterable[str]) -> str:
    """The key of VECTOR_SHAPES that code for a CPU with `features` (names without a
    sign: "avx2") is compiled for."""
    have = set(features)
    for feature, implied in IMPLIED:  # in order: each may imply the next ones
        if feature in have:
            have.update(implied)
    if {"avx512f", "avx512vl", "fma"} <= have:
        return "avx512"
    if {"avx2", "fma"} <= have:
        return "avx2"
    return "avx" if "avx" in have else "sse"


def has_fma() -> bool:
    """Whether the target multiplies and adds in one rounding (else `math.fma` on f32 is
    computed in f64: `arith_to_llvm`)."""
    return (_pinned.get() or host_isa()) in WITH_FMA


@functools.cache
def host_isa() -> str:
    """`isa_of` this host's features."""
    from aotk.codegen import llvm_ir

    return isa_of(llvm_ir.required_features(llvm_ir.host_features()))


def narrow_vector_bytes() -> int:
    """Bytes of the vectors of memory-bound kernels and of conv tiles whose output
    channels do not fill the widest: VECTOR_BYTES, or the target's when narrower (SSE)."""
    return min(VECTOR_BYTES, vector_shape()[0])


def vector_registers() -> int:
    """Vector registers of the target: AVX-512VL gives 32 (also as ymm), AVX and SSE 16."""
    return vector_shape()[1]


def vector_shape() -> tuple[int, int]:
    """(bytes per vector register, registers) of the target kernels are compiled for.

    LLVM emits explicit 512-bit vector ops as zmm code on AVX-512 hosts (its own loop
    vectorizer stays at 256 bits there), which has 32 of them; AVX2 has 16 of 32 bytes.
    """
    return VECTOR_SHAPES[_pinned.get() or host_isa()]


@dataclass(frozen=True)
class MatmulTiles:
    """Blocking of C[M, N] = A[M, K] @ B[K, N].

    Panel path (`matmul_microkernel`): `panels` lists (rows, k_unroll) shapes, most rows
    first and ending with one row; a panel keeps rows * k_unroll broadcasts of A, rows
    accumulators and one B vector in registers. A `kc` x `nc` block of B stays in L2
    while the panels of every row pass over it; the strip of C they update stays in L1.
    Packed path (`matmul_packed`): `mr` x `nr` vectors of C in registers over a
    `packed_kc` x `packed_nc` block of B copied to scratch, used when M is at least
    `packed_min_rows` (below, copying B costs more than the faster tiles save), or
    `aliased_min_rows` when B's rows alias in the caches (see `packs_b`).
    """

    lanes: int
    panels: tuple[tuple[int, int], ...]
    kc: int
    nc: int
    mr: int = 6
    nr: int = 2
    packed_kc: int = 256
    packed_nc: int = 256
    packed_min_rows: int = 64
    aliased_min_rows: int = 32

    def __post_init__(self) -> None:
        if (
            self.panels[-1][0] != 1
            or self.nc % self.lanes
            or self.packed_nc % (self.nr * self.lanes)
        ):
            raise ValueError(f"inconsistent matmul tiles {self}")


def matmul_tiles(elem_bytes: int, m: DimV, n: DimV, kdim: DimV) -> MatmulTiles:
    """Tiles for a contraction of `elem_bytes`-wide floats (4 or 8)."""
    vector_bytes, registers = vector_shape()
    lanes = vector_bytes // elem_bytes
    if registers >= 32:
        # 16 broadcasts + 4 accumulators + 1 B vector; packed: 24 accumulators + 3 B + 1 A
        panels, mr, nr = ((4, 4), (2, 8), (1, 8)), 8, 3
    else:
        panels, mr, nr = ((4, 2), (2, 4), (1, 8)), 6, 2
    rows = panels[0][0]
    # the rows x nc strip of C in half of L1, a kc x nc block of B in a quarter of L2
    nc = max(lanes, L1_BYTES // 2 // (rows * elem_bytes) // lanes * lanes)
    kc = max(8, L2_BYTES // 4 // (nc * elem_bytes))
    width = nr * lanes
    packed_kc = 256
    packed_nc = max(width, L2_BYTES // 4 // (packed_kc * elem_bytes) // width * width)
    return MatmulTiles(lanes, panels, kc, nc, mr, nr, packed_kc, packed_nc, aliased_min_rows=4 * mr)


def matmul_k_block(kdim: DimV, n: DimV) -> int:
    """Rows of B per block for the scalar (integer, float16) kernel."""
    row_bytes = 4 * (n if isinstance(n, int) else 1024)
    kb = max(16, min(256, L2_BYTES // 2 // max(row_bytes, 1)))
    if isinstance(kdim, int):
        kb = min(kb, max(kdim, 1))
    return kb


def packs_b(
    tiles: MatmulTiles, m: int, shape: tuple[int, int, int], b_t: bool, threads: int
) -> bool:
    """Whether a float matmul of M rows packs B (stored [K, N], or [N, K] with `b_t`) on
    `threads` threads; `shape` is (N, K, element bytes). A transposed B from two row
    tiles (unpacked it is read by dot products); else from `packed_min_rows`, or from
    `aliased_min_rows` when `aliased_rows` says in place would thrash."""
    if b_t:
        return m >= 2 * tiles.mr
    n, kdim, elem_bytes = shape
    aliased = aliased_rows(n * elem_bytes, kdim, threads)
    return m >= (tiles.aliased_min_rows if aliased else tiles.packed_min_rows)


def aliased_rows(row_bytes: int, kdim: int, threads: int) -> bool:
    """Whether B's K rows `row_bytes` long, read in place, overflow the L2 sets they fall
    in (see ALIASED_ROW_BYTES) while a thread's share of B's columns overflows the L2
    too: then each sliver comes again from beyond L2 for every row tile. Measured at 32
    rows of a 784 x 1024 float32 B: packed ran 1.5x faster at one thread; at two, whose
    halves of B each stay in an L2 from call to call, packing showed no steady gain (and
    256 x 1024, 128 x 512 and 784 x 512 ran up to 2x slower packed)."""
    power = row_bytes & -row_bytes  # the largest power of two dividing row_bytes
    share = kdim * row_bytes // max(threads, 1)
    return power >= ALIASED_ROW_BYTES and kdim * power > ALIASING_L2 and share > ALIASING_L2
