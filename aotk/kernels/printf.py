"""Calling runtime functions from kernels: strings on the stack, declarations of callees.

Lowering rules cannot add module-level ops (they build one function's body), so strings are
stored into a stack buffer where they are used, and `declare_external_callees` (run by
`convert-aotk-std-to-llvm`) declares every `llvm.call` target that the module lacks, with
the callee type the call carries. In-process, the JIT binds them (`jit_print`); an exported
library links them from the C runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import IntegerAttr, IntegerType, ModuleOp, i8, i32, i64
from xdsl.ir import SSAValue

from aotk.ir_walk import ops_within


class CStrings:
    """NUL-terminated strings in one 8-byte aligned stack buffer."""

    def __init__(self, b: Builder, texts: Sequence[str]) -> None:
        self.b = b
        self.offsets: dict[str, int] = {}
        data = b""
        for text in dict.fromkeys(texts):
            self.offsets[text] = len(data)
            data += text.encode() + b"\0"
        data += b"\0" * (-len(data) % 8)
        words = len(data) // 8
        size = _const(b, words, i64)
        self.base = b.insert(llvm.AllocaOp(size, i64, alignment=8)).results[0]
        for w in range(words):
            word = int.from_bytes(data[8 * w : 8 * w + 8], "little")
            slot = b.insert(llvm.GEPOp(self.base, [w], i64)).results[0]
            b.insert(llvm.StoreOp(_const(b, word, i64), slot, alignment=8))
        self.ptrs = {
            text: b.insert(llvm.GEPOp(self.base, [offset], i8)).results[0]
            for text, offset in self.offsets.items()
        }


def _const(b: Builder, value: int, typ: IntegerType) -> SSAValue:
    value &= 0xFFFFFFFFFFFFFFFF
    if value >= 1 << 63:
        value -= 1 << 64
    return b.insert(arith.ConstantOp(IntegerAttr(value, typ))).results[0]


def call(b: Builder, name: str, *args: SSAValue) -> None:
    """Call the runtime function `name(args...)`, which returns an int32 status we ignore."""
    b.insert(llvm.CallOp(name, *args, return_type=i32))


def declare_external_callees(module: ModuleOp) -> None:
    """Add an external `llvm.func` declaration for every called symbol the module lacks."""
    defined = {op.sym_name.data for op in module.ops if isinstance(op, llvm.FuncOp)}
    declared: dict[str, llvm.FuncOp] = {}
    for op in ops_within(module):
        if not isinstance(op, llvm.CallOp) or op.callee is None:
            continue
        name = op.callee.string_value()
        if name in defined or name in declared:
            continue
        fn_type = op.var_callee_type or llvm.LLVMFunctionType(
            [a.type for a in op.args],
            op.returned.type if op.returned is not None else None,
        )
        declared[name] = llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
    first = module.body.block.first_op
    if first is None:
        return
    module.body.block.insert_ops_before(list(declared.values()), first)
