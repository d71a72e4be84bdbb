"""The weights blob of an exported model: a 64-byte header, then 64-byte aligned arrays.

Header (little endian): magic "AOTKWTS1", u32 format version, u32 array count, u64 payload
bytes, u64 model fingerprint, u32 CRC-32 of the payload, zero padding to 64 bytes. The
fingerprint hashes every array's name, dtype and shape and the model's graph, so the
runtime refuses the weights of another model, even one with the same layout; the CRC
catches a corrupted file.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass

import numpy as np

MAGIC = b"AOTKWTS1"
VERSION = 1
HEADER = 64
ALIGN = 64
_HEAD = struct.Struct("<8sIIQQI")


@dataclass(frozen=True)
class ArraySlot:
    """One captured array: where it lives in the payload."""

    name: str
    dtype: np.dtype
    shape: tuple[int, ...]
    offset: int
    nbytes: int


def plan(names: list[str], arrays: list[np.ndarray]) -> list[ArraySlot]:
    slots, offset = [], 0
    for name, a in zip(names, arrays, strict=True):
        slots.append(ArraySlot(name, a.dtype, tuple(a.shape), offset, a.nbytes))
        offset += -(-a.nbytes // ALIGN) * ALIGN
    return slots


def fingerprint(slots: list[ArraySlot], graph: str) -> int:
    """64 bits of the hash of the arrays' layout and of the model's graph (its IR)."""
    text = ";".join(f"{s.name}:{s.dtype.name}:{s.shape}" for s in slots)
    return int.from_bytes(hashlib.sha256(f"{text}\0{graph}".encode()).digest()[:8], "little")


def blob(slots: list[ArraySlot], arrays: list[np.ndarray], model: int) -> bytes:
    """Header and payload of the arrays laid out as `slots` says, for the model whose
    fingerprint is `model`."""
    size = max((s.offset + -(-s.nbytes // ALIGN) * ALIGN for s in slots), default=0)
    payload = bytearray(size)
    for s, a in zip(slots, arrays, strict=True):
        payload[s.offset : s.offset + s.nbytes] = np.ascontiguousarray(a).tobytes()
    crc = zlib.crc32(payload) & 0xFFFFFFFF
    head = _HEAD.pack(MAGIC, VERSION, len(slots), size, model, crc)
    return head.ljust(HEADER, b"\0") + bytes(payload)
