"""The on-disk compile cache, and the byte format of native code it shares with pickles.

An entry is keyed on everything that decides the machine code: the traced IR (without
value names), the target CPU and features, and the versions of aotk (plus a fingerprint
of its sources), xDSL and llvmlite. Several processes may compile at once: a per-entry
file lock makes the second one wait and reuse the first one's work, and entries appear
by atomic rename, so a reader never sees half a file. An entry that fails its checksum
is deleted and compiled again.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import struct
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

import aotk
from aotk import paths
from aotk.lowering.jit import NativeCode

MAGIC = b"AOTKNC01"
_LENGTH = struct.Struct("<Q")


class CorruptNativeCode(ValueError):
    """Bytes that are not native code written by this format (truncated, altered, other)."""


def encode(code: NativeCode, meta: dict[str, Any]) -> bytes:
    """Object code, signatures, optimized IR and caller metadata as one checksummed blob."""
    ir = zlib.compress(code.llvm_ir.encode(), 1)
    payload = code.obj + ir
    header = {
        "signatures": code.signatures,
        "obj_size": len(code.obj),
        "ir_size": len(ir),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "meta": meta,
    }
    head = json.dumps(header, sort_keys=True).encode()
    return MAGIC + _LENGTH.pack(len(head)) + head + payload


def decode(blob: bytes) -> tuple[NativeCode, dict[str, Any]]:
    """The inverse of `encode`; raises CorruptNativeCode on any damage."""
    if blob[: len(MAGIC)] != MAGIC:
        raise CorruptNativeCode("not aotk native code (bad magic)")
    try:
        (n,) = _LENGTH.unpack_from(blob, len(MAGIC))
        start = len(MAGIC) + _LENGTH.size
        header = json.loads(blob[start : start + n])
        payload = blob[start + n :]
        sizes = header["obj_size"] + header["ir_size"]
    except (struct.error, ValueError, KeyError, TypeError) as err:
        raise CorruptNativeCode(f"unreadable header ({err})") from None
    if len(payload) != sizes or hashlib.sha256(payload).hexdigest() != header["sha256"]:
        raise CorruptNativeCode("checksum mismatch (truncated or altered)")
    obj, ir = payload[: header["obj_size"]], payload[header["obj_size"] :]
    code = NativeCode(obj, dict(header["signatures"]), zlib.decompress(ir).decode())
    return code, header["meta"]


@functools.cache
def toolchain_fingerprint() -> str:
    """Versions of aotk, xDSL and llvmlite, and a hash of aotk's own sources."""
    digest = hashlib.sha256()
    for name in ("xdsl", "llvmlite"):
        digest.update(f"{name}={metadata.version(name)};".encode())
    root = Path(aotk.__file__).resolve().parent
    for source in sorted(root.rglob("*.py")):
        digest.update(str(source.relative_to(root)).encode() + source.read_bytes())
    return f"aotk {aotk.__version__} {digest.hexdigest()[:16]}"


def entry_key(structure: str, cpu: str, features: str) -> str:
    parts = "\0".join([toolchain_fingerprint(), cpu, features, structure])
    return hashlib.sha256(parts.encode()).hexdigest()


def enabled() -> bool:
    return os.environ.get("AOTK_DISK_CACHE", "1") not in ("0", "off", "false", "")


def _entry(key: str) -> Path:
    return paths.cache_dir() / "kernels" / key[:2] / f"{key}.bin"


def get_or_compile(key: str, compile_fn: Callable[[], NativeCode]) -> tuple[NativeCode, bool]:
    """The cached code of `key`, or `compile_fn()`'s stored under it; True if compiled."""
    path = _entry(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        return compile_fn(), True  # an unwritable cache only costs speed
    with _locked(path.with_suffix(".lock")):
        code = _read(path)
        if code is not None:
            return code, False
        code = compile_fn()
        _write_atomically(path, encode(code, {}))
        return code, True


def _read(path: Path) -> NativeCode | None:
    try:
        return decode(path.read_bytes())[0]
    except FileNotFoundError:
        return None
    except (OSError, CorruptNativeCode):
        path.unlink(missing_ok=True)  # recover from a damaged entry by compiling again
        return None


def _write_atomically(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
