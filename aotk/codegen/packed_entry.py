"""Entry points too wide for ctypes, called through a wrapper that takes their arguments
packed in one array.

ctypes calls a C function of at most 1024 arguments. A kernel takes one per input, weight,
output and dynamic dim, so a large model passes that (NASNetMobile's predict function:
1131). For such a kernel `<name>_packed(i64 *args)` loads each argument from the array
(pointers as their addresses) and calls it; Python fills the array and calls the wrapper.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

import llvmlite.binding as llvm_binding
import llvmlite.ir as ir
import numpy as np

CTYPES_MAX_ARGS = 1024
SUFFIX = "_packed"
_trampolines: dict[str, int] = {}  # signature code -> address
_trampoline_engine: list[llvm_binding.ExecutionEngine] = []  # one, made on first use
_trampolines_lock = threading.Lock()


def needs_packing(signature: str) -> bool:
    """Whether a kernel of this signature code (result, then arguments) is too wide."""
    return len(signature) - 1 > CTYPES_MAX_ARGS


def add_wrappers(module: ir.Module, entries: set[str]) -> None:
    """Define `<name>_packed` for every function of `entries` too wide for ctypes."""
    i64 = ir.IntType(64)
    for fn in list(module.functions):
        if fn.is_declaration or fn.name not in entries:
            continue
        fn_type = fn.function_type
        if len(fn_type.args) <= CTYPES_MAX_ARGS:
            continue
        fn.attributes.add("noinline")  # else LLVM copies the whole kernel into the wrapper
        wrapper_type = ir.FunctionType(fn_type.return_type, [ir.PointerType()])
        wrapper = ir.Function(module, wrapper_type, name=fn.name + SUFFIX)
        b = ir.IRBuilder(wrapper.append_basic_block())
        args = []
        for i, arg_type in enumerate(fn_type.args):
            slot = b.gep(wrapper.args[0], [ir.Constant(i64, i)], source_etype=i64)
            value = b.load(slot, typ=i64)
            args.append(value if arg_type == i64 else b.inttoptr(value, arg_type))
        result = b.call(fn, args)
        if isinstance(fn_type.return_type, ir.VoidType):
            b.ret_void()
        else:
            b.ret(result)


def caller(address: int, result: Any, n_args: int) -> Callable[..., Any]:
    """A Python callable taking the kernel's `n_args` arguments (addresses and dims, ints),
    calling its wrapper. NumPy packs them: 5x faster than a ctypes array (70 against 390 us
    for 1100), and faster than ctypes passing them one by one."""
    wrapper = ctypes.CFUNCTYPE(result, ctypes.c_void_p)(address)

    def call(*args: int) -> Any:
        if len(args) != n_args:
            raise TypeError(f"aotk kernel: expected {n_args} arguments, got {len(args)}")
        packed = np.array(args, dtype=np.int64)
        return wrapper(packed.ctypes.data)

    return call


def trampoline(signature: str) -> int:
    """The address of `void t(fn, i64 *args)`, which calls `fn`, a function of signature
    code `signature`, with its arguments loaded from `args` (its result dropped). One per
    signature and process (about 1 ms to make): `native_call` calls every kernel so."""
    with _trampolines_lock:
        address = _trampolines.get(signature)
        if address is None:
            address = _trampolines[signature] = _compile_trampoline(signature)
        return address


def _compile_trampoline(signature: str) -> int:
    if not _trampoline_engine:
        # loads and a call: LLVM's codegen at -O0 makes one in a third of the time
        target = llvm_binding.Target.from_default_triple()
        machine = target.create_target_machine(opt=0, codemodel="jitdefault")
        empty = llvm_binding.parse_assembly("")
        _trampoline_engine.append(llvm_binding.create_mcjit_compiler(empty, machine))
    types = {"p": "ptr", "i": "i64", "v": "void"}
    name = f"aotk_trampoline_{signature}"
    body, args = [], []
    for i, code in enumerate(signature[1:]):
        body.append(f"  %s{i} = getelementptr i64, ptr %args, i64 {i}")
        body.append(f"  %v{i} = load i64, ptr %s{i}")
        if code == "p":
            body.append(f"  %a{i} = inttoptr i64 %v{i} to ptr")
        args.append(f"{types[code]} %{'a' if code == 'p' else 'v'}{i}")
    body.append(f"  call {types[signature[0]]} %fn({', '.join(args)})")
    text = f"define void @{name}(ptr %fn, ptr %args) {{\n" + "\n".join(body) + "\n  ret void\n}\n"
    engine = _trampoline_engine[0]
    engine.add_module(llvm_binding.parse_assembly(text))
    engine.finalize_object()
    return engine.get_function_address(name)
