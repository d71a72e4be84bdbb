"""When the values of a kernel's top-level ops die, and which workspace slices they hold.

A top-level op's values die after the last top-level op that uses them (in its regions
too); returned values never do. A view lives on its source's slices. An op with regions
(a scan) keeps what it allocated while its results live: they may be views of it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from xdsl.ir import Block, SSAValue

from aotk.ir_walk import block_values_used
from aotk.lowering.workspace_plan import WorkspacePlan


@dataclass
class Liveness:
    """Which slices the live top-level values of a function hold, and when each dies."""

    plan: WorkspacePlan
    _last: dict[SSAValue, int] = field(default_factory=dict)  # value -> last user's index
    _holds: dict[SSAValue, frozenset[int]] = field(default_factory=dict)
    _holders: Counter[int] = field(default_factory=Counter)
    _dying: dict[int, list[SSAValue]] = field(default_factory=dict)

    def start(self, block: Block) -> None:
        """Find each top-level value's last user; returned values have none."""
        ops = list(block.ops)
        for at, op in enumerate(ops):
            for v in block_values_used(op, block):
                self._last[v] = at if at < len(ops) - 1 else len(ops)
        for v, at in self._last.items():
            self._dying.setdefault(at, []).append(v)

    def settle(self, at: int, holds: dict[SSAValue, frozenset[int]], made: list[int]) -> None:
        """After top-level op `at`, whose results hold `holds` and which allocated
        `made`: free what it allocated that no live result holds, and the slices of the
        values whose last user it was that no other live value holds."""
        for r, slices in holds.items():
            if r in self._last:  # used later
                self._holds[r] = slices
                self._holders.update(slices)
        candidates = list(made)
        for v in self._dying.pop(at, []):
            for i in self._holds.pop(v, frozenset()):
                self._holders[i] -= 1
                candidates.append(i)
        self.plan.give_back(i for i in dict.fromkeys(candidates) if self._holders[i] == 0)

    def holds(self, value: SSAValue) -> frozenset[int]:
        return self._holds.get(value, frozenset())
