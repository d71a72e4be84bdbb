"""`aotk cache`: what the compile cache holds, against its limit; `--trim` and `--clear`."""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path
from typing import Any

from aotk import cache_trim, paths


def add_parser(commands: Any) -> None:
    """Register `aotk cache` on the CLI's subcommand parsers."""
    cmd = commands.add_parser(
        "cache",
        help="show what the compile cache holds; trim it to its limit or clear it",
        description="Print the compile cache's directory, its size limit (AOTK_CACHE_SIZE) "
        "and the entries and bytes of each section.",
    )
    action = cmd.add_mutually_exclusive_group()
    action.add_argument(
        "--trim", action="store_true", help="delete least recently used entries to the limit"
    )
    action.add_argument("--clear", action="store_true", help="delete every compiled entry")
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    root = paths.cache_dir()
    if root.exists():
        _check_private(root)
    cap = cache_trim.limit()
    if args.clear:
        count, freed = cache_trim.clear(root)
        print(f"cleared {root}: {count} entries, {human(freed)}")
        return 0
    if args.trim:
        if cap is None:
            print(f"not trimmed {root}: AOTK_CACHE_SIZE=0 sets no limit")
        else:
            print(f"trimmed {root}: {human(cache_trim.trim(root, cap)[1])} freed")
    print(f"cache: {root} (limit {'none' if cap is None else human(cap)}; AOTK_CACHE_SIZE)")
    counts, sizes = _usage(root)
    width = max(map(len, cache_trim.SECTIONS))
    for section in cache_trim.SECTIONS:
        print(f"  {section:<{width}}  {counts[section]:>6} entries  {human(sizes[section]):>10}")
    total = f"{sum(counts.values()):>6} entries  {human(sum(sizes.values())):>10}"
    print(f"  {'total':<{width}}  {total}")
    return 0


def human(size: int) -> str:
    """`size` bytes in the largest binary unit that keeps it at 1 or more."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _usage(root: Path) -> tuple[Counter[str], Counter[str]]:
    counts: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for section, entry in cache_trim.entries(root):
        counts[section] += 1
        sizes[section] += entry.size
    return counts, sizes


def _check_private(root: Path) -> None:
    """Refuse to read or delete in a cache directory another user could change."""
    problem = paths.untrusted(os.stat(root))
    if problem is not None:
        raise ValueError(f"not using the cache directory {root}: {problem}")
