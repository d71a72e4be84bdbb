"""aotk: an ahead-of-time compiler for Keras-style tensor programs."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def export(fn: Any, out_dir: Any, name: str = "model", **options: Any) -> Any:
    """Export a compiled K.function as lib<name>.so/.a and <name>.h (see `aotk.aot`)."""
    from aotk.aot import export as _export

    return _export(fn, out_dir, name, **options)


def load(path: Any, **options: Any) -> Any:
    """Open an exported lib<name>.so as a callable like its K.function (see `aotk.aot`).

    The library is native code that runs in this process: load only libraries from a
    source you trust, or require a signature with `signing_key` (see `aotk.signing`)."""
    from aotk.aot import load as _load

    return _load(path, **options)


def set_num_threads(n: int) -> None:
    """Run compiled kernels on n threads (n <= 0: back to the default, $AOTK_NUM_THREADS,
    else $OMP_NUM_THREADS's first entry, else one per CPU the process may run on, at most
    its cgroups' CPU quota).

    See `aotk.codegen.native_runtime`.
    """
    from aotk.codegen import native_runtime

    native_runtime.set_threads(n)


def get_num_threads() -> int:
    """Threads compiled kernels run on."""
    from aotk.codegen import native_runtime

    return native_runtime.threads()


def compile_counts() -> dict[str, int]:
    """How many times this process compiled code: {"llvm": object code generated from IR,
    "c": C libraries built}. Code linked from the disk cache, a pickle or an exported
    library is not counted, so a worker that was shipped compiled functions shows zeros."""
    from aotk import timing

    return timing.compile_counts()
