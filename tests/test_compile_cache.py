"""The on-disk compile cache: shared across processes, safe under races, self-healing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from aotk import backend as K
from aotk import compile_cache, host_code
from aotk import function as F
from aotk.codegen.jit import NativeCode

# Traces a small graph (its constant `scale` makes it new to a fresh cache), waits for a
# go file if one is named, compiles, and prints the counters and a result as JSON.
_CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    import numpy as np
    from aotk import backend as K
    from aotk import host_code

    scale, go = float(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None
    x = K.placeholder(shape=(None, 4), name="x")
    w = K.variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    y = K.softmax(K.tanh(K.dot(x, w)) * scale)
    if go:
        print("ready", flush=True)
        while not os.path.exists(go):
            time.sleep(0.005)
    f = K.function([x], [y])
    out = f([np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)])[0]
    print(json.dumps({"compiles": host_code.COMPILE_COUNT, "disk_hits": host_code.DISK_HITS,
                      "out": out.tolist()}), flush=True)
    """
)


def _expected(scale: float) -> np.ndarray:
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    z = np.tanh(x @ w) * np.float32(scale)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "AOTK_CACHE_DIR": str(cache), "AOTK_DISK_CACHE": "1", **extra}


def _child(cache: Path, scale: float, **extra: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(scale)],
        env=_env(cache, **extra),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _entries(cache: Path) -> list[Path]:
    return sorted((cache / "kernels").rglob("*.bin"))


def test_a_kernel_compiled_in_one_process_is_loaded_from_disk_in_the_next(tmp_path):
    first = _child(tmp_path, 1.5)
    assert (first["compiles"], first["disk_hits"]) == (1, 0)
    assert len(_entries(tmp_path)) == 1
    second = _child(tmp_path, 1.5)
    assert (second["compiles"], second["disk_hits"]) == (0, 1)
    np.testing.assert_allclose(second["out"], _expected(1.5), rtol=1e-5, atol=1e-6)
    assert second["out"] == first["out"]


def test_another_graph_is_another_entry(tmp_path):
    _child(tmp_path, 1.5)
    other = _child(tmp_path, 2.5)
    assert (other["compiles"], other["disk_hits"]) == (1, 0)
    assert len(_entries(tmp_path)) == 2


def test_disk_cache_off_compiles_every_process_and_writes_nothing(tmp_path):
    for _ in range(2):
        run = _child(tmp_path, 1.5, AOTK_DISK_CACHE="0")
        assert (run["compiles"], run["disk_hits"]) == (1, 0)
        np.testing.assert_allclose(run["out"], _expected(1.5), rtol=1e-5, atol=1e-6)
    assert not (tmp_path / "kernels").exists()


def test_two_processes_compiling_one_new_graph_at_once(tmp_path):
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, "3.5", str(go)],
            env=_env(tmp_path / "cache"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for child in children:  # both have traced their graph; release them together
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        go.touch()
        results = []
        for child in children:
            out, err = child.communicate(timeout=300)
            assert child.returncode == 0, err
            results.append(json.loads(out.splitlines()[-1]))
    finally:
        for child in children:
            child.kill()
            child.wait()
    # the entry lock makes the later process wait for the first one and reuse its code
    assert sorted((r["compiles"], r["disk_hits"]) for r in results) == [(0, 1), (1, 0)]
    assert results[0]["out"] == results[1]["out"]
    np.testing.assert_allclose(results[0]["out"], _expected(3.5), rtol=1e-5, atol=1e-6)
    assert len(_entries(tmp_path / "cache")) == 1
    assert not list((tmp_path / "cache").rglob("*.tmp"))


def _compile_here(scale: float) -> tuple[np.ndarray, int, int]:
    """Trace and compile in this process, forgetting its in-memory kernels first."""
    host_code.clear_cache()
    compiles, hits = host_code.COMPILE_COUNT, host_code.DISK_HITS
    x = K.placeholder(shape=(None, 4), name="x")
    w = K.variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    f = K.function([x], [K.softmax(K.tanh(K.dot(x, w)) * scale)])
    out = f([np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)])[0]
    return out, host_code.COMPILE_COUNT - compiles, host_code.DISK_HITS - hits


def _flip(data: bytes, i: int) -> bytes:
    return data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1 :]


# every kind of damage is also checked on the blob alone in test_shipping.py
DAMAGE = {
    "truncated": lambda b: b[: len(b) // 2],
    "flipped byte in the header": lambda b: _flip(b, len(compile_cache.MAGIC) + 12),
    "flipped byte in the code": lambda b: _flip(b, len(b) // 2),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_corrupted_entry_is_detected_and_compiled_again(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AOTK_DISK_CACHE", "1")
    out, compiles, hits = _compile_here(4.5)
    assert (compiles, hits) == (1, 0)
    (entry,) = _entries(tmp_path)
    good = entry.read_bytes()
    entry.write_bytes(DAMAGE[damage](good))
    out_again, compiles, hits = _compile_here(4.5)
    assert (compiles, hits) == (1, 0)
    np.testing.assert_array_equal(out_again, out)
    np.testing.assert_allclose(out_again, _expected(4.5), rtol=1e-5, atol=1e-6)
    (entry,) = _entries(tmp_path)  # replaced by a sound one, which the next process uses
    code, _ = compile_cache.decode(entry.read_bytes())
    assert code == compile_cache.decode(good)[0]
    _, compiles, hits = _compile_here(4.5)
    assert (compiles, hits) == (0, 1)


def test_disk_cache_off_in_process(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    for value in ("0", "off", "false", ""):
        monkeypatch.setenv("AOTK_DISK_CACHE", value)
        assert not compile_cache.enabled()
    for value in ("1", "on"):
        monkeypatch.setenv("AOTK_DISK_CACHE", value)
        assert compile_cache.enabled()
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")
    for _ in range(2):
        out, compiles, hits = _compile_here(5.5)
        assert (compiles, hits) == (1, 0)
        np.testing.assert_allclose(out, _expected(5.5), rtol=1e-5, atol=1e-6)
    assert not (tmp_path / "kernels").exists()


def test_an_unwritable_cache_only_costs_speed(tmp_path, monkeypatch):
    """A cache path that cannot be created (a file is in the way) still compiles."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    monkeypatch.setenv("AOTK_CACHE_DIR", str(blocker))
    monkeypatch.setenv("AOTK_DISK_CACHE", "1")
    out, compiles, hits = _compile_here(6.5)
    assert (compiles, hits) == (1, 0)
    np.testing.assert_allclose(out, _expected(6.5), rtol=1e-5, atol=1e-6)


def test_a_failed_store_only_costs_speed(tmp_path, monkeypatch):
    """A full disk (mkstemp or write failing) leaves no entry and no temp file behind."""

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AOTK_DISK_CACHE", "1")
    monkeypatch.setattr(compile_cache.tempfile, "mkstemp", no_space)
    out, compiles, hits = _compile_here(7.5)
    assert (compiles, hits) == (1, 0)
    np.testing.assert_allclose(out, _expected(7.5), rtol=1e-5, atol=1e-6)
    assert _entries(tmp_path) == [] and not list(tmp_path.rglob("*.tmp"))


def test_an_entry_whose_lock_cannot_be_opened_still_works(tmp_path, monkeypatch):
    """A lock path that cannot be opened (here: a directory) does not stop the cache."""
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    key = "ab" + "0" * 62
    lock = tmp_path / "kernels" / "ab" / f"{key}.lock"
    lock.mkdir(parents=True)
    code = NativeCode((b"object", b" code"), {"main": "vppi"}, "define void @main()")
    calls = []
    compile_fn = lambda: calls.append(1) or code  # noqa: E731
    assert compile_cache.get_or_compile(key, compile_fn) == (code, True)
    assert compile_cache.get_or_compile(key, compile_fn) == (code, False)
    assert len(calls) == 1


def test_an_entry_holding_another_keys_code_is_compiled_again(tmp_path, monkeypatch):
    """Copying the entry of x + 2 over the one of x * 2 must not make x * 2 add."""
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AOTK_DISK_CACHE", "1")
    x = K.placeholder((None,), name="x")
    times, plus = K.function([x], [x * 2.0]), K.function([x], [x + 2.0])
    entries = {p.stat().st_mtime_ns: p for p in _entries(tmp_path)}
    assert len(entries) == 2
    times_entry, plus_entry = (entries[k] for k in sorted(entries))
    times_entry.write_bytes(plus_entry.read_bytes())
    host_code.clear_cache()
    before = host_code.COMPILE_COUNT
    again = K.function([x], [x * 2.0])
    assert host_code.COMPILE_COUNT == before + 1
    np.testing.assert_array_equal(again([np.array([1.5], np.float32)])[0], [3.0])
    assert times([np.array([1.0], np.float32)])[0] == 2.0
    assert plus([np.array([1.0], np.float32)])[0] == 3.0


def test_the_cache_directory_is_created_private(tmp_path, monkeypatch):
    cache = tmp_path / "new" / "aotk"
    monkeypatch.setenv("AOTK_CACHE_DIR", str(cache))
    monkeypatch.setenv("AOTK_DISK_CACHE", "1")
    _compile_here(8.5)
    assert cache.stat().st_mode & 0o777 == 0o700
    assert all(p.stat().st_mode & 0o077 == 0 for p in cache.rglob("*") if p.is_dir())


@pytest.mark.parametrize("who", ["writable by others", "another user's"])
def test_a_cache_directory_others_could_change_is_not_used(tmp_path, monkeypatch, who):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    if who == "writable by others":
        cache.chmod(0o777)
    else:
        real = os.getuid()
        monkeypatch.setattr(os, "getuid", lambda: real + 1)
    monkeypatch.setenv("AOTK_CACHE_DIR", str(cache))
    monkeypatch.setenv("AOTK_DISK_CACHE", "1")
    with pytest.warns(RuntimeWarning, match="not using the cache directory"):
        out, compiles, hits = _compile_here(9.5 if who == "another user's" else 10.5)
    assert (compiles, hits) == (1, 0)
    np.testing.assert_allclose(
        out, _expected(9.5 if who == "another user's" else 10.5), rtol=1e-5, atol=1e-6
    )
    assert not any(cache.iterdir())


def _counted_lowerings(monkeypatch) -> list[int]:
    from aotk.lowering import pipeline

    calls: list[int] = []
    real = pipeline.lower

    def lower(module, *args, **kwargs):
        calls.append(1)
        return real(module, *args, **kwargs)

    monkeypatch.setattr(pipeline, "lower", lower)
    return calls


def test_a_source_lowered_for_an_export_is_kept_until_its_function_compiles(tmp_path, monkeypatch):
    """An export lowers a lazy function to LLVM IR text and compiles nothing; the text,
    kept in the cache's sources, spares a later process the lowering, and the compile
    that follows starts from it and drops it (the compiled entry holds the text too)."""
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("AOTK_DISK_CACHE", "1")
    lowerings = _counted_lowerings(monkeypatch)
    x = K.placeholder((None,), name="x")
    with F.compiled_on_first_call():
        f = K.function([x], [K.exp(x) * 3.0 - 1.0])
    compiles, hits = host_code.COMPILE_COUNT, host_code.DISK_HITS
    source = f.host_source()
    assert source.objects == () and "define" in source.source_ir
    assert (len(lowerings), host_code.COMPILE_COUNT) == (1, compiles)
    sources = sorted((tmp_path / "sources").rglob("*.bin"))
    assert len(sources) == 1 and not _entries(tmp_path)
    host_code.clear_cache()  # as another process would, with only the disk's copy
    assert f.host_source().source_ir == source.source_ir
    host_code.clear_cache()
    out = f([np.array([0.0, 1.0], np.float32)])[0]
    np.testing.assert_allclose(out, [2.0, 3.0 * np.e - 1.0], rtol=1e-6)
    assert (len(lowerings), host_code.COMPILE_COUNT) == (1, compiles + 1)
    assert not sources[0].exists() and len(_entries(tmp_path)) == 1
    host_code.clear_cache()
    with F.compiled_on_first_call():
        again = K.function([x], [K.exp(x) * 3.0 - 1.0])
    # the compiled entry serves an export of the same graph as it is: nothing is linked
    assert again.host_source().source_ir == source.source_ir
    assert (len(lowerings), host_code.COMPILE_COUNT, host_code.DISK_HITS) == (1, compiles + 1, hits)
