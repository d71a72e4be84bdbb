"""The helper process that builds missing micro-kernels beside the caller."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from aotk import compile_cache, micro_kernel_helper, micro_kernels, timing

CHEAP = ["pack_rhs_float32", "pack_rhs_float64", "pack_rhs_float32_tb"]  # 0.1 s each


def _cores() -> int:
    return len(os.sched_getaffinity(0))


# A dense layer whose weight is read packed (the prepacked matmul and the packer), and a
# product by a narrow transposed weight (the plain transposed matmul): three micro-kernels,
# built in a fresh cache by this process and a helper.
_FIRST_COMPILE = textwrap.dedent(
    """
    import json
    import numpy as np
    from aotk import backend as K, micro_kernel_helper, micro_kernels
    w = np.linspace(-1, 1, 40 * 48, dtype=np.float32).reshape(40, 48)
    v = np.linspace(-1, 1, 10 * 40, dtype=np.float32).reshape(10, 40)
    x = K.placeholder((None, 40))
    f = K.function([x], [K.dot(x, K.variable(w)), K.dot(x, K.transpose(K.variable(v)))])
    a = np.linspace(-2, 2, 9 * 40, dtype=np.float32).reshape(9, 40)
    out, narrow = f([a])
    exact = a.astype(np.float64)
    error = max(np.abs(out - exact @ w).max(), np.abs(narrow - exact @ v.T).max())
    print(json.dumps({"here": micro_kernels.BUILT, "helper": micro_kernel_helper.BUILT,
                      "linked": sorted(micro_kernels._linked), "error": float(error)}))
    """
)


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("AOTK_BUILD_HELPER", raising=False)
    return tmp_path


def _build_all(names: list[str]) -> int:
    """What `micro_kernels.ensure_loaded` does, without linking: the kernels built here."""
    before = micro_kernels.BUILT
    with micro_kernels.helped(names):
        for name in names:
            micro_kernels.cached(name)
    return micro_kernels.BUILT - before


@pytest.mark.skipif(_cores() < 2, reason="the helper needs two cores")
def test_a_first_compile_builds_each_kernel_once_between_the_two(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_COMPILE],
        env={**os.environ, "AOTK_CACHE_DIR": str(tmp_path), "AOTK_BUILD_HELPER": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert len(report["linked"]) == 3, report["linked"]
    assert report["here"] + report["helper"] == 3  # none twice, none skipped
    assert report["error"] < 1e-4


@pytest.mark.skipif(_cores() < 2, reason="the helper needs two cores")
def test_the_helper_builds_into_the_cache_the_caller_reads(empty_cache):
    names = CHEAP[:2]
    helper = micro_kernel_helper._start(names)
    assert helper is not None
    out, _ = helper.communicate(timeout=300)
    assert helper.returncode == 0
    assert out.split("\n")[:2] == [f"built {names[1]}", f"built {names[0]}"]  # last first
    assert micro_kernels.uncached(names) == []
    before = micro_kernels.BUILT
    for name in names:
        assert micro_kernels.cached(name).signatures  # read, not built again
    assert micro_kernels.BUILT == before


@pytest.mark.skipif(_cores() < 2, reason="the helper needs two cores")
def test_the_helper_builds_for_the_target_it_is_given(empty_cache):
    """An export for another instruction set has its micro-kernels built by a helper
    too: for that target's CPU, features and tiling, none for the host."""
    target = micro_kernels.Target("x86-64-v3", "", "avx2")
    names = CHEAP[:2]
    helper = micro_kernel_helper._start(names, (target.cpu, target.features, target.isa))
    assert helper is not None
    out, _ = helper.communicate(timeout=300)
    assert helper.returncode == 0
    assert out.split("\n")[:2] == [f"built {names[1]}", f"built {names[0]}"]
    assert micro_kernels.uncached(names, target) == []
    assert micro_kernels.uncached(names) == names
    before = micro_kernels.BUILT
    for name in names:
        assert micro_kernels.cached(name, target).signatures
    assert micro_kernels.BUILT == before


@pytest.mark.skipif(_cores() < 2, reason="the helper needs two cores")
def test_timing_reports_the_helper_and_what_it_built(empty_cache):
    helped = micro_kernel_helper.BUILT
    with timing.collect() as records:
        here = _build_all(CHEAP)
    by_helper = micro_kernel_helper.BUILT - helped
    assert here + by_helper == 3
    [record] = [r for r in records if r.name.startswith("micro-kernel helper")]
    assert record.kind == "stage" and record.name == f"micro-kernel helper, {by_helper} built"
    assert record.seconds > 0


def test_a_failing_helper_leaves_the_builds_to_the_caller(empty_cache, monkeypatch):
    monkeypatch.setattr(micro_kernel_helper, "_CHILD", "import sys; sys.exit(3)")
    helped = micro_kernel_helper.BUILT
    assert _build_all(CHEAP) == 3
    assert micro_kernel_helper.BUILT == helped
    assert micro_kernels.uncached(CHEAP) == []


def test_a_helper_that_cannot_start_leaves_the_builds_to_the_caller(empty_cache, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(empty_cache / "no-such-python"))
    assert micro_kernel_helper._start(CHEAP) is None or _cores() < 2
    assert _build_all(CHEAP) == 3


def test_no_helper_for_one_kernel_a_warm_cache_or_when_turned_off(empty_cache, monkeypatch):
    started = []
    real_start = micro_kernel_helper._start

    def start(missing, target=()):
        helper = real_start(missing, target)
        started.append((missing, helper is not None))
        return helper

    monkeypatch.setattr(micro_kernel_helper, "_start", start)
    assert _build_all(CHEAP[:1]) == 1  # one kernel: not worth a process
    assert _build_all(CHEAP[:2]) == 1  # one of the two missing
    assert _build_all(CHEAP[:2]) == 0  # none missing
    assert started == [(None, False), ([CHEAP[1]], False), ([], False)]
    two_missing = [CHEAP[2], "no_such_kernel"]
    if _cores() >= 2:
        helper = real_start(two_missing)
        assert helper is not None
        micro_kernel_helper._stop(helper)  # it fails on the unknown name: no matter
    monkeypatch.setenv("AOTK_BUILD_HELPER", "0")
    assert real_start(two_missing) is None


def test_no_helper_without_a_usable_cache(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)  # writable by others: not used (paths.private_cache_dir)
    monkeypatch.setenv("AOTK_CACHE_DIR", str(shared))
    with pytest.warns(RuntimeWarning, match="not using the cache directory"):
        assert micro_kernels.uncached(CHEAP) is None
    assert micro_kernel_helper._start(None) is None


def test_stored_tells_an_entry_apart_from_a_miss(empty_cache):
    key = compile_cache.entry_key("micro-kernel pack_rhs_float64_tb", "cpu", "+f")
    assert compile_cache.stored(key, "micro-kernels") is False
    code = micro_kernels.cached("pack_rhs_float64_tb")
    compile_cache.get_or_compile(key, lambda: code, section="micro-kernels")
    assert compile_cache.stored(key, "micro-kernels") is True
    assert compile_cache.stored(key, "kernels") is False
    assert micro_kernels.uncached(["pack_rhs_float64_tb", "pack_rhs_float32"]) == [
        "pack_rhs_float32"
    ]


def test_one_helper_at_a_time(empty_cache, monkeypatch):
    started = []

    def start(names, target=()):
        started.append(names)

    monkeypatch.setattr(micro_kernel_helper, "_start", start)
    with micro_kernel_helper.helping(CHEAP[:2]), micro_kernel_helper.helping(CHEAP[1:]):
        pass  # the inner one (another thread's compile, say) starts none
    with micro_kernel_helper.helping(CHEAP[1:]):
        pass
    assert started == [CHEAP[:2], CHEAP[1:]]
