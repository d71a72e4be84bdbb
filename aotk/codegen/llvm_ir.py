"""Stage 4 and the O3 pipeline: llvm-dialect module -> optimized LLVM module for a target.

One target machine per (cpu, features) is made and cached; by default the host CPU with
all its features, so AVX2/AVX-512 code comes out where the machine has it.
"""

from __future__ import annotations

import ctypes
import functools
import re
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from typing import Any

import llvmlite.binding as llvm_binding
from llvmlite.binding import ffi as llvm_ffi
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp

from aotk.codegen import markers, packed_entry

VECTOR_INTERLEAVE = 4  # vectors of a vectorized loop in flight, see _initialize


@functools.cache
def _initialize() -> None:
    llvm_binding.initialize_native_target()
    llvm_binding.initialize_native_asmprinter()
    # The loop vectorizer interleaves a loop only while its body is cheap and its live
    # values fit the registers, counting each splat constant as one. A polynomial exp
    # or tanh is neither, so it ran one vector at a time, bound by its FMA chain's
    # latency. Four, what it already chose for short loops and reductions: W1 -9%, the
    # softmax rows -3%, the LSTM within noise; the LLVM stage of the LSTM's graphs takes
    # 0.04-0.05 s longer. Two cut the short loops' four to two: softmax 4% slower.
    # (LLVM options are process-wide.)
    llvm_binding.set_option("aotk", f"-force-vector-interleave={VECTOR_INTERLEAVE}")


_codegen_lock = threading.RLock()


@contextmanager
def code_generation(strength_reduction: bool) -> Iterator[None]:
    """Hold LLVM's code generation settings for one compile (they are process-wide).

    Loop strength reduction is superlinear in the address computations a loop holds: on
    a Keras LSTM training step (a scan whose body holds every kernel of a step) it took
    3.5 of the 3.9 s of code generation, and 0.45 of 0.6 s on an MLP's training step.
    Models are compiled without it (no bench/ figure moved beyond noise); micro-kernels,
    compiled once, keep it.
    """
    _initialize()
    with _codegen_lock:
        llvm_binding.set_option("aotk", f"-disable-lsr={'false' if strength_reduction else 'true'}")
        yield


def host_cpu() -> str:
    _initialize()
    return llvm_binding.get_host_cpu_name()


def host_features() -> str:
    _initialize()
    return llvm_binding.get_host_cpu_features().flatten()


def required_features(features: str) -> list[str]:
    """The features a code generation string ("+avx2,-avx512f,...") switches on."""
    return sorted(f[1:] for f in features.split(",") if f.startswith("+"))


def host_feature_map() -> dict[str, bool]:
    """Every CPU feature LLVM knows for this architecture, and whether this host has it."""
    _initialize()
    return dict(llvm_binding.get_host_cpu_features())


def target_machine(
    cpu: str | None = None,
    features: str | None = None,
    *,
    jit: bool = True,
    codegen_level: int = 3,
) -> llvm_binding.TargetMachine:
    """A new target machine for `cpu`/`features` (default: this host), its code generation
    at O3, or at `codegen_level`.

    Never cached: MCJIT takes ownership of the machine it is given and frees it with
    the engine, so a shared one would dangle once a compiled module is collected.
    """
    _initialize()
    target = llvm_binding.Target.from_triple(llvm_binding.get_process_triple())
    return target.create_target_machine(
        cpu=cpu or host_cpu(),
        features=vector_width_features(host_features() if features is None else features),
        opt=codegen_level,
        reloc="pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


def vector_width_features(features: str) -> str:
    """`features`, and on AVX-512 targets LLVM's vectorizers let to use zmm registers.

    LLVM's tuning for Intel's AVX-512 CPUs caps its vectorizers at 256 bits, against the
    clock drop of wide vectors on the first such CPUs. aotk's own kernels use zmm there
    already (`kernels.heuristics`); for the loops LLVM vectorizes, 512 bits took the
    tanh/sigmoid chain (W1) from 4.56 to 3.79 ms and softmax rows (W7) from 2.48 to
    2.11 ms on one Emerald Rapids core (medians of four alternations).
    """
    if "+avx512f" in features.split(","):
        return f"{features},-prefer-256-bit"
    return features


def to_llvm_text(module: ModuleOp, tm: llvm_binding.TargetMachine) -> str:
    """Stage 4: the LLVM IR text of an llvm-dialect module, for `tm`'s triple and layout.

    Private functions (outlined kernels and parallel tasks) are `noinline`: inlined back
    into their one caller, they made a model's entry as large as before outlining, and
    LLVM's time with it. Marker calls become the vector operations they name (`markers`).
    """
    ir_module = convert_module(
        module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data)
    )
    markers.expand(ir_module)
    private = {
        op.sym_name.data
        for op in module.ops
        if isinstance(op, llvm.FuncOp) and op.sym_visibility is not None
    }
    for fn in ir_module.functions:
        if fn.name in private and not fn.is_declaration:
            fn.attributes.add("noinline")
    public = {fn.name for fn in ir_module.functions if fn.name not in private}
    packed_entry.add_wrappers(ir_module, public)
    return str(ir_module)


def optimize(
    llvm_text: str,
    tm: llvm_binding.TargetMachine,
    prefix: str = "",
    context: llvm_binding.ContextRef | None = None,
    slp: bool = False,
    siblings: Collection[str] = (),
    level: int = 3,
) -> llvm_binding.ModuleRef:
    """Parse and run LLVM's O3 module pipeline (O1 with `level=1`), its loop vectorizer
    included.

    LLVM's loop unroller is off: hot loops are unrolled where aotk emits them (register
    tiles) or interleaved by the vectorizer, which still runs. On the W4 training step
    the unroller doubled the code and the LLVM time with no measured speed-up, and it
    made the packed matmul micro-kernel 1.6x slower.

    The SLP vectorizer runs only with `slp` (micro-kernels, compiled once: it packs the
    lanes of their random number generators). On models' code it took 10-44% of the
    pipeline's time, on MobileNetV2 0.9 of 2.1 s, and changed only cold code: the loop
    vectorizer's overlap checks, the scalar tails of vectorized loops, the workspace-size
    and output-dims functions. Hot loops are vectors already, by aotk or that vectorizer.

    `context`: the LLVM context to parse into (one per thread; default the global one).
    In a context of its own the pipeline runs outside llvmlite's lock (`unlocked`).
    `prefix`, `siblings`: as `parsed`'s.
    """
    mod = parsed(llvm_text, tm, prefix, context, siblings=siblings)
    options = llvm_binding.PipelineTuningOptions(speed_level=level)
    options.loop_vectorization = True
    options.slp_vectorization = slp
    options.loop_unrolling = False
    with (
        options,
        llvm_binding.create_pass_builder(tm, options) as builder,
        builder.getModulePassManager() as mpm,
    ):
        if context is None:
            mpm.run(mod, builder)
        else:
            unlocked("LLVMPY_RunNewModulePassManager")(mpm, mod, builder)
    return mod


_MODULE_START = re.compile(r"(?m)^(?=; ModuleID = )")  # where a printed module begins


def parsed(
    llvm_text: str,
    tm: llvm_binding.TargetMachine,
    prefix: str = "",
    context: llvm_binding.ContextRef | None = None,
    *,
    siblings: Collection[str] = (),
) -> llvm_binding.ModuleRef:
    """LLVM IR text parsed and verified for `tm`, not optimized: one printed module, or
    several one after another (a split module's optimized parts, `llvm_split`), linked
    into one. With a `prefix`, every defined function is renamed `<prefix><name>` and
    hidden, so a library can hold the kernels of several models (and a program its own
    `main`); so are the `siblings` it declares, which other parts of its module define."""
    # one module is the common case (every model's optimize): no regex pass over its text
    texts = [llvm_text]
    if "\n; ModuleID = " in llvm_text:
        texts = [text for text in _MODULE_START.split(llvm_text) if text.strip()]
    first, *others = (llvm_binding.parse_assembly(text, context=context) for text in texts)
    for other in others:
        first.link_in(other)
    mod = first
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    if prefix:
        for fn in mod.functions:
            # micro-kernels are renamed too: the library links its own copy of each
            if not fn.is_declaration or fn.name.startswith("aotk_uk_") or fn.name in siblings:
                fn.name = prefix + fn.name
                fn.visibility = "hidden"
    mod.verify()
    return mod


def unlocked(entry: str) -> Callable[..., Any]:
    """llvmlite's C entry point `entry`, called without llvmlite's process-wide lock.

    llvmlite serializes every call into LLVM with one lock, so threads compiling parts
    of a module would run one at a time. LLVM itself only asks that threads share no
    context: a caller gives each thread its own context, module, pass builder and target
    machine. ctypes releases the GIL for the call. Should llvmlite stop exposing the raw
    function, the locked one is used (correct, only serial).
    """
    wrapped = getattr(llvm_ffi.lib, entry)
    return getattr(wrapped, "_cfn", wrapped)


def emit_object_unlocked(tm: llvm_binding.TargetMachine, mod: llvm_binding.ModuleRef) -> bytes:
    """`tm.emit_object(mod)` outside llvmlite's lock; `mod` must be in a context of its own."""
    with llvm_ffi.OutputString() as error:
        buffer = unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 1, error)
        if not buffer:
            raise RuntimeError(f"LLVM could not emit object code: {error}")
    try:
        start = llvm_ffi.lib.LLVMPY_GetBufferStart(buffer)
        return ctypes.string_at(start, llvm_ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        llvm_ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def assembly(mod: llvm_binding.ModuleRef, tm: llvm_binding.TargetMachine) -> str:
    return tm.emit_assembly(mod)
