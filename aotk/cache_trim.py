"""Keeps the compile cache within its size: the entries unused longest go first.

`AOTK_CACHE_SIZE` bounds the entries of the keyed sections (`kernels`, `sources`,
`micro-kernels`) together: bytes, or with a K, M or G suffix (powers of 1024); 0 for no
limit; 2G by default. An entry's modification time is when it was last written or read
(`touch`), so when a new entry takes the total over the limit, the least recently used
are deleted until the total is under LOW_WATER of it. The entry just written is never
deleted: a limit below one entry's size still caches that entry.

Finding the total stats every entry (60 ms for 3000 entries), so a process does it after
its first write and then only when its own writes since may have crossed the limit;
what other processes write meanwhile they count themselves, so the cache can run over
its limit by what several processes write at once, until the next trim.

Every entry is a whole file that appears by rename and is read in one go, so deleting
one under a process that is about to read it only makes that process compile again. A
trim also removes what crashed writers left: temporary files an hour old, and lock files
with no entry that no process holds.
"""

from __future__ import annotations

import fcntl
import functools
import os
import re
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

SECTIONS = ("kernels", "sources", "micro-kernels")
# an entry's file, its lock file and a writer's temporary file end so
ENTRY, LOCK, TEMP = ".bin", ".lock", ".tmp"
DEFAULT_LIMIT = "2G"
LOW_WATER = 0.8
STALE_SECONDS = 3600.0
_SIZE = re.compile(r"(\d+)\s*([KMG]?)i?B?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# per cache root: its total at this process's last trim plus what it wrote since
_totals: dict[Path, int] = {}
_totals_lock = threading.Lock()


@dataclass(frozen=True)
class Entry:
    path: Path
    size: int
    used_ns: int  # last written or read


def parse_size(text: str) -> int:
    """Bytes of a size such as `500M`, `2G` or `1048576`; ValueError if it is not one."""
    match = _SIZE.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"{text!r} is not a size (expected a count of bytes with an optional K, M or "
            "G suffix, such as 2G)"
        )
    return int(match[1]) * _UNITS[match[2].upper()]


def limit() -> int | None:
    """The cache's size limit in bytes (`AOTK_CACHE_SIZE`), or None for no limit."""
    text = os.environ.get("AOTK_CACHE_SIZE", "") or DEFAULT_LIMIT
    try:
        size = parse_size(text)
    except ValueError as err:
        _warn_once(f"AOTK_CACHE_SIZE: {err}; using {DEFAULT_LIMIT}")
        size = parse_size(DEFAULT_LIMIT)
    return size or None


def touch(path: Path) -> None:
    """Mark an entry as used now (a read-only cache just keeps its old time)."""
    with suppress(OSError):
        os.utime(path)


def entries(root: Path) -> Iterator[tuple[str, Entry]]:
    """(section, entry) for every entry in the keyed sections of the cache at `root`."""
    for section in SECTIONS:
        for directory in _subdirs(root / section):
            for item in _listing(directory):
                if item.name.endswith(ENTRY):
                    with suppress(OSError):  # deleted meanwhile by another process
                        info = item.stat(follow_symlinks=False)
                        yield section, Entry(Path(item.path), info.st_size, info.st_mtime_ns)


def written(root: Path, path: Path, size: int) -> None:
    """After `size` bytes were written to the entry at `path`: trim the cache if it may
    have gone over its limit."""
    cap = limit()
    if cap is None:
        return
    with _totals_lock:
        total = _totals.get(root)
        if total is not None and total + size <= cap:
            _totals[root] = total + size
            return
    kept, _ = trim(root, cap, keep=path)
    with _totals_lock:
        _totals[root] = kept


def trim(root: Path, cap: int, keep: Path | None = None) -> tuple[int, int]:
    """If the entries exceed `cap` bytes, delete the least recently used (never `keep`)
    down to LOW_WATER of it, and the leftovers of crashed writers; (bytes left, bytes
    freed)."""
    found = [entry for _, entry in entries(root)]
    total = sum(entry.size for entry in found)
    if total <= cap:
        return total, 0
    _remove_leftovers(root)
    freed = 0
    for entry in sorted(found, key=lambda e: e.used_ns):
        if total - freed <= cap * LOW_WATER:
            break
        if entry.path != keep and remove_entry(entry.path):
            freed += entry.size
    return total - freed, freed


def clear(root: Path) -> tuple[int, int]:
    """Delete every entry of the keyed sections; (entries, bytes) deleted."""
    count = freed = 0
    for _, entry in list(entries(root)):
        if remove_entry(entry.path):
            count, freed = count + 1, freed + entry.size
    _remove_leftovers(root)
    with _totals_lock:
        _totals.pop(root, None)
    return count, freed


def _subdirs(section: Path) -> list[str]:
    """The two-character directories of a section."""
    try:
        return [d.path for d in os.scandir(section) if d.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _listing(directory: str) -> list[os.DirEntry[str]]:
    try:
        return [item for item in os.scandir(directory) if item.is_file(follow_symlinks=False)]
    except OSError:
        return []


def remove_entry(path: Path) -> bool:
    """Delete an entry and, when no process holds it, its lock file; False if it was
    already gone."""
    try:
        path.unlink()
    except OSError:
        return False
    _remove_unheld_lock(path.with_suffix(LOCK))
    return True


def _remove_leftovers(root: Path) -> None:
    stale = time.time() - STALE_SECONDS
    for section in SECTIONS:
        for directory in _subdirs(root / section):
            items = _listing(directory)
            names = {item.name for item in items}
            for item in items:
                if item.name.endswith(TEMP):
                    with suppress(OSError):
                        if item.stat().st_mtime < stale:
                            os.unlink(item.path)
                elif item.name.endswith(LOCK) and item.name.removesuffix(LOCK) + ENTRY not in names:
                    _remove_unheld_lock(Path(item.path))


def _remove_unheld_lock(lock: Path) -> None:
    """Delete a lock file if no process holds its lock. One that opened it and has not
    locked it yet may then share a compile with a process that made a new one: both
    write the same entry by rename, so that only repeats work."""
    try:
        with open(lock, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.unlink()
    except OSError:  # held (or already gone): leave it
        return


@functools.cache
def _warn_once(message: str) -> None:
    warnings.warn(f"aotk: {message}", RuntimeWarning, stacklevel=4)
