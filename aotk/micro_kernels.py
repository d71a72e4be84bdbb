"""Micro-kernels as native code: compiled once per target, cached, linked in process.

The object code of a micro-kernel is stored in the on-disk compile cache under its name,
the target and aotk's toolchain fingerprint, whatever `AOTK_DISK_CACHE` says: like the
thread-pool runtime, it is part of the installed compiler, built on first use and shared
by every model and process afterwards. `ensure_loaded` links it into this process once
and publishes its entry point, so every JIT module that calls it resolves it by name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import llvmlite.binding as llvm_binding
from xdsl.dialects.builtin import ModuleOp

from aotk import gc_pause, micro_kernel_helper, timing
from aotk.codegen import jit, llvm_ir, llvm_split, native_runtime
from aotk.kernels import heuristics, library


@dataclass(frozen=True)
class Target:
    """A CPU to compile for: LLVM's name and features, and `heuristics.isa_of` it."""

    cpu: str
    features: str
    isa: str


@dataclass(frozen=True)
class _Linked:
    """A micro-kernel linked into this process: its engine (kept alive) and object code."""

    engine: llvm_binding.ExecutionEngine
    objects: tuple[bytes, ...]


_lock = threading.Lock()
_linked: dict[str, _Linked] = {}  # by symbol
_callables: dict[str, Any] = {}  # by symbol: `function`'s ctypes callables
BUILT = 0  # micro-kernels this process compiled (the rest came from the cache)
_SECTION = "micro-kernels"  # their directory in the on-disk cache


def lowered_module(names: Iterable[str]) -> ModuleOp:
    """The micro-kernels' module lowered to the llvm stage."""
    from aotk.lowering import pipeline

    return pipeline.lower_emitted_loops(library.module(sorted(names)))


def generate(
    name: str, cpu: str | None = None, features: str | None = None, isa: str | None = None
) -> jit.NativeCode:
    """Object code of one micro-kernel for `cpu`/`features` (default: this host), tiled
    for the registers of `isa` (`heuristics.isa_of` the target; default the host's)."""
    with (
        timing.stage(f"micro-kernel {name}"),
        gc_pause.paused(),
        heuristics.tiled_for(isa or heuristics.host_isa()),
    ):
        return jit.generate(lowered_module([name]), cpu, features, micro_kernel=True)


def cached(name: str, target: Target | None = None) -> jit.NativeCode:
    """`generate`'s result for `target` (None: this host) through the on-disk cache
    (compiled only on a miss)."""
    global BUILT
    from aotk import compile_cache

    cpu, features, isa = _or_host(target)
    code, compiled = compile_cache.get_or_compile(
        _key(name, cpu, features, isa),
        lambda: generate(name, cpu, features, isa),
        section=_SECTION,
    )
    BUILT += compiled
    return code


def uncached(names: Sequence[str], target: Target | None = None) -> list[str] | None:
    """Those of `names` whose code for `target` (None: this host) the on-disk cache
    lacks, in order; None when there is no usable cache."""
    from aotk import compile_cache

    cpu, features, isa = _or_host(target)
    found = [compile_cache.stored(_key(name, cpu, features, isa), _SECTION) for name in names]
    if None in found:
        return None
    return [name for name, hit in zip(names, found, strict=True) if not hit]


@contextmanager
def helped(names: Sequence[str], target: Target | None = None) -> Iterator[None]:
    """Build `names` (in this order, in the block) for `target` (None: this host) with a
    helper process building those the cache lacks from the last
    (`aotk.micro_kernel_helper`)."""
    missing = uncached(names, target) if len(names) >= 2 else None
    for_target = () if target is None else (target.cpu, target.features, target.isa)
    with micro_kernel_helper.helping(missing, for_target):
        yield


def build_as_helper(args: Sequence[str]) -> int:
    """The helper process's work: build each named micro-kernel into the cache unless it
    is there, reporting each one compiled here (`micro_kernel_helper.REPORT`). `args`
    are the names, after `--target CPU FEATURES ISA` when they are for another target
    than this host."""
    target = None
    if args[:1] == [micro_kernel_helper.TARGET]:
        target, args = Target(*args[1:4]), args[4:]
    for name in args:
        before = BUILT
        cached(name, target)
        if BUILT > before:
            print(f"{micro_kernel_helper.REPORT}{name}", flush=True)
    return 0


def _or_host(target: Target | None) -> tuple[str, str, str]:
    """(cpu, features, isa) of `target`, or of this host for None."""
    if target is None:
        return llvm_ir.host_cpu(), llvm_ir.host_features(), heuristics.host_isa()
    return target.cpu, target.features, target.isa


def _key(name: str, cpu: str, features: str, isa: str) -> str:
    from aotk import compile_cache

    return compile_cache.entry_key(f"micro-kernel {name} tiled for {isa}", cpu, features)


def load(code: jit.NativeCode) -> jit.CompiledModule:
    """Link a model's object code into the process, after the micro-kernels it calls."""
    ensure_called_loaded(code.objects)
    return jit.load(code)


def ensure_called_loaded(objects: Iterable[bytes]) -> None:
    """Link the micro-kernels that `objects` (model code) call into this process."""
    ensure_loaded(set().union(*map(library.called, objects)))


def ensure_loaded(symbols: Iterable[str]) -> None:
    """Link the named micro-kernels into this process, each once."""
    wanted = sorted(set(symbols) - set(_linked))
    with helped([library.lookup(s).name for s in wanted]):
        for symbol in wanted:
            with _lock:
                if symbol not in _linked:
                    _link(symbol, cached(library.lookup(symbol).name).objects)


def function(symbol: str) -> Any:
    """A micro-kernel as a Python callable (ctypes, typed by its compiled signature),
    linked into this process first if it is not. Made once per symbol: its signature
    comes from the on-disk cache, a read of 2 ms (Keras's initial weights ask once each)."""
    made = _callables.get(symbol)
    if made is None:
        ensure_loaded([symbol])
        signature = cached(library.lookup(symbol).name).signatures[symbol]
        address = _linked[symbol].engine.get_function_address(symbol)
        made = _callables.setdefault(symbol, jit.prototype(signature)(address))
    return made


def provide(symbol: str, objects: tuple[bytes, ...]) -> None:
    """Link a micro-kernel from object code made elsewhere (a pickle), unless linked."""
    library.lookup(symbol)  # only known entry points
    with _lock:
        if symbol not in _linked:
            _link(symbol, objects)


def objects_of(symbol: str) -> tuple[bytes, ...]:
    """The object code of a micro-kernel for this host: as linked, else from the cache."""
    linked = _linked.get(symbol)
    return linked.objects if linked else cached(library.lookup(symbol).name).objects


def _link(symbol: str, objects: tuple[bytes, ...]) -> None:
    native_runtime.ensure_loaded()  # micro-kernels call aotk_parallel_for
    engine = llvm_binding.create_mcjit_compiler(
        llvm_binding.parse_assembly(""), llvm_ir.target_machine()
    )
    for obj in objects:
        engine.add_object_file(llvm_binding.ObjectFileRef.from_data(obj))
    engine.finalize_object()
    address = engine.get_function_address(symbol)
    if not address:
        raise RuntimeError(f"aotk: the micro-kernel object defines no function @{symbol}")
    llvm_binding.add_symbol(symbol, address)
    _linked[symbol] = _Linked(engine, objects)


def export_objects(
    llvm_ir_text: str, target: Target, prefix: str, also: Iterable[str] = ()
) -> dict[str, bytes]:
    """Objects of the micro-kernels an exported module calls (and of the symbols `also`,
    which its runtime calls), for `target`, their functions renamed `<prefix><symbol>`
    and hidden as the module's own are."""
    tm = llvm_ir.target_machine(target.cpu, target.features, jit=False)
    names = [library.lookup(s).name for s in sorted(library.called(llvm_ir_text) | set(also))]
    built_for = None if target.isa == heuristics.host_isa() else target  # host's IR serves
    with helped(names, built_for):
        sources = [cached(name, built_for) for name in names]
    # code optimized for this very CPU and features needs only its functions renamed;
    # the host's is optimized again for another CPU of its instruction set, and for the
    # host itself, whose library uses only the features it checks (`build.resolve_target`)
    ready = _or_host(built_for)[:2] == (target.cpu, target.features)
    codes = [
        source if ready else _optimized_for(name, source, target, tm)
        for name, source in zip(names, sources, strict=True)
    ]
    pieces = [llvm_split.Piece(code.llvm_ir, optimized=True) for code in codes]
    if not pieces:
        return {}
    with llvm_ir.code_generation(True), timing.stage(f"emit {len(pieces)} micro-kernels"):
        parts = llvm_split.compile_parts(pieces, target.cpu, target.features, prefix=prefix)
    return {f"uk_{name}.o": part.obj for name, part in zip(names, parts, strict=True)}


def _optimized_for(
    name: str, source: jit.NativeCode, target: Target, tm: llvm_binding.TargetMachine
) -> jit.NativeCode:
    """The host's micro-kernel `source` optimized again for `target` (of the host's
    instruction set), through the on-disk cache: once per target, not once per export."""
    from aotk import compile_cache

    what = f"micro-kernel {name} tiled for {target.isa}, optimized for an export"
    code, _ = compile_cache.get_or_compile(
        compile_cache.entry_key(what, target.cpu, target.features),
        lambda: jit.optimize_only(source.source_ir, source.signatures, tm, micro_kernel=True),
        section=_SECTION,
    )
    return code
