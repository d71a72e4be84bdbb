"""`aotk-check-stage{stage=...}`: fail if an op of an earlier stage survived.

stage=loops rejects any `aotk.*` op; stage=llvm rejects anything outside `llvm.*` and the
module itself. The diagnostic names the op and where it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from aotk.ir_walk import ops_within

_ALLOWED = {
    "loops": lambda name: not name.startswith("aotk."),
    "llvm": lambda name: name.startswith("llvm.") or name == "builtin.module",
}


@dataclass(frozen=True)
class AotkCheckStagePass(ModulePass):
    """Raise a diagnostic naming the first op not allowed at `stage`."""

    name = "aotk-check-stage"
    stage: str = "loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.stage not in _ALLOWED:
            raise DiagnosticException(
                f"aotk-check-stage: unknown stage '{self.stage}' (expected {', '.join(_ALLOWED)})"
            )
        allowed = _ALLOWED[self.stage]
        for inner in ops_within(op):
            if not allowed(inner.name):
                raise DiagnosticException(
                    f"aotk-check-stage: '{inner.name}' survived to stage '{self.stage}'"
                )
