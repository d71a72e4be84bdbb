"""Lane permutes with an index per lane, which the llvm dialect aotk lowers to cannot spell.

`y[i] = table[index[i]]` for two vectors of N lanes is LLVM's `extractelement` with a
variable index, once per lane, put together by `insertelement`. LLVM's x86 back end turns
that pattern into one `vpermps` (AVX2 for 8 lanes of 32 bits, AVX-512 for 16) and into
loads from the stack elsewhere. xDSL's llvm dialect has no `extractelement` op, so
kernels call `llvm.aotk.lane_permute.<type>(table, index)`, an `llvm.call_intrinsic` (see
`kernels.vecmath_lanes.permute`), which `markers.expand` replaces with `build`'s pattern.
Indices must lie in [0, N): one out of range gives an undefined lane, as
`extractelement` does.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir

NAME = "llvm.aotk.lane_permute"  # a marker (`markers`): LLVM never sees it


def build(builder: ir.IRBuilder, table: Any, index: Any) -> ir.Value:
    """The permute of `table` by `index` as extracts and inserts, at `builder` (llvmlite
    values: its stubs give an `ir.Value` no type)."""
    lanes = table.type.count
    picked: ir.Value = ir.Constant(table.type, ir.Undefined)
    for lane in range(lanes):
        at = builder.extract_element(index, ir.Constant(ir.IntType(32), lane))
        picked = builder.insert_element(
            picked, builder.extract_element(table, at), ir.Constant(ir.IntType(32), lane)
        )
    return picked
