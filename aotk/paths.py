"""Where aotk's non-Python parts live: the C runtime sources and the user cache.

The cache holds native code that aotk loads and runs, so it must be the user's alone:
`private_cache_dir` creates it with mode 0700 and refuses, with a warning, a directory
owned by another user or writable by group or others (aotk then compiles without
caching), as pip does with its cache.
"""

from __future__ import annotations

import functools
import os
import stat
import warnings
from pathlib import Path


def runtime_dir() -> Path:
    """The directory holding the C runtime sources (`aotk_rt.c` and friends)."""
    override = os.environ.get("AOTK_RUNTIME_DIR")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / "runtime"


def cache_dir() -> Path:
    """aotk's directory in the user cache (`AOTK_CACHE_DIR`, else XDG, else ~/.cache)."""
    override = os.environ.get("AOTK_CACHE_DIR")
    if override:
        return Path(override)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aotk"


def private_cache_dir() -> Path | None:
    """`cache_dir()`, created (mode 0700) if missing, when only this user can change it;
    None when it cannot be created or is not private (warned once per directory)."""
    path = cache_dir()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
    except OSError:
        return None
    problem = untrusted(info)
    if problem is not None:
        _warn_once(str(path), problem)
        return None
    return path


def private_subdir(root: Path, *parts: str) -> Path:
    """`root / parts...`, each level created with mode 0700 if missing (OSError if one
    cannot be)."""
    path = root
    for part in parts:
        path = path / part
        path.mkdir(mode=0o700, exist_ok=True)
    return path


def untrusted(info: os.stat_result) -> str | None:
    """Why a directory with these stats could hold code another user planted, or None."""
    if info.st_uid != os.getuid():
        return f"it is owned by user id {info.st_uid}, not by this user ({os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"it is writable by group or others (mode {stat.filemode(info.st_mode)})"
    return None


@functools.cache
def _warn_once(path: str, problem: str) -> None:
    warnings.warn(
        f"aotk: not using the cache directory {path}: {problem}; compiled code is not "
        "cached (set AOTK_CACHE_DIR to a private directory)",
        RuntimeWarning,
        stacklevel=3,
    )
