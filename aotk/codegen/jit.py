"""Stage 5: optimized LLVM module -> relocatable object code -> functions in this process.

Code generation and loading are separate steps, so object code can come from the disk
cache or from a pickle and be linked in without compiling anything. Every kernel takes
pointers and i64 and returns void or i64, so the ctypes signature of each function is a
short code ("p" pointer, "i" i64, "v" void) derived from its llvm.func type.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import llvmlite.binding as llvm_binding
from xdsl.dialects import llvm
from xdsl.dialects.builtin import IntegerType, ModuleOp
from xdsl.ir import Attribute

from aotk import timing
from aotk.codegen import jit_print, llvm_ir, llvm_split, native_runtime, packed_entry

_ARG_CTYPES: dict[str, Any] = {"p": ctypes.c_void_p, "i": ctypes.c_int64}
_RESULT_CTYPES: dict[str, Any] = {**_ARG_CTYPES, "v": None}


@dataclass(frozen=True)
class NativeCode:
    """Object code of one module (one object per part it was compiled in, see
    `llvm_split`) and the signature of each function it defines."""

    objects: tuple[bytes, ...]
    signatures: dict[str, str]  # name -> result code then argument codes, e.g. "vppi"
    llvm_ir: str = ""  # optimized, for reading
    source_ir: str = ""  # before optimization, which an export re-optimizes for its target


@dataclass
class CompiledModule:
    """Native code of one module linked into this process, kept alive with its engine."""

    engine: llvm_binding.ExecutionEngine
    code: NativeCode
    # ctypes functions, or callers of their packed wrappers (`packed_entry`)
    functions: dict[str, Callable[..., Any]] = field(default_factory=dict)
    addresses: dict[str, int] = field(default_factory=dict)  # of the functions themselves

    def __getitem__(self, name: str) -> Callable[..., Any]:
        return self.functions[name]

    @property
    def llvm_ir(self) -> str:
        return self.code.llvm_ir


def signatures(module: ModuleOp) -> dict[str, str]:
    """The signature code of every entry point (public llvm.func with a body) of a
    stage-3 module."""
    out = {}
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and op.body.blocks and op.sym_visibility is None:
            fn_type = op.function_type
            result = "v" if isinstance(fn_type.output, llvm.LLVMVoidType) else _code(fn_type.output)
            out[op.sym_name.data] = result + "".join(_code(t) for t in fn_type.inputs)
    return out


def _code(t: Attribute) -> str:
    if isinstance(t, llvm.LLVMPointerType):
        return "p"
    if isinstance(t, IntegerType) and t.width.data == 64:
        return "i"
    raise TypeError(f"aotk kernels take pointers and i64, got {t}")


def generate(
    module: ModuleOp,
    cpu: str | None = None,
    features: str | None = None,
    prefix: str = "",
    micro_kernel: bool = False,
) -> NativeCode:
    """Optimize a stage-3 module for `cpu`/`features` (default: this host); emit object
    code whose functions are named `<prefix><name>`. `micro_kernel` turns on what only
    code compiled once is worth: see `llvm_ir.code_generation` and `llvm_ir.optimize`."""
    tm = llvm_ir.target_machine(cpu, features, jit=False)
    code = source(module, tm)
    return generate_from_text(
        code.source_ir, code.signatures, cpu, features, prefix, micro_kernel, tm
    )


def source(module: ModuleOp, tm: llvm_binding.TargetMachine) -> NativeCode:
    """A stage-3 module as LLVM IR text for `tm`'s target (`source_ir`, stage 4), with
    its signatures and no objects: what `generate_from_text` compiles."""
    with timing.stage("llvm-ir text"):
        text = llvm_ir.to_llvm_text(module, tm)
    return NativeCode((), signatures(module), "", text)


def generate_from_text(
    text: str,
    sigs: dict[str, str],
    cpu: str | None = None,
    features: str | None = None,
    prefix: str = "",
    micro_kernel: bool = False,
    tm: llvm_binding.TargetMachine | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> NativeCode:
    """`generate` from the module's LLVM IR text (stage 4): a large module is compiled
    in parts on several cores (`llvm_split`, running `meanwhile` while they work), a
    small one whole by `tm` (default: a new one for `cpu`/`features`)."""
    # a micro-kernel module's entry points are its kernels: no glue
    texts = llvm_split.pieces(text, () if micro_kernel else sigs)
    if len(texts) == 1:
        tm = tm or llvm_ir.target_machine(cpu, features, jit=False)
        return generate_from_ir(text, sigs, tm, prefix, micro_kernel)
    timing.count_compile("llvm")
    with (
        llvm_ir.code_generation(strength_reduction=micro_kernel),
        timing.stage(f"llvm optimize+emit, {len(texts)} threads"),
    ):
        parts = llvm_split.compile_parts(
            texts, cpu, features, slp=micro_kernel, prefix=prefix, meanwhile=meanwhile
        )
    ir = "\n".join(p.ir for p in parts)
    named = {prefix + name: sig for name, sig in sigs.items()}
    return NativeCode(tuple(p.obj for p in parts), named, ir, text if not prefix else "")


def generate_from_ir(
    text: str,
    sigs: dict[str, str],
    tm: llvm_binding.TargetMachine,
    prefix: str = "",
    micro_kernel: bool = False,
    optimized: bool = False,
) -> NativeCode:
    """Optimize LLVM IR text (stage 4) for `tm` and emit an object, renaming as `generate`;
    `optimized`: the text was optimized for this very `tm` already, emit it as it is."""
    timing.count_compile("llvm")
    if optimized:
        with timing.stage("llvm parse"):
            mod = llvm_ir.parsed(text, tm, prefix)
    else:
        with timing.stage("llvm optimize"):
            mod = llvm_ir.optimize(text, tm, prefix, slp=micro_kernel)
    named = {prefix + name: sig for name, sig in sigs.items()}
    with llvm_ir.code_generation(micro_kernel), timing.stage("llvm emit object"):
        obj = tm.emit_object(mod)
    return NativeCode((obj,), named, str(mod), text if not prefix else "")


def optimize_only(
    text: str, sigs: dict[str, str], tm: llvm_binding.TargetMachine, micro_kernel: bool = False
) -> NativeCode:
    """LLVM IR text (stage 4) optimized for `tm`, without an object: code to emit later
    under other names (`generate_from_ir`'s `optimized`)."""
    timing.count_compile("llvm")
    with timing.stage("llvm optimize"):
        mod = llvm_ir.optimize(text, tm, slp=micro_kernel)
    return NativeCode((), dict(sigs), str(mod), text)


def load(code: NativeCode) -> CompiledModule:
    """Link object code made for this host into the process; return callables by name.

    The micro-kernels it calls must be linked first (`aotk.micro_kernels.load` does both).
    """
    native_runtime.ensure_loaded()  # kernels call aotk_parallel_for
    jit_print.register()  # and aotk.print_tensor's calls
    engine = llvm_binding.create_mcjit_compiler(
        llvm_binding.parse_assembly(""), llvm_ir.target_machine()
    )
    with timing.stage("link in process"):
        for obj in code.objects:
            engine.add_object_file(llvm_binding.ObjectFileRef.from_data(obj))
        engine.finalize_object()
    compiled = CompiledModule(engine, code)
    for name, sig in code.signatures.items():
        address = engine.get_function_address(name)
        if not address:
            raise RuntimeError(f"aotk: the object code defines no function @{name}")
        compiled.addresses[name] = address
        if packed_entry.needs_packing(sig):
            address = engine.get_function_address(name + packed_entry.SUFFIX)
            result = _RESULT_CTYPES[sig[0]]
            compiled.functions[name] = packed_entry.caller(address, result, len(sig) - 1)
        else:
            compiled.functions[name] = prototype(sig)(address)
    return compiled


def prototype(signature: str) -> Any:
    """The ctypes function type of a signature code (`signatures`)."""
    args = (_ARG_CTYPES[c] for c in signature[1:])
    return ctypes.CFUNCTYPE(_RESULT_CTYPES[signature[0]], *args)


def compile_module(
    module: ModuleOp, cpu: str | None = None, features: str | None = None
) -> CompiledModule:
    """JIT every llvm.func of a stage-3 module; return callables by name."""
    return load(generate(module, cpu, features))
