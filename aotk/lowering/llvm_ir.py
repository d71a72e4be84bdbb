"""Stage 4 and the O3 pipeline: llvm-dialect module -> optimized LLVM module for a target.

One target machine per (cpu, features) is made and cached; by default the host CPU with
all its features, so AVX2/AVX-512 code comes out where the machine has it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import llvmlite.binding as llvm_binding
from xdsl.backend.llvm.convert import convert_module
from xdsl.dialects.builtin import ModuleOp


@functools.cache
def _initialize() -> None:
    llvm_binding.initialize_native_target()
    llvm_binding.initialize_native_asmprinter()


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


def target_machine(
    cpu: str | None = None, features: str | None = None, *, jit: bool = True
) -> llvm_binding.TargetMachine:
    """A new target machine at O3 for `cpu`/`features` (default: this host).

    Never cached: MCJIT takes ownership of the machine it is given and frees it with
    the engine, so a shared one would dangle once a compiled module is collected.
    """
    _initialize()
    target = llvm_binding.Target.from_triple(llvm_binding.get_process_triple())
    return target.create_target_machine(
        cpu=cpu or host_cpu(),
        features=host_features() if features is None else features,
        opt=3,
        reloc="pic",
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


def to_llvm_text(module: ModuleOp, tm: llvm_binding.TargetMachine) -> str:
    """Stage 4: the LLVM IR text of an llvm-dialect module, for `tm`'s triple and layout."""
    ir_module = convert_module(
        module, fallback_target_triple=tm.triple, data_layout=str(tm.target_data)
    )
    return str(ir_module)


def optimize(
    llvm_text: str,
    tm: llvm_binding.TargetMachine,
    prefix: str = "",
    context: llvm_binding.ContextRef | None = None,
) -> llvm_binding.ModuleRef:
    """Parse and run LLVM's O3 module pipeline (loop and SLP vectorizers included).

    LLVM's loop unroller is off: hot loops are unrolled where aotk emits them (register
    tiles) or interleaved by the vectorizer, which still runs. On the W4 training step
    the unroller doubled the code and the LLVM time with no measured speed-up, and it
    made the packed matmul micro-kernel 1.6x slower.

    `context`: the LLVM context to parse into (one per thread; default the global one).
    With a `prefix`, every defined function is renamed `<prefix><name>` and hidden, so a
    library can hold the kernels of several models (and a program its own `main`).
    """
    mod = llvm_binding.parse_assembly(llvm_text, context=context)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    if prefix:
        for fn in mod.functions:
            # micro-kernels are renamed too: the library links its own copy of each
            if not fn.is_declaration or fn.name.startswith("aotk_uk_"):
                fn.name = prefix + fn.name
                fn.visibility = "hidden"
    mod.verify()
    options = llvm_binding.PipelineTuningOptions(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    options.loop_unrolling = False
    with (
        options,
        llvm_binding.create_pass_builder(tm, options) as builder,
        builder.getModulePassManager() as mpm,
    ):
        mpm.run(mod, builder)
    return mod


def assembly(mod: llvm_binding.ModuleRef, tm: llvm_binding.TargetMachine) -> str:
    return tm.emit_assembly(mod)
