"""Signing compiled code with a key of the user's (HMAC-SHA256), and refusing unsigned or
altered code before it can run.

A pickled function or loaded library, an exported library and its weights are native
code and data that run in the process that loads them. Where they travel through storage
or a network that is not fully trusted, sign them with a secret key and require the
signature when loading:

- `dumps(obj, key)` / `loads(data, key)`: a pickle with a tag in front; `loads` checks the
  tag before unpickling anything, so an altered or foreign pickle never runs. (A tag
  inside the pickle could not do that: unpickling a malicious stream runs its code first.)
- `aotk.export(..., signing_key=key)` writes `<file>.sig` beside the library and weights,
  and `aotk.load(path, signing_key=key)` checks them; the checked bytes are what is loaded
  (from a private copy), so the file cannot be swapped between the check and `dlopen`.

A signature proves that someone holding the key made the file; it does not make code
from an untrusted key holder safe.
"""

from __future__ import annotations

import hashlib
import hmac
import pickle
from pathlib import Path
from typing import Any

MAGIC = b"AOTKSIG1"
_SIG_PREFIX = "aotk-hmac-sha256 "
_DIGEST = 32
MIN_KEY_BYTES = 16


def check_key(key: object, where: str) -> bytes:
    """The key as bytes, at least MIN_KEY_BYTES long (a str is UTF-8 encoded)."""
    raw = key.encode() if isinstance(key, str) else key
    if not isinstance(raw, bytes | bytearray):
        raise TypeError(f"{where}: signing_key must be bytes or str, got {type(key).__name__}")
    if len(raw) < MIN_KEY_BYTES:
        raise ValueError(
            f"{where}: signing_key must have at least {MIN_KEY_BYTES} bytes, got {len(raw)}"
        )
    return bytes(raw)


def tag(data: bytes, key: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def dumps(obj: Any, key: bytes | str) -> bytes:
    """`obj` pickled, behind MAGIC and its HMAC-SHA256 under `key`."""
    raw = check_key(key, "aotk.signing.dumps")
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return MAGIC + tag(payload, raw) + payload


def loads(data: bytes, key: bytes | str) -> Any:
    """Unpickle what `dumps` made with the same key; anything else is refused unread."""
    where = "aotk.signing.loads"
    raw = check_key(key, where)
    if not isinstance(data, bytes | bytearray) or not bytes(data[: len(MAGIC)]) == MAGIC:
        raise ValueError(f"{where}: not a signed aotk pickle (no {MAGIC.decode()} header)")
    given, payload = (
        bytes(data[len(MAGIC) : len(MAGIC) + _DIGEST]),
        bytes(data[len(MAGIC) + _DIGEST :]),
    )
    if not hmac.compare_digest(given, tag(payload, raw)):
        raise ValueError(f"{where}: the signature does not match: altered, or another key")
    return pickle.loads(payload)


def signature_path(path: Path) -> Path:
    return path.with_name(path.name + ".sig")


def sign_file(path: Path, key: bytes) -> Path:
    """Write `<path>.sig` for the file's current bytes."""
    sig = signature_path(path)
    sig.write_text(_SIG_PREFIX + tag(path.read_bytes(), key).hex() + "\n")
    return sig


def verified_bytes(path: Path, key: bytes, where: str) -> bytes:
    """The bytes of `path`, read once, if its `.sig` holds their tag under `key`."""
    sig = signature_path(path)
    try:
        recorded = sig.read_text().strip()
    except OSError:
        raise ValueError(f"{where}: {path.name} has no signature file {sig.name}") from None
    if not recorded.startswith(_SIG_PREFIX):
        raise ValueError(f"{where}: {sig.name} is not an aotk signature")
    data = path.read_bytes()
    if not hmac.compare_digest(recorded.removeprefix(_SIG_PREFIX), tag(data, key).hex()):
        raise ValueError(
            f"{where}: {path.name} does not match its signature: altered, or another key"
        )
    return data
