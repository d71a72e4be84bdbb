"""The thread pool that in-process kernels call (`runtime/aotk_pool.c`), built and loaded once.

`ensure_loaded()` compiles the pool with the system C compiler (`$CC`, else `cc`) into
`cache_dir()/runtime/<hash>/libaotk_pool.so`, where the hash covers the sources and the
compiler, and makes its symbols visible to MCJIT. Several processes may build at once:
each writes a temporary file and renames it into place. The SHA-256 of the library is
recorded beside it when it is built, and a library that does not match it is built again
before anything loads it; without a private cache directory (`paths`), the pool is built
into a fresh private temporary directory for this process. Without a C compiler, a serial
`aotk_parallel_for` made with llvmlite stands in, and kernels run on one thread.
Kernels use `set_threads(n)` threads, else $AOTK_NUM_THREADS, else the first entry of
$OMP_NUM_THREADS, else one per CPU the process may run on (its affinity mask: taskset, a
container's cpuset), at most its cgroups' CPU quota rounded up (docker --cpus, a Kubernetes
CPU limit; `runtime/aotk_cpus.c`). A value that is not a positive count is ignored with a
warning.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path

import llvmlite.binding as llvm_binding

from aotk import paths, timing

SOURCES = ("aotk_pool_internal.h", "aotk_pool.c", "aotk_cpus_internal.h", "aotk_cpus.c")
LIBRARY = "libaotk_pool.so"

# Runs fn(ctx, 0, n) on the calling thread: the whole contract, minus the threads.
_SERIAL_IR = """
define void @aotk_parallel_for(ptr %fn, ptr %ctx, i64 %n) {
entry:
  %some = icmp sgt i64 %n, 0
  br i1 %some, label %run, label %done
run:
  call void %fn(ptr %ctx, i64 0, i64 %n)
  br label %done
done:
  ret void
}

define i64 @aotk_parallel_width() {
  ret i64 1
}
"""
RUNTIME_SYMBOLS = ("aotk_parallel_for", "aotk_parallel_width")
PRIVATE_BUILD_PREFIX = "aotk-runtime-"  # a pool built outside the cache, for one process

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None
_serial_engine: llvm_binding.ExecutionEngine | None = None


def compiler() -> str | None:
    """The C compiler command to build the runtime with ($CC, else `cc`), or None."""
    command = os.environ.get("CC") or "cc"
    if not command.split() or shutil.which(command.split()[0]) is None:
        return None
    return command


def library_path(
    cc: str, root: Path, sources: tuple[str, ...] = SOURCES, library: str = LIBRARY
) -> Path:
    """Where `library` (the pool unless told) built from the current `sources` by `cc`
    lives in cache `root`."""
    digest = hashlib.sha256(cc.encode())
    exe = shutil.which(cc.split()[0])
    if exe is not None:
        stat = Path(exe).resolve().stat()
        digest.update(f"{stat.st_size}:{stat.st_mtime_ns}".encode())
    for name in sources:
        digest.update((paths.runtime_dir() / name).read_bytes())
    return root / "runtime" / digest.hexdigest()[:20] / library


def build(cc: str, sources: tuple[str, ...] = SOURCES, library: str = LIBRARY) -> Path:
    """The cached `library` (the pool unless told), compiled from `sources` first if it
    is not there yet or does not match the hash recorded when it was built."""
    root = paths.private_cache_dir()
    if root is not None:
        path = library_path(cc, root, sources, library)
        if _matches_its_record(path):
            return path
        with suppress(OSError):
            paths.private_subdir(root, *path.parent.relative_to(root).parts)
            if _compile_into(cc, path, sources):
                return path
    # no usable cache, or another process replaced the library meanwhile: build it for
    # this process only
    path = Path(tempfile.mkdtemp(prefix=PRIVATE_BUILD_PREFIX)) / library
    if not _compile_into(cc, path, sources):
        raise RuntimeError(f"the runtime library {path} changed while it was built")
    return path


def _compile_into(cc: str, path: Path, sources: tuple[str, ...]) -> bool:
    """Compile `sources` into the library `path` (by rename) and record its hash beside
    it; True if `path` then holds what this call built."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        c_files = [str(paths.runtime_dir() / name) for name in sources if name.endswith(".c")]
        cmd = [*cc.split(), "-O2", "-fPIC", "-shared", "-pthread", *c_files, "-o", tmp]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        timing.count_compile("c")
        digest = hashlib.sha256(Path(tmp).read_bytes()).hexdigest()
        _record(path).write_text(digest)
        os.replace(tmp, path)  # atomic: a concurrent builder's copy is just as good
    finally:
        Path(tmp).unlink(missing_ok=True)
    return hashlib.sha256(path.read_bytes()).hexdigest() == digest


def _record(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _matches_its_record(path: Path) -> bool:
    """Whether the library at `path` is the one whose hash was recorded when it was built."""
    try:
        recorded = _record(path).read_text().strip()
        return hashlib.sha256(path.read_bytes()).hexdigest() == recorded
    except OSError:
        return False


def thread_count_problems(environ: Mapping[str, str]) -> list[str]:
    """What the pool will ignore in the thread-count variables of `environ`."""
    problems = []
    for name, first_of_list in (("AOTK_NUM_THREADS", False), ("OMP_NUM_THREADS", True)):
        value = environ.get(name, "")
        head = value.split(",")[0] if first_of_list else value
        if value and not (head.isdigit() and int(head) > 0):
            problems.append(f"{name}={value!r} is not a positive thread count; ignored")
    return problems


def ensure_loaded() -> None:
    """Make `aotk_parallel_for` and `aotk_parallel_width` resolvable by MCJIT;
    idempotent and thread-safe."""
    global _lib
    if _lib is not None or _serial_engine is not None:
        return
    with _lock:
        if _lib is not None or _serial_engine is not None:
            return
        for problem in thread_count_problems(os.environ):
            warnings.warn(f"aotk: {problem}", RuntimeWarning, stacklevel=2)
        cc = compiler()
        problem = "no C compiler found ($CC or cc)"
        if cc is not None:
            try:
                path = build(cc)
                llvm_binding.load_library_permanently(str(path))
                _lib = _bind(ctypes.CDLL(str(path)))
                remove_private_build(path)
                return
            except (OSError, RuntimeError, subprocess.CalledProcessError) as err:
                problem = f"building the thread pool failed: {_describe(err)}"
        _load_serial()
        warnings.warn(
            f"aotk: {problem}; compiled kernels run on one thread", RuntimeWarning, stacklevel=2
        )


def remove_private_build(path: Path) -> None:
    """Remove a pool built for this process alone once it is loaded (the loader keeps
    its mapping), so that no run leaves a directory in the temporary folder."""
    if path.parent.name.startswith(PRIVATE_BUILD_PREFIX):
        shutil.rmtree(path.parent, ignore_errors=True)


def _describe(err: Exception) -> str:
    if isinstance(err, subprocess.CalledProcessError):
        return (err.stderr or "").strip()[-500:] or str(err)
    return str(err)


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.aotk_set_default_threads.argtypes = [ctypes.c_int]
    lib.aotk_set_default_threads.restype = None
    lib.aotk_get_default_threads.argtypes = []
    lib.aotk_get_default_threads.restype = ctypes.c_int
    lib.aotk_available_cpus.argtypes = []
    lib.aotk_available_cpus.restype = ctypes.c_int
    return lib


def _load_serial() -> None:
    """Define a one-thread `aotk_parallel_for` (and a width of 1) in process and register
    their addresses."""
    global _serial_engine
    from aotk.codegen import llvm_ir

    mod = llvm_binding.parse_assembly(_SERIAL_IR)
    engine = llvm_binding.create_mcjit_compiler(mod, llvm_ir.target_machine())
    engine.finalize_object()
    for name in RUNTIME_SYMBOLS:
        llvm_binding.add_symbol(name, engine.get_function_address(name))
    _serial_engine = engine  # the code lives as long as its engine


def set_threads(n: int) -> None:
    """Run kernels on n threads (n <= 0: the default, above); no-op without the C pool."""
    ensure_loaded()
    if _lib is not None:
        _lib.aotk_set_default_threads(int(n))


def threads() -> int:
    """Threads kernels run on (the default pool's size; 1 without the C pool)."""
    ensure_loaded()
    return int(_lib.aotk_get_default_threads()) if _lib is not None else 1


def cpus() -> int:
    """The CPUs this process may run on, at most its CPU quota: how many threads aotk
    compiles on (the affinity mask alone without the C pool)."""
    ensure_loaded()
    if _lib is not None:
        return int(_lib.aotk_available_cpus())
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def threads_if_running() -> int:
    """`threads()` when the C pool is loaded already, else 0 (nothing is built)."""
    with _lock:
        lib = _lib
    return int(lib.aotk_get_default_threads()) if lib is not None else 0
