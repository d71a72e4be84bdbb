"""The registry of micro-kernels, calls to them, and the IR module that defines them.

Calling convention: every micro-kernel is `void @aotk_uk_<name>(params...)`, where each
parameter is a pointer to the start of a flat buffer ("p") or an i64 ("i"); it writes
only its output buffers, whose memory does not overlap its inputs, and may split its
loops over the thread pool. A call site passes `Buf`s and dims, so its IR is one
`func.call`; `convert-aotk-to-loops` declares the callees (`declare_called`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, func, ptr
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from aotk.ir_walk import ops_within
from aotk.kernels.kernel import INDEX, Buf, DimV, Kernel
from aotk.kernels.make import flat_memref_type, func_call_op

PREFIX = "aotk_uk_"
SYMBOL = re.compile(rb"aotk_uk_[A-Za-z0-9_]+")

# The body builder gets the kernel builder and one value per parameter: a `!ptr_xdsl.ptr`
# for "p", an `index` for "i".
BodyFn = Callable[[Kernel, list[SSAValue]], None]


@dataclass(frozen=True)
class MicroKernel:
    """One routine of the library: its name (without prefix), parameters and body."""

    name: str
    params: str  # one letter per parameter: "p" pointer, "i" i64
    build: BodyFn
    arg_names: tuple[str, ...] = ()  # for reading the IR

    @property
    def symbol(self) -> str:
        return PREFIX + self.name


_REGISTRY: dict[str, MicroKernel] = {}


def register(kernel: MicroKernel) -> MicroKernel:
    if kernel.name in _REGISTRY and _REGISTRY[kernel.name] != kernel:
        raise ValueError(f"micro-kernel {kernel.name!r} is registered twice")
    if set(kernel.params) - {"p", "i"}:
        raise ValueError(f"micro-kernel {kernel.name!r}: params must be 'p' or 'i' letters")
    if kernel.arg_names and len(kernel.arg_names) != len(kernel.params):
        raise ValueError(f"micro-kernel {kernel.name!r}: one name per parameter")
    _REGISTRY[kernel.name] = kernel
    return kernel


def lookup(name: str) -> MicroKernel:
    """The micro-kernel called `name` (with or without the symbol prefix)."""
    _load_builtin()
    short = name.removeprefix(PREFIX)
    if short not in _REGISTRY:
        raise KeyError(f"no aotk micro-kernel named {name!r}")
    return _REGISTRY[short]


def names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def _load_builtin() -> None:
    # the emitters register their micro-kernels when imported
    from aotk.kernels import (
        matmul_kernel,  # noqa: F401
        matmul_prepacked,  # noqa: F401
        random_kernels,  # noqa: F401
        transpose,  # noqa: F401
        winograd_weight,  # noqa: F401
    )


def param_buf(k: Kernel, pointer: SSAValue, dims: Sequence[DimV], elem: Attribute) -> Buf:
    """A micro-kernel's pointer parameter as a flat buffer of `elem` with `dims`."""
    mem = k.b.insert(ptr.FromPtrOp(pointer, flat_memref_type(elem))).res
    return Buf(mem, tuple(dims), elem)


def call(k: Kernel, name: str, args: Sequence[Buf | DimV]) -> None:
    """Emit `call @aotk_uk_<name>(args)` at `k`'s insertion point."""
    kernel = lookup(name)
    if len(args) != len(kernel.params):
        raise ValueError(f"{kernel.symbol} takes {len(kernel.params)} arguments, got {len(args)}")
    values = []
    for arg, kind in zip(args, kernel.params, strict=True):
        if kind == "p":
            assert isinstance(arg, Buf), f"{kernel.symbol}: a pointer parameter needs a Buf"
            values.append(k.b.insert(ptr.ToPtrOp(arg.mem)).res)
        else:
            assert not isinstance(arg, Buf), f"{kernel.symbol}: an i64 parameter needs a dim"
            if isinstance(arg, int):
                values.append(k.b.insert(arith.ConstantOp(IntegerAttr(arg, i64))).result)
            else:
                values.append(k.b.insert(arith.IndexCastOp(arg, i64)).result)
    k.b.insert(func_call_op(kernel.symbol, values, []))


# Functions of the C runtime (`runtime/aotk_pool_internal.h`) that kernels may call.
PARALLEL_WIDTH = "aotk_parallel_width"
RUNTIME_FUNCTIONS: dict[str, tuple[list[Attribute], list[Attribute]]] = {
    PARALLEL_WIDTH: ([], [i64]),
}


def parallel_width(k: Kernel) -> SSAValue:
    """The number of threads a parallel loop started here would be split over (index)."""
    width = k.b.insert(func_call_op(PARALLEL_WIDTH, [], [i64])).res[0]
    return k.b.insert(arith.IndexCastOp(width, INDEX)).result


def declare_called(module: ModuleOp) -> None:
    """Declare (as private func.func) each micro-kernel and runtime function that
    `module` calls."""
    present = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
    wanted: list[str] = []
    for op in ops_within(module):
        if isinstance(op, func.CallOp):
            name = op.callee.string_value()
            known = name.startswith(PREFIX) or name in RUNTIME_FUNCTIONS
            if known and name not in present and name not in wanted:
                wanted.append(name)
    for name in wanted:
        if name in RUNTIME_FUNCTIONS:
            module.body.block.add_op(func.FuncOp.external(name, *RUNTIME_FUNCTIONS[name]))
        else:
            module.body.block.add_op(_declaration(lookup(name)))


def _declaration(kernel: MicroKernel) -> func.FuncOp:
    return func.FuncOp.external(kernel.symbol, _arg_types(kernel), [])


def _arg_types(kernel: MicroKernel) -> list[Attribute]:
    return [ptr.PtrType() if c == "p" else i64 for c in kernel.params]


def called(obj_or_ir: bytes | str) -> set[str]:
    """The micro-kernel symbols that object code or LLVM IR text refers to."""
    data = obj_or_ir.encode() if isinstance(obj_or_ir, str) else obj_or_ir
    found = {m.decode() for m in SYMBOL.findall(data)}
    # outlined parallel bodies of a micro-kernel (`..._par0`) are not entry points
    return {s for s in found if s.removeprefix(PREFIX) in _registered()}


def _registered() -> set[str]:
    _load_builtin()
    return set(_REGISTRY)


def module(kernel_names: Sequence[str]) -> ModuleOp:
    """The loops-stage IR defining the named micro-kernels (one func.func each), with the
    declarations of what they call."""
    defined = ModuleOp([_define(lookup(n)) for n in kernel_names])
    declare_called(defined)
    return defined


def _define(kernel: MicroKernel) -> func.FuncOp:
    arg_types = _arg_types(kernel)
    block = Block(arg_types=arg_types)
    for arg, name in zip(block.args, kernel.arg_names, strict=False):
        arg.name_hint = name
    k = Kernel(Builder(InsertPoint.at_end(block)))
    args: list[SSAValue] = [
        a if c == "p" else k.b.insert(arith.IndexCastOp(a, INDEX)).result
        for a, c in zip(block.args, kernel.params, strict=True)
    ]
    kernel.build(k, args)
    k.b.insert(func.ReturnOp())
    return func.FuncOp(kernel.symbol, (arg_types, []), Region(block))
