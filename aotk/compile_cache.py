"""The on-disk compile cache, and the byte format of native code it shares with pickles.

An entry is keyed on everything that decides the machine code: the traced IR (without
value names), the target CPU and features, and the versions of aotk (plus a fingerprint
of its sources), xDSL and llvmlite. Several processes may compile at once: a per-entry
file lock makes the second one wait and reuse the first one's work, and entries appear
by atomic rename, so a reader never sees half a file. An entry records its own key: one
that fails its checksum, or holds another key's code (a copied or planted file), is
deleted and compiled again. The directory must be the user's alone (`paths`), and
stays within its size limit (`cache_trim`): reading an entry marks it used.
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
from contextlib import contextmanager, suppress
from importlib import metadata
from pathlib import Path
from typing import Any

import aotk
from aotk import cache_trim, paths
from aotk.codegen.jit import NativeCode

MAGIC = b"AOTKNC03"
_LENGTH = struct.Struct("<Q")
_DIGEST_SIZE = hashlib.sha256().digest_size


class CorruptNativeCode(ValueError):
    """Bytes that are not native code written by this format (truncated, altered, other)."""


def encode(code: NativeCode, meta: dict[str, Any]) -> bytes:
    """Object code, signatures, optimized IR and caller metadata as one checksummed blob.

    Layout: magic, header length (u64 little endian), JSON header, the objects one after
    another, zlib-compressed IR, then the SHA-256 of everything before it.
    """
    ir = zlib.compress(json.dumps([code.llvm_ir, code.source_ir]).encode(), 1)
    header = {
        "signatures": code.signatures,
        "obj_sizes": [len(obj) for obj in code.objects],
        "ir_size": len(ir),
        "meta": meta,
    }
    head = json.dumps(header, sort_keys=True).encode()
    body = MAGIC + _LENGTH.pack(len(head)) + head + b"".join(code.objects) + ir
    return body + hashlib.sha256(body).digest()


def decode(blob: bytes) -> tuple[NativeCode, dict[str, Any]]:
    """The inverse of `encode`; raises CorruptNativeCode on any damage."""
    if blob[: len(MAGIC)] != MAGIC:
        raise CorruptNativeCode("not aotk native code (bad magic)")
    body, digest = blob[:-_DIGEST_SIZE], blob[-_DIGEST_SIZE:]
    # the digest covers the header too: a flipped bit in a signature would call a kernel
    # with the wrong arguments, one in the metadata would load the wrong IR
    if len(blob) < len(MAGIC) + _DIGEST_SIZE or hashlib.sha256(body).digest() != digest:
        raise CorruptNativeCode("checksum mismatch (truncated or altered)")
    try:
        (n,) = _LENGTH.unpack_from(body, len(MAGIC))
        start = len(MAGIC) + _LENGTH.size
        header = json.loads(body[start : start + n])
        objects, offset = [], start + n
        for size in header["obj_sizes"]:
            if not isinstance(size, int) or size < 0:
                raise ValueError(f"bad object size {size!r}")
            objects.append(body[offset : offset + size])
            offset += size
        ir = body[offset:]
        if offset > len(body) or len(ir) != header["ir_size"]:
            raise ValueError("section sizes do not add up")
        sigs = dict(header["signatures"])
        code = NativeCode(tuple(objects), sigs, *json.loads(zlib.decompress(ir)))
        return code, dict(header["meta"])
    except (struct.error, ValueError, KeyError, TypeError, zlib.error) as err:
        raise CorruptNativeCode(f"unreadable header ({err})") from None


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


def get_or_compile(
    key: str, compile_fn: Callable[[], NativeCode], section: str = "kernels"
) -> tuple[NativeCode, bool]:
    """The cached code of `key` in `section` (a directory: "kernels" for models' code,
    "micro-kernels", "sources" for LLVM IR text an export lowered and nothing compiled
    yet), or `compile_fn()`'s stored under it; True if compiled."""
    root = paths.private_cache_dir()
    if root is None:
        return compile_fn(), True  # no (trustworthy) cache only costs speed
    try:
        directory, name = _place(key)
        path = paths.private_subdir(root, section, directory) / name
    except OSError:
        return compile_fn(), True
    with _locked(path.with_suffix(cache_trim.LOCK)):
        code = _read(path, key)
        if code is not None:
            return code, False
        code = compile_fn()
        size = _write_atomically(path, encode(code, {"key": key}))
    cache_trim.written(root, path, size)
    return code, True


def read(key: str, section: str, remove: bool = False) -> NativeCode | None:
    """The checked entry of `key` in `section`, or None; `remove`: delete it once read."""
    path = _entry_path(key, section)
    if path is None:
        return None
    code = _read(path, key)
    if code is not None and remove:
        cache_trim.remove_entry(path)
    return code


def stored(key: str, section: str) -> bool | None:
    """Whether `section` holds an entry under `key` (unchecked: reading it checks it);
    None when there is no usable cache, where nothing compiled is kept."""
    path = _entry_path(key, section)
    return None if path is None else path.is_file()


def _entry_path(key: str, section: str) -> Path | None:
    """Where `key`'s entry in `section` is or would be; None without a usable cache."""
    root = paths.private_cache_dir()
    if root is None:
        return None
    directory, name = _place(key)
    return root / section / directory / name


def _place(key: str) -> tuple[str, str]:
    """An entry's directory in its section (its key's first two characters) and file."""
    return key[:2], key + cache_trim.ENTRY


def _read(path: Path, key: str) -> NativeCode | None:
    try:
        code, meta = decode(path.read_bytes())
        if meta.get("key") != key:
            raise CorruptNativeCode("the entry holds another key's code")
        cache_trim.touch(path)
        return code
    except FileNotFoundError:
        return None
    except (OSError, CorruptNativeCode):
        with suppress(OSError):
            path.unlink(missing_ok=True)  # recover from a damaged entry by compiling again
        return None


def _write_atomically(path: Path, data: bytes) -> int:
    """Store `data` at `path` by rename, or not at all (a full disk only costs speed);
    the bytes stored."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=cache_trim.TEMP)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return len(data)
    except OSError:
        if tmp is not None:
            with suppress(OSError):
                Path(tmp).unlink(missing_ok=True)
        return 0


@contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path`; go on unlocked where locks are unavailable."""
    f = None
    try:
        f = open(lock_path, "a+b")
        fcntl.flock(f, fcntl.LOCK_EX)
    except OSError:
        # a read-only cache directory or a file system without flock: entries still
        # appear atomically, two processes may just both compile
        if f is not None:
            f.close()
        f = None
    try:
        yield
    finally:
        if f is not None:
            fcntl.flock(f, fcntl.LOCK_UN)
            f.close()
