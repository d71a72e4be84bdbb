"""Turning an exported model's parts into files: target choice, objects, cc and ar.

Everything is built in a private directory inside the output directory and moved into
place at the end, so a failed export leaves no half-written library. Builds are
deterministic: same function and options, same bytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from aotk import paths, timing
from aotk.aot.cgen import CHECKABLE_FEATURES, CPUID_FEATURES, X86_64_BASELINE
from aotk.codegen import llvm_ir, native_runtime
from aotk.codegen.llvm_ir import required_features
from aotk.shipping import missing_features

RUNTIME_SOURCES = (
    "aotk_rt.c",
    "aotk_model.c",
    "aotk_run.c",
    "aotk_pool.c",
    "aotk_cpus.c",
    "aotk_print.c",
)
RUNTIME_HEADERS = (
    "aotk_rt.h",
    "aotk_model_info_internal.h",
    "aotk_model_internal.h",
    "aotk_pool_internal.h",
    "aotk_cpus_internal.h",
)

_V2 = ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")
_V3 = (*_V2, "avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = (*_V3, "avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl")
X86_LEVELS: dict[str, tuple[str, ...]] = {
    "x86-64": (),
    "x86-64-v2": _V2,
    "x86-64-v3": _V3,
    "x86-64-v4": _V4,
}


def resolve_target(cpu: str | None, features: str | None, where: str) -> tuple[str, str, list[str]]:
    """(cpu, LLVM feature string, features the code needs) for the export options.

    Every feature the code may use is one the library checks when it loads: an explicit
    feature that it could not check (or that LLVM does not know) is refused, and for the
    host's CPU those the library could not check are switched off.
    """
    host = llvm_ir.host_cpu()
    if cpu is None and features is None:
        features = _checkable_only(llvm_ir.host_features())
        return host, features, required_features(features)
    cpu = cpu or "x86-64"
    if features is None:
        if cpu == host:
            features = _checkable_only(llvm_ir.host_features())
        elif cpu in X86_LEVELS:
            features = ""
        else:
            raise ValueError(
                f"{where}: give target_features for cpu '{cpu}' (or use one of "
                f"{', '.join(X86_LEVELS)}), so the library can check the CPU it runs on"
            )
    _check_features(features, where)
    needed = sorted(set(X86_LEVELS.get(cpu, ())) | set(required_features(features)))
    if cpu != host and cpu not in X86_LEVELS:
        features = _only_these(features)
    return cpu, features, needed


def runs_here(level: str) -> bool:
    """Whether this CPU has every feature of the x86-64 `level` (a key of X86_LEVELS)."""
    return not missing_features(",".join(f"+{f}" for f in X86_LEVELS[level]))


def _only_these(features: str) -> str:
    """`features` for a named CPU with every other feature switched off first (LLVM
    applies the CPU's own features, then the string in order): the code then uses only
    those the library checks. skylake-avx512 with '+avx2,+fma' had given code with
    AVX-512's mask registers, for a library that checked AVX2 and FMA when it loaded."""
    off = [f"-{name}" for name in llvm_ir.host_feature_map() if name not in X86_64_BASELINE]
    return ",".join([*off, *filter(None, features.split(","))])


def _checkable(feature: str) -> bool:
    return feature in (*X86_64_BASELINE, *CHECKABLE_FEATURES, *CPUID_FEATURES)


def _checkable_only(features: str) -> str:
    """`features` with each one a library could not check at load switched off."""
    items = [f for f in features.split(",") if f]
    return ",".join(f if f[0] == "-" or _checkable(f[1:]) else f"-{f[1:]}" for f in items)


def _check_features(features: str, where: str) -> None:
    known = set(llvm_ir.host_feature_map())
    for item in filter(None, features.split(",")):
        if item[0] not in "+-" or len(item) < 2:
            raise ValueError(
                f"{where}: target_features must look like '+avx2,+fma,-avx512f', got {item!r}"
            )
        name = item[1:]
        if known and name not in known:
            raise ValueError(f"{where}: target_features: unknown CPU feature {name!r}")
        if item[0] == "+" and not _checkable(name):
            raise ValueError(
                f"{where}: target_features: the library could not check when it loads that "
                f"a CPU has {name!r}, and would die of an illegal instruction on one without "
                "it; features it checks: "
                + ", ".join(sorted({*CHECKABLE_FEATURES, *CPUID_FEATURES}))
            )


def weights_source(build: Path, symbol: str, data: bytes) -> str:
    """Write `data` into `build` with an assembly source defining `symbol` as those bytes,
    read-only and 64-byte aligned, and `<symbol>_size` as their count; return the
    source's name, for `compile_and_link`.

    The assembler takes the file as it is: an LLVM constant spelled in hex took 7.8 s
    and 0.6 GB of text for the 190 MB of a ResNet50 training step's weights."""
    (build / "weights.bin").write_bytes(data)
    size = f"{symbol}_size"
    text = f"""\t.section .rodata
\t.balign 64
\t.globl {symbol}
\t.hidden {symbol}
\t.type {symbol}, @object
\t.size {symbol}, {len(data)}
{symbol}:
\t.incbin "weights.bin"
\t.balign 8
\t.globl {size}
\t.hidden {size}
\t.type {size}, @object
\t.size {size}, 8
{size}:
\t.quad {len(data)}
\t.section .note.GNU-stack,"",@progbits
"""
    (build / "weights.s").write_text(text)
    return "weights.s"


def c_compiler() -> str:
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        raise RuntimeError("aotk.export: no C compiler found; install one or set CC")
    return cc


def _run(cmd: list[str], cwd: Path, what: str) -> None:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[:8]
        raise RuntimeError(f"aotk.export: {what} failed: " + " | ".join(detail))


def compile_and_link(
    build: Path,
    name: str,
    objects: list[str],
    glue_c: str,
    cflags: Sequence[str] = (),
    more_sources: Sequence[str] = (),
) -> None:
    """Compile the runtime, the glue and `more_sources` (C or assembly) in `build` (with
    the caller's `cflags` too), then link lib<name>.so and .a there."""
    timing.count_compile("c")
    runtime = paths.runtime_dir()
    for f in (*RUNTIME_SOURCES, *RUNTIME_HEADERS):
        shutil.copyfile(runtime / f, build / f)
    cc = c_compiler()
    flags = ["-std=c99", "-O2", "-fPIC", "-fvisibility=hidden", "-pthread", "-Wall", *cflags]
    sources = (*RUNTIME_SOURCES, glue_c, *more_sources)
    # one compiler process per source, as many at once as this process has CPUs
    with ThreadPoolExecutor(max_workers=native_runtime.cpus()) as pool:
        built = [str(Path(src).with_suffix(".o")) for src in sources]
        # an assembly source is data alone: C's flags (-std, a user's -Werror) are not for it
        commands = [
            [cc, *([] if src.endswith(".s") else flags), "-c", src, "-o", obj]
            for src, obj in zip(sources, built, strict=True)
        ]
        compiles = [
            pool.submit(_run, cmd, build, f"compiling {src}")
            for cmd, src in zip(commands, sources, strict=True)
        ]
        for done in compiles:
            done.result()  # the first failure, in source order
    objects += built
    so = [cc, "-shared", *cflags, f"-Wl,-soname,lib{name}.so", "-o", f"lib{name}.so", *objects]
    _run([*so, "-lm", "-pthread"], build, "linking the shared library")
    ar = shutil.which("ar")
    if ar is None:
        raise RuntimeError("aotk.export: 'ar' not found; it makes the static library")
    _run([ar, "rcsD", f"lib{name}.a", *objects], build, "archiving the static library")


@contextmanager
def staging(out_dir: Path) -> Iterator[Path]:
    """A private build directory inside `out_dir`, removed afterwards whatever happens."""
    out_dir.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=".aotk-export-", dir=out_dir))
    try:
        yield build
    finally:
        shutil.rmtree(build, ignore_errors=True)


def install(build: Path, out_dir: Path, names: list[str]) -> None:
    """Move the finished files into `out_dir`, each by one atomic rename."""
    for n in names:
        os.replace(build / n, out_dir / n)
