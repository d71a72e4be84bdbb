"""A traced module's native code for this host, through the in-process and on-disk
caches (keyed on the module's structure and the host), or its LLVM IR text alone, which
an export optimizes again for its target.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp

from aotk import gc_pause, timing
from aotk.dialect import metadata
from aotk.transforms.structure import structure_text

if TYPE_CHECKING:
    from llvmlite.binding import TargetMachine

    from aotk.codegen import jit

_CACHE: dict[tuple[str, str, str], jit.CompiledModule] = {}
_SOURCES: dict[tuple[str, str, str], jit.NativeCode] = {}  # lowered for exports, not compiled
COMPILE_COUNT = 0  # code generations done by this process (tests check cache hits with it)
DISK_HITS = 0  # kernels this process took from the on-disk cache instead


def clear_cache() -> None:
    """Forget this process's compiled kernels (the on-disk cache stays)."""
    _CACHE.clear()
    _SOURCES.clear()


def compile_traced(module: ModuleOp, text: str | None = None) -> jit.CompiledModule:
    """Compile a traced module (stage 0) to native code, through both caches; `text`:
    its `structure`, if the caller has it."""
    global COMPILE_COUNT, DISK_HITS
    # imported here: `import aotk.backend` does not need LLVM until the first compile
    from aotk import compile_cache, micro_kernels

    key = _host_key(module, text)
    if key not in _CACHE:
        source = _SOURCES.pop(key, None)
        entry = compile_cache.entry_key(*key) if compile_cache.enabled() else None
        compile_fn = functools.partial(_from_source, module, entry, source)
        if entry is not None:
            code, compiled = compile_cache.get_or_compile(entry, compile_fn)
        else:
            code, compiled = compile_fn(), True
        COMPILE_COUNT += compiled
        DISK_HITS += not compiled
        _CACHE[key] = micro_kernels.load(code)
    return _CACHE[key]


def traced_source(module: ModuleOp, text: str | None = None) -> jit.NativeCode:
    """A traced module lowered for this host to LLVM IR text (`source_ir`, stage 4), what
    an export optimizes again: the code compiled already if there is some, else lowered
    now, not compiled, and kept (in this process and on disk) for a compile to come.
    `text`: the module's `structure`, if the caller has it."""
    from aotk import compile_cache

    key = _host_key(module, text)
    if key in _CACHE:
        return _CACHE[key].code
    if key not in _SOURCES:
        if compile_cache.enabled():
            entry = compile_cache.entry_key(*key)
            code = compile_cache.read(entry, "kernels")  # compiled by an earlier process
            if code is None:
                lower = functools.partial(lower_to_source, module)
                code = compile_cache.get_or_compile(entry, lower, "sources")[0]
        else:
            code = lower_to_source(module)
        _SOURCES[key] = code
    return _SOURCES[key]


def _host_key(module: ModuleOp, text: str | None) -> tuple[str, str, str]:
    from aotk.codegen import llvm_ir
    from aotk.kernels import conv_winograd

    options = conv_winograd.option_tag()  # lowering choices the environment makes
    text = structure(module) if text is None else text
    return (text + options, llvm_ir.host_cpu(), llvm_ir.host_features())


def _from_source(
    module: ModuleOp, entry: str | None, source: jit.NativeCode | None
) -> jit.NativeCode:
    """Native code for this host: from the LLVM IR text an export lowered the module to
    (its on-disk copy under `entry`, if any, is dropped: the compiled entry holds the
    text too), else lowered."""
    from aotk import compile_cache
    from aotk.codegen import jit

    if source is None and entry is not None:
        source = compile_cache.read(entry, "sources", remove=True)
    if source is None:
        return lower_to_native(module)
    return jit.generate_from_text(source.source_ir, source.signatures)


def lower_to_native(
    module: ModuleOp, cpu: str | None = None, features: str | None = None, prefix: str = ""
) -> jit.NativeCode:
    """Run the whole pipeline on a copy of a traced module and generate object code."""
    from aotk.codegen import jit, llvm_ir

    tm = llvm_ir.target_machine(cpu, features, jit=False)
    with gc_pause.paused():
        code = lower_to_source(module, tm)  # its lowered IR is garbage now: see gc_pause
        return jit.generate_from_text(
            code.source_ir,
            code.signatures,
            cpu,
            features,
            prefix,
            tm=tm,
            meanwhile=gc_pause.collect_young,
        )


def lower_to_source(module: ModuleOp, tm: TargetMachine | None = None) -> jit.NativeCode:
    """Run the whole pipeline on a copy of a traced module, to LLVM IR text for `tm`'s
    target (default: this host's), compiling nothing."""
    from aotk.codegen import jit, llvm_ir
    from aotk.lowering import pipeline

    with gc_pause.paused():
        lowered = module.clone()
        with timing.stage("xdsl passes, total"):
            pipeline.lower(lowered, "llvm")
        return jit.source(lowered, tm or llvm_ir.target_machine(jit=False))


def structure(module: ModuleOp) -> str:
    """The module as text without value names: two traces of one graph give the same."""
    return structure_text(module, skip=frozenset({metadata.ARG_NAMES}))
