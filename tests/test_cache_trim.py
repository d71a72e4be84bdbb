"""The compile cache's size limit: least recently used entries go first, the entry just
written stays, leftovers of crashed writers go, and `aotk cache` reports and trims."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aotk import cache_trim, compile_cache
from aotk.codegen.jit import NativeCode
from aotk.tools.cli import main

PAYLOAD = 3000


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AOTK_CACHE_SIZE", "0")
    return tmp_path


def _key(name: str) -> str:
    return compile_cache.entry_key(name, "cpu", "features")


def _write(name: str, section: str = "kernels") -> Path:
    """Compile (a payload of PAYLOAD bytes) into the cache under `name`; the entry's path."""
    code = NativeCode((name[:1].encode() * PAYLOAD,), {"main": "v"})
    _, compiled = compile_cache.get_or_compile(_key(name), lambda: code, section)
    assert compiled
    return _path(name, section)


def _path(name: str, section: str = "kernels") -> Path:
    key = _key(name)
    return Path(os.environ["AOTK_CACHE_DIR"]) / section / key[:2] / f"{key}.bin"


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _left(*names: str) -> list[str]:
    return [name for name in names if _path(name).exists()]


@pytest.mark.parametrize(
    ("text", "size"),
    [("123", 123), ("4K", 4096), ("500M", 500 << 20), ("2G", 2 << 30), ("2GiB", 2 << 30),
     ("3 mb", 3 << 20), ("0", 0)],
)  # fmt: skip
def test_sizes_parse_in_binary_units(text, size):
    assert cache_trim.parse_size(text) == size


@pytest.mark.parametrize("text", ["2X", "-1", "1.5G", "G", "", "2 G B"])
def test_a_malformed_size_is_refused_naming_it(text):
    with pytest.raises(ValueError, match=f"{text!r} is not a size"):
        cache_trim.parse_size(text)


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("AOTK_CACHE_SIZE", raising=False)
    assert cache_trim.limit() == 2 << 30
    monkeypatch.setenv("AOTK_CACHE_SIZE", "64M")
    assert cache_trim.limit() == 64 << 20
    monkeypatch.setenv("AOTK_CACHE_SIZE", "0")
    assert cache_trim.limit() is None
    monkeypatch.setenv("AOTK_CACHE_SIZE", "7 parsecs")
    with pytest.warns(RuntimeWarning, match="AOTK_CACHE_SIZE: '7 parsecs' is not a size"):
        assert cache_trim.limit() == 2 << 30


def test_the_least_recently_used_entries_go_first(cache, monkeypatch):
    paths = [_write(name) for name in "abcd"]
    size = paths[0].stat().st_size
    assert all(p.stat().st_size == size for p in paths)
    for age, path in zip((400, 300, 200, 100), paths, strict=True):
        _age(path, age)  # written in the order a, b, c, d
    assert compile_cache.read(_key("a"), "kernels") is not None  # a: used last
    monkeypatch.setenv("AOTK_CACHE_SIZE", str(int(4.5 * size)))
    _write("e")  # five entries over a limit of 4.5: down to 0.8 of it, three
    assert _left(*"abcde") == ["a", "d", "e"]


def test_the_entry_just_written_stays_under_a_limit_below_its_size(cache, monkeypatch):
    monkeypatch.setenv("AOTK_CACHE_SIZE", "100")
    _write("a")
    assert _left("a") == ["a"]
    _write("b")
    assert _left("a", "b") == ["b"]


def test_no_limit_keeps_every_entry(cache):
    for name in "abcdefgh":
        _write(name)
    assert len(_left(*"abcdefgh")) == 8


def test_a_process_scans_again_only_when_its_writes_may_cross_the_limit(cache, monkeypatch):
    scans = []
    real = cache_trim.entries
    monkeypatch.setattr(cache_trim, "entries", lambda root: scans.append(root) or real(root))
    size = _write("a").stat().st_size
    monkeypatch.setenv("AOTK_CACHE_SIZE", str(int(3.5 * size)))
    _write("b")  # the process's first write under a limit: it finds the total
    assert len(scans) == 1
    _write("c")  # 3 entries of 3.5: counted, not scanned
    assert len(scans) == 1 and _left(*"abc") == list("abc")
    _write("d")  # over: scans and trims to 0.8 x 3.5, two entries
    assert len(scans) == 2 and len(_left(*"abcd")) == 2


def test_reading_an_entry_marks_it_used(cache):
    path = _write("a")
    _age(path, 3600)
    assert compile_cache.read(_key("a"), "kernels") is not None
    assert time.time() - path.stat().st_mtime < 60


def test_an_entry_read_and_removed_takes_its_lock_file_along(cache):
    path = _write("a", "sources")
    assert path.with_suffix(".lock").exists()
    assert compile_cache.read(_key("a"), "sources", remove=True) is not None
    assert not path.exists() and not path.with_suffix(".lock").exists()


def test_a_trim_removes_what_crashed_writers_left_and_nothing_in_use(cache, monkeypatch):
    kept, evicted = _write("a"), _write("b")
    _age(evicted, 100)
    directory = kept.parent
    stale, fresh = directory / "x.bin1.tmp", directory / "y.bin2.tmp"
    stale.write_bytes(b"half"), fresh.write_bytes(b"half")  # type: ignore[func-returns-value]
    _age(stale, 2 * cache_trim.STALE_SECONDS)
    orphan, held = directory / "gone.lock", directory / "compiling.lock"
    orphan.touch(), held.touch()  # type: ignore[func-returns-value]
    with open(held, "rb") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # a process compiling its entry
        monkeypatch.setenv("AOTK_CACHE_SIZE", str(kept.stat().st_size))
        _write("c")
    assert _left("a", "b", "c") == ["c"]
    assert not stale.exists() and fresh.exists()
    assert not orphan.exists() and held.exists()
    assert not evicted.with_suffix(".lock").exists()
    assert _path("c").with_suffix(".lock").exists()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(["cache", *argv])
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err  # type: ignore[return-value]


def test_cli_reports_each_section_against_the_limit(cache, capsys, monkeypatch):
    sizes = [_write(name).stat().st_size for name in "ab"] + [
        _write("m", "micro-kernels").stat().st_size
    ]
    monkeypatch.setenv("AOTK_CACHE_SIZE", "1M")
    status, out, _ = _cli(capsys)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"cache: {cache} (limit 1.0 MiB; AOTK_CACHE_SIZE)"
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows["kernels"][0] == "2" and rows["kernels"][2] == f"{(sizes[0] + sizes[1]) / 1024:.1f}"
    assert rows["sources"][:3] == ["0", "entries", "0"]
    assert rows["micro-kernels"][0] == "1" and rows["total"][0] == "3"


def test_cli_trims_to_the_limit_and_clears(cache, capsys, monkeypatch):
    paths = [_write(name) for name in "abcd"]
    for age, path in zip((400, 300, 200, 100), paths, strict=True):
        _age(path, age)
    monkeypatch.setenv("AOTK_CACHE_SIZE", str(3 * paths[0].stat().st_size))
    status, out, _ = _cli(capsys, "--trim")
    assert status == 0 and out.startswith(f"trimmed {cache}: ")
    assert _left(*"abcd") == ["c", "d"]  # 4 over a limit of 3: down to 0.8 of it
    monkeypatch.setenv("AOTK_CACHE_SIZE", "0")
    status, out, _ = _cli(capsys, "--trim")
    assert status == 0 and out.startswith(f"not trimmed {cache}: AOTK_CACHE_SIZE=0 sets no limit")
    assert _left(*"abcd") == ["c", "d"]
    status, out, _ = _cli(capsys, "--clear")
    assert status == 0 and out.startswith(f"cleared {cache}: 2 entries, ")
    assert _left(*"abcd") == [] and not list(cache.rglob("*.lock"))


def test_cli_refuses_a_cache_others_can_write_and_deletes_nothing(cache, capsys):
    path = _write("a")
    cache.chmod(0o777)
    try:
        status, out, err = _cli(capsys, "--clear")
    finally:
        cache.chmod(0o700)
    assert status == 1 and out == ""
    assert err == (
        f"aotk: error: not using the cache directory {cache}: it is writable by group or "
        "others (mode drwxrwxrwx)\n"
    )
    assert path.exists()


def test_cli_warns_of_a_malformed_limit_on_one_line(cache):
    done = subprocess.run(
        [sys.executable, "-m", "aotk.tools.cli", "cache"],
        env={**os.environ, "AOTK_CACHE_SIZE": "12 furlongs"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "(limit 2.0 GiB;" in done.stdout
    assert done.stderr == (
        "aotk: warning: AOTK_CACHE_SIZE: '12 furlongs' is not a size (expected a count of "
        "bytes with an optional K, M or G suffix, such as 2G); using 2G\n"
    )
