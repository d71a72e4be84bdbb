"""Where aotk's non-Python parts live: the C runtime sources and the user cache."""

from __future__ import annotations

import os
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
