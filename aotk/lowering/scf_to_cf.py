"""`aotk-scf-to-cf`: xDSL's `convert-scf-to-cf` patterns, applied in one sweep.

scf.for, scf.if and scf.index_switch become blocks and branches. Each pattern rewrites one
op into ops no pattern matches, so one walk in program order does what xDSL's worklist
driver does, in about half the time, with the same IR (tests/lowering/test_scf_to_cf.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms import convert_scf_to_cf as scf_to_cf

from aotk.lowering.rewrite_once import rewrite_once


@dataclass(frozen=True)
class AotkScfToCfPass(ModulePass):
    """`convert-scf-to-cf` in one sweep: scf.for, scf.if and scf.index_switch to blocks."""

    name = "aotk-scf-to-cf"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        patterns = [scf_to_cf.SwitchLowering(), scf_to_cf.IfLowering(), scf_to_cf.ForLowering()]
        rewrite_once(op, patterns)
