"""The NumPy oracle of `aotk.random_uniform` and `aotk.random_normal`.

It draws the same Philox-4x32-10 words as the compiled code (`aotk.kernels.philox`) and
applies the same transforms, so uniform samples agree bit for bit; normals go through
float64 log/sin/cos here and through aotk's polynomial kernels there, so they agree to a
few ulp. Also the constants and checks that the op's infer and lower rules share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from aotk.kernels.philox import MAX_REDRAWS, MUL, ROUNDS, TRUNCATE, WEYL, per_block

_W32 = 0xFFFFFFFF
_W64 = 0xFFFFFFFFFFFFFFFF


def compute_dtype(dtype: str) -> type[np.floating[Any]]:
    return np.float64 if dtype == "float64" else np.float32


def uniform_scale(dtype: str, minval: float, maxval: float) -> float:
    """maxval - minval, as the kernel's compute type rounds it."""
    ct = compute_dtype(dtype)
    return float(ct(maxval) - ct(minval))


def uniform_bounds(dtype: str, minval: float, maxval: float) -> tuple[float, float]:
    """The least and greatest values of `dtype` in [minval, maxval); raise if there are none."""
    if not (math.isfinite(minval) and math.isfinite(maxval)):
        raise ValueError(f"minval and maxval must be finite, got {minval} and {maxval}")
    if not minval < maxval:
        raise ValueError(f"minval {minval} must be less than maxval {maxval}")
    st = np.dtype(dtype).type
    low, high = st(minval), st(maxval)
    if float(low) < minval:
        low = np.nextafter(low, st(np.inf))
    if float(high) >= maxval:
        high = np.nextafter(high, st(-np.inf))
    if float(low) > float(high):
        raise ValueError(f"no {dtype} value lies in [{minval}, {maxval})")
    return float(low), float(high)


def philox(blocks: np.ndarray, seed: int, calls: int) -> list[np.ndarray]:
    """Philox-4x32-10 words (as uint64 arrays) of counters (block lo, block hi, calls lo, hi)."""
    blocks = blocks.astype(np.uint64)
    c0, c1 = blocks & np.uint64(_W32), blocks >> np.uint64(32)
    c2 = np.full_like(blocks, calls & _W32)
    c3 = np.full_like(blocks, (calls >> 32) & _W32)
    k0, k1 = seed & _W32, (seed >> 32) & _W32
    m0, m1, shift, mask = np.uint64(MUL[0]), np.uint64(MUL[1]), np.uint64(32), np.uint64(_W32)
    for _ in range(ROUNDS):
        p0, p1 = c0 * m0, c2 * m1
        c0, c1, c2, c3 = (
            (p1 >> shift) ^ c1 ^ np.uint64(k0),
            p1 & mask,
            (p0 >> shift) ^ c3 ^ np.uint64(k1),
            p0 & mask,
        )
        k0, k1 = (k0 + WEYL[0]) & _W32, (k1 + WEYL[1]) & _W32
    return [c0, c1, c2, c3]


def unit_f32(word: np.ndarray, bits: int = 23) -> np.ndarray:
    """float32 in [0, 1): the low `bits` bits as the top of a mantissa of [1, 2), minus 1."""
    mant = (word & np.uint64((1 << bits) - 1)) << np.uint64(23 - bits)
    return (mant | np.uint64(0x3F800000)).astype(np.uint32).view(np.float32) - np.float32(1)


def unit_f64(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """float64 in [0, 1) from the low 52 bits of two 32-bit words."""
    mant = ((hi << np.uint64(32)) | lo) & np.uint64((1 << 52) - 1)
    return (mant | np.uint64(0x3FF0000000000000)).view(np.float64) - 1.0


def units(words: list[np.ndarray], dtype: str, normal: bool) -> np.ndarray:
    """Uniform [0, 1) samples of each block, shape (blocks, per_block)."""
    if dtype == "float64":
        return np.stack([unit_f64(words[0], words[1]), unit_f64(words[2], words[3])], axis=-1)
    bits = 10 if dtype == "float16" and not normal else 23
    return np.stack([unit_f32(w, bits) for w in words], axis=-1)


def sincos_turns(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin, cos) of 2*pi*t with the kernel's exact quarter-turn reduction."""
    q = np.floor(4 * t + 0.5)
    x = (t - q / 4) * (2 * np.pi)
    s, c = np.sin(x), np.cos(x)
    odd = (q == 1) | (q == 3)
    s, c = np.where(odd, c, s), np.where(odd, s, c)
    return np.where((q == 2) | (q == 3), -s, s), np.where((q == 1) | (q == 2), -c, c)


def normals(words: list[np.ndarray], dtype: str) -> np.ndarray:
    """Standard normal samples of each block (Box-Muller), in the compute dtype."""
    u = units(words, dtype, normal=True).astype(np.float64)
    pairs = [(0, 1)] if dtype == "float64" else [(0, 1), (2, 3)]
    out = []
    for a, b in pairs:
        radius = np.sqrt(-2.0 * np.log(1.0 - u[..., a]))
        s, c = sincos_turns(u[..., b])
        out += [radius * c, radius * s]
    return np.stack(out, axis=-1).astype(compute_dtype(dtype))


def _dims(like: Sequence[np.ndarray], shape: Sequence[int], like_axes: Sequence[int]) -> list[int]:
    return [like[0].shape[a] if a >= 0 else d for d, a in zip(shape, like_axes, strict=True)]


def _advance(state: np.ndarray) -> tuple[int, int]:
    """(seed, calls) as unsigned 64-bit ints; add one to calls in place."""
    seed, calls = int(state[0]) & _W64, int(state[1]) & _W64
    nxt = (calls + 1) & _W64
    state[1] = nxt - (1 << 64) if nxt >= 1 << 63 else nxt
    return seed, calls


def uniform(
    state: np.ndarray,
    *like: np.ndarray,
    dtype: str,
    shape: Sequence[int],
    like_axes: Sequence[int],
    minval: float,
    maxval: float,
    **_: Any,
) -> np.ndarray:
    dims = _dims(like, shape, like_axes)
    n, m = math.prod(dims), per_block(dtype)
    seed, calls = _advance(state)
    u = units(philox(np.arange(-(-n // m)), seed, calls), dtype, normal=False).reshape(-1)[:n]
    ct = compute_dtype(dtype)
    low, high = uniform_bounds(dtype, minval, maxval)
    v = ct(minval) + ct(uniform_scale(dtype, minval, maxval)) * u
    v = np.minimum(np.maximum(v, ct(low)), ct(high))
    return v.astype(dtype).reshape(dims)


def normal(
    state: np.ndarray,
    *like: np.ndarray,
    dtype: str,
    shape: Sequence[int],
    like_axes: Sequence[int],
    mean: float,
    stddev: float,
    truncated: bool,
    **_: Any,
) -> np.ndarray:
    dims = _dims(like, shape, like_axes)
    n, m = math.prod(dims), per_block(dtype)
    blocks = -(-n // m)
    seed, calls = _advance(state)
    z = normals(philox(np.arange(blocks), seed, calls), dtype).reshape(-1)[:n]
    ct = compute_dtype(dtype)
    if truncated:
        z = np.where(np.abs(z) < TRUNCATE, z, ct(np.nan))
    v = ct(mean) + ct(stddev) * z
    if truncated:
        bad = np.flatnonzero(np.isnan(v))
        v[bad] = ct(mean) + ct(stddev) * _redraw(bad, blocks, m, seed, calls, dtype)
    return v.astype(dtype).reshape(dims)


def _redraw(bad: np.ndarray, blocks: int, m: int, seed: int, calls: int, dtype: str) -> np.ndarray:
    """The first accepted value of each rejected element, over attempts 1, 2, ..."""
    z = np.zeros(len(bad), compute_dtype(dtype))
    todo = np.ones(len(bad), bool)
    for attempt in range(1, MAX_REDRAWS + 1):
        idx = np.flatnonzero(todo)
        if not len(idx):
            break
        counters = attempt * blocks + bad[idx] // m
        drawn = normals(philox(counters, seed, calls), dtype)[np.arange(len(idx)), bad[idx] % m]
        ok = np.abs(drawn) < TRUNCATE
        z[idx[ok]] = drawn[ok]
        todo[idx[ok]] = False
    return z
