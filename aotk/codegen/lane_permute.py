"""Lane permutes with an index per lane, which the llvm dialect aotk lowers to cannot spell.

`y[i] = table[index[i]]` for two vectors of N lanes is LLVM's `extractelement` with a
variable index, once per lane, put together by `insertelement`. LLVM's x86 back end turns
that pattern into one `vpermps` (AVX2 for 8 lanes of 32 bits, AVX-512 for 16) and into
loads from the stack elsewhere. xDSL's llvm dialect has no `extractelement` op, so
kernels call `llvm.aotk.lane_permute.<type>(table, index)`, an `llvm.call_intrinsic` (see
`kernels.vecmath_lanes.permute`), and `expand` replaces each call with the pattern in
the LLVM IR module that `llvm_ir.to_llvm_text` makes from the dialect. Indices must lie
in [0, N): one out of range gives an undefined lane, as `extractelement` does.
"""

from __future__ import annotations

from llvmlite import ir
from llvmlite.ir.instructions import CallInstr

NAME = "llvm.aotk.lane_permute"  # the llvm dialect verifies the prefix; LLVM never sees it


def expand(module: ir.Module) -> None:
    """Replace every call of a lane permute in `module` by extracts and inserts, and drop
    the permutes' declarations."""
    permutes = [f for f in module.functions if f.name.startswith(NAME + ".")]
    if not permutes:
        return
    for fn in module.functions:
        calls = [
            (block, instr)
            for block in fn.blocks
            for instr in block.instructions
            if isinstance(instr, CallInstr) and instr.callee in permutes
        ]
        for block, call in calls:
            _replace(fn, block, call)
    for f in permutes:
        del module.globals[f.name]


def _replace(fn: ir.Function, block: ir.Block, call: CallInstr) -> None:
    table, index = call.args
    builder = ir.IRBuilder(block)
    builder.position_before(call)
    lanes = table.type.count
    picked: ir.Value = ir.Constant(table.type, ir.Undefined)
    for lane in range(lanes):
        at = builder.extract_element(index, ir.Constant(ir.IntType(32), lane))
        picked = builder.insert_element(
            picked, builder.extract_element(table, at), ir.Constant(ir.IntType(32), lane)
        )
    block.instructions.remove(call)
    for other in fn.blocks:
        for instr in other.instructions:
            instr.replace_usage(call, picked)
