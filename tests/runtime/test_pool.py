"""The C thread pool (runtime/aotk_pool.c): its C test program, plainly, under sanitizers
and under valgrind; and `aotk.codegen.native_runtime`, which builds and loads it for the JIT."""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

import aotk
from aotk.codegen import native_runtime

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"
PROGRAM = Path(__file__).with_name("pool_test.c")

pytestmark = pytest.mark.aot


@pytest.fixture(scope="module")
def cc() -> str:
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        pytest.skip("no C compiler")
    return found


def _build(cc: str, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        cc,
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pthread",
        f"-I{RUNTIME}",
        *flags,
        str(PROGRAM),
        str(RUNTIME / "aotk_pool.c"),
        str(RUNTIME / "aotk_cpus.c"),
        "-o",
        str(out),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


def test_pool_program(cc: str, tmp_path: Path) -> None:
    """Sums over many n and thread counts, nested and concurrent calls, 100 pools."""
    exe = tmp_path / "pool_test"
    built = _build(cc, exe, "-O2")
    assert built.returncode == 0, built.stderr
    ran = _run([str(exe)])
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr


def _one_cpu() -> None:
    """Run the child on the first CPU this process may use."""
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


@pytest.mark.parametrize(
    ("env", "one_cpu", "expected"),
    [
        ({"AOTK_NUM_THREADS": "3", "OMP_NUM_THREADS": "2"}, False, 3),
        ({"OMP_NUM_THREADS": "3,2"}, False, 3),
        ({"AOTK_NUM_THREADS": "0"}, True, 1),
        ({}, True, 1),
        ({}, False, None),  # None: a thread per CPU of the process (_cpus)
        ({"AOTK_NUM_THREADS": "2"}, True, 2),  # asked for: kept, on one CPU or not
    ],
)
def test_a_pool_of_default_size_follows_the_environment_and_affinity(
    cc: str, tmp_path: Path, env: dict[str, str], one_cpu: bool, expected: int | None
) -> None:
    """An exported model made with default options sizes its pool as the process-wide
    default pool does: AOTK_NUM_THREADS, else OMP_NUM_THREADS, else one thread per CPU
    of the affinity mask (taskset, a container's cpuset), not per online CPU."""
    exe = tmp_path / "pool_test"
    built = _build(cc, exe, "-O1")
    assert built.returncode == 0, built.stderr
    clean = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    ran = subprocess.run(
        [str(exe), "threads"],
        env={**clean, **env},
        preexec_fn=_one_cpu if one_cpu else None,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert int(ran.stdout) == (_cpus() if expected is None else expected)


@pytest.mark.parametrize("sanitizer", ["address,undefined", "thread"])
def test_pool_program_under_sanitizer(cc: str, tmp_path: Path, sanitizer: str) -> None:
    exe = tmp_path / "pool_test"
    built = _build(cc, exe, "-O1", "-g", f"-fsanitize={sanitizer}", "-fno-sanitize-recover=all")
    if built.returncode != 0:
        pytest.skip(f"{cc} cannot build with -fsanitize={sanitizer}: {built.stderr[-200:]}")
    ran = _run([str(exe)])
    if ran.returncode != 0 and "unexpected memory mapping" in ran.stderr:
        pytest.skip(f"-fsanitize={sanitizer} does not run on this kernel's memory layout")
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr[-3000:]


@pytest.mark.slow
def test_pool_program_under_valgrind(cc: str, tmp_path: Path) -> None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.skip("valgrind is not installed")
    exe = tmp_path / "pool_test"
    built = _build(cc, exe, "-O1", "-g")
    assert built.returncode == 0, built.stderr
    cmd = [valgrind, "-q", "--error-exitcode=3", "--leak-check=full", str(exe)]
    ran = _run(cmd)
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr[-3000:]


def test_build_is_cached_by_sources_and_compiler(
    cc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    path = native_runtime.build(cc)
    assert path == native_runtime.library_path(cc, tmp_path)
    assert path.parent.parent == tmp_path / "runtime"
    stamp = path.stat().st_mtime_ns
    assert native_runtime.build(cc) == path and path.stat().st_mtime_ns == stamp
    record = f"{native_runtime.LIBRARY}.sha256"
    assert sorted(p.name for p in path.parent.iterdir()) == [native_runtime.LIBRARY, record]
    lib = ctypes.CDLL(str(path))
    lib.aotk_pool_create.restype = ctypes.c_void_p
    lib.aotk_pool_threads.argtypes = [ctypes.c_void_p]
    lib.aotk_pool_destroy.argtypes = [ctypes.c_void_p]
    pool = lib.aotk_pool_create(3)
    assert lib.aotk_pool_threads(pool) == 3
    lib.aotk_pool_destroy(pool)


def test_concurrent_builds_agree(cc: str, tmp_path: Path) -> None:
    """Processes building into one empty cache at once all get the same complete file."""
    script = "from aotk.codegen import native_runtime as n; print(n.build(n.compiler()))"
    env = {**os.environ, "AOTK_CACHE_DIR": str(tmp_path), "CC": cc}
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    paths = {proc.communicate(timeout=120)[0].strip() for proc in procs}
    assert all(proc.returncode == 0 for proc in procs)
    assert len(paths) == 1
    built = Path(paths.pop())
    record = f"{native_runtime.LIBRARY}.sha256"
    assert sorted(p.name for p in built.parent.iterdir()) == [native_runtime.LIBRARY, record]
    ctypes.CDLL(str(built))  # loads: no half-written file was renamed into place


def test_set_and_get_num_threads() -> None:
    before = aotk.get_num_threads()
    try:
        for n in (1, 3, 2):
            aotk.set_num_threads(n)
            assert aotk.get_num_threads() == n
        aotk.set_num_threads(0)  # back to the default: the environment's, else a CPU each
        assert aotk.get_num_threads() == _default_threads()
    finally:
        aotk.set_num_threads(before)


def _default_threads() -> int:
    """The default pool's size in this process, by `native_runtime`'s documented rule."""
    for name in ("AOTK_NUM_THREADS", "OMP_NUM_THREADS"):
        first = os.environ.get(name, "").split(",")[0]
        if first.isdigit() and int(first) > 0:
            return int(first)
    return _cpus()


def _cpus() -> int:
    """The CPUs of this process's affinity mask, at most its CPU quota."""
    return min(len(os.sched_getaffinity(0)), _cpu_quota() or 256)


def _cpu_quota() -> int:
    """This system's CPU quota as the runtime reads it (tested in test_cpu_quota.py)."""
    cc = native_runtime.compiler()
    assert cc is not None
    function = ctypes.CDLL(str(native_runtime.build(cc))).aotk_cpu_quota
    function.argtypes = [ctypes.c_char_p]
    return function(b"")


def _threads_with(**env: str) -> tuple[int, str]:
    """The pool size and the warnings of a fresh process with `env` on top of ours."""
    script = "import aotk; print(aotk.get_num_threads())"
    clean = {
        k: v for k, v in os.environ.items() if k not in ("AOTK_NUM_THREADS", "OMP_NUM_THREADS")
    }
    ran = subprocess.run(
        [sys.executable, "-W", "always", "-c", script],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    return int(ran.stdout.strip()), ran.stderr


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AOTK_NUM_THREADS": "3"}, 3),
        ({"OMP_NUM_THREADS": "3"}, 3),
        ({"OMP_NUM_THREADS": "3,2"}, 3),  # one count per nesting level: the first is ours
        ({"AOTK_NUM_THREADS": "2", "OMP_NUM_THREADS": "3"}, 2),
        ({"AOTK_NUM_THREADS": "many", "OMP_NUM_THREADS": "3"}, 3),
    ],
)
def test_thread_count_from_environment(env: dict[str, str], expected: int) -> None:
    assert _threads_with(**env)[0] == expected


def test_a_bad_thread_count_is_ignored_with_a_warning() -> None:
    count, stderr = _threads_with(AOTK_NUM_THREADS="0", OMP_NUM_THREADS="x,2")
    assert count == _cpus()
    assert "AOTK_NUM_THREADS='0' is not a positive thread count; ignored" in stderr
    assert "OMP_NUM_THREADS='x,2' is not a positive thread count; ignored" in stderr


def test_aotk_compiles_on_the_cpus_it_may_use_whatever_the_variables_say() -> None:
    """LLVM's parts and the micro-kernel helper: one thread per CPU of the affinity mask,
    at most the quota; AOTK_NUM_THREADS sizes the kernels' pool, not the compiler."""
    script = (
        "import os, sys; from aotk.codegen import llvm_split, native_runtime as rt; "
        "os.sched_setaffinity(0, os.sched_getaffinity(0) "
        "if sys.argv[1] == 'all' else {min(os.sched_getaffinity(0))}); "
        "print(rt.cpus(), llvm_split.parts_for('x' * 10**6))"
    )

    def run(cpus: str) -> list[str]:
        env = {**os.environ, "AOTK_NUM_THREADS": "3", "OMP_NUM_THREADS": "5"}
        ran = subprocess.run(
            [sys.executable, "-c", script, cpus],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stderr[-2000:]
        return ran.stdout.split()

    assert run("all") == [str(_cpus()), str(min(_cpus(), 4))]
    assert run("one") == ["1", "1"]


def test_thread_count_problems() -> None:
    check = native_runtime.thread_count_problems
    assert check({"AOTK_NUM_THREADS": "4", "OMP_NUM_THREADS": "2,1"}) == []
    assert check({}) == []
    assert check({"OMP_NUM_THREADS": "2.5"}) == [
        "OMP_NUM_THREADS='2.5' is not a positive thread count; ignored"
    ]
    assert check({"AOTK_NUM_THREADS": "1,1"}) == [
        "AOTK_NUM_THREADS='1,1' is not a positive thread count; ignored"
    ]


def test_without_compiler_kernels_run_serially(tmp_path: Path) -> None:
    """No C compiler: one warning, and kernels still compute (on one thread)."""
    script = textwrap.dedent(
        """
        import warnings
        import numpy as np
        import aotk
        from aotk import backend as K
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            x = K.placeholder(shape=(None, 512))
            f = K.function([x], [K.tanh(x) * x])
            a = np.linspace(-3, 3, 64 * 512, dtype=np.float32).reshape(64, 512)
            got = f([a])[0]
            f([a])
        assert np.allclose(got, np.tanh(a) * a, rtol=1e-5, atol=1e-6)
        messages = [str(w.message) for w in caught if "one thread" in str(w.message)]
        assert len(messages) == 1, messages
        assert aotk.get_num_threads() == 1
        print("ok")
        """
    )
    env = {
        **os.environ,
        "CC": str(tmp_path / "no-such-cc"),
        "AOTK_CACHE_DIR": str(tmp_path),
        "AOTK_DISK_CACHE": "0",
    }
    ran = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr[-3000:]


def test_a_library_that_is_not_the_one_built_is_built_again_before_loading(
    cc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planted or damaged libaotk_pool.so in the cache is never the one loaded."""
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))
    path = native_runtime.build(cc)
    good = path.read_bytes()
    for planted in (b"\x7fELF planted", good[: len(good) // 2]):
        path.write_bytes(planted)
        assert native_runtime.build(cc) == path
        assert path.read_bytes() != planted
        assert hashlib.sha256(path.read_bytes()).hexdigest() == (
            path.with_name(path.name + ".sha256").read_text()
        )


def test_an_untrusted_cache_directory_is_not_used_for_the_runtime(
    cc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("AOTK_CACHE_DIR", str(shared))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.warns(RuntimeWarning, match="writable by group or others"):
        path = native_runtime.build(cc)
    assert shared not in path.parents and path.exists()
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert not any(shared.iterdir())


def test_a_pool_built_for_one_process_is_removed_once_loaded(tmp_path: Path) -> None:
    """With no usable cache the pool is built in the temporary folder; the process that
    loaded it still runs kernels on two threads, and leaves nothing there."""
    shared, scratch = tmp_path / "shared", tmp_path / "tmp"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    scratch.mkdir()
    script = textwrap.dedent(
        """
        import os, warnings
        import numpy as np
        import aotk
        from aotk import backend as K
        warnings.simplefilter("ignore")
        x = K.placeholder(shape=(None, 512))
        f = K.function([x], [K.tanh(x) * x])
        a = np.linspace(-3, 3, 256 * 512, dtype=np.float32).reshape(256, 512)
        assert np.allclose(f([a])[0], np.tanh(a) * a, rtol=1e-5, atol=1e-6)
        assert aotk.get_num_threads() == 2, aotk.get_num_threads()
        assert not os.listdir(os.environ["TMPDIR"]), os.listdir(os.environ["TMPDIR"])
        print("ok")
        """
    )
    env = {**os.environ, "AOTK_CACHE_DIR": str(shared), "AOTK_DISK_CACHE": "0"}
    env |= {"TMPDIR": str(scratch), "AOTK_NUM_THREADS": "2"}
    ran = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "ok", ran.stderr[-3000:]
    assert not any(scratch.iterdir()) and not any(shared.iterdir())
