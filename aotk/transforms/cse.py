"""`aotk-cse`: xDSL's common subexpression elimination, with effects and keys computed once.

xDSL's `cse` computes an op's memory effects from scratch each time it asks (for a loop:
every op of its body, again for every enclosing loop), copies its whole table of known
ops at every region it enters, and hashes an op again at every lookup. On aotk's loop
nests that made each `cse` a tenth of compile time. Here effects are computed once per
op, bottom-up; the table is one dict with an undo log per region; an op's key is built
once. The decisions are xDSL's, so the IR is the same (the tests compare), but for
`ptr.ptradd`, which is pure here (see `_PURE_UNDECLARED`).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import ptr
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import (
    EffectInstance,
    IsolatedFromAbove,
    IsTerminator,
    MemoryEffect,
    MemoryEffectKind,
    NoMemoryEffect,
    RecursiveMemoryEffect,
    SymbolOpInterface,
)

from aotk.transforms.structure import op_signature

Effects = frozenset[EffectInstance] | None

# Ops that touch no memory though xDSL declares no effects for them: moving a pointer. The
# loops name each workspace slice by one, and slices reuse offsets: on ResNet50's training
# step 2,100 of the 3,200 were repeats, which every later pass and LLVM carried.
_PURE_UNDECLARED = (ptr.PtrAddOp,)


@dataclass(frozen=True)
class _Kind:
    """What CSE asks of every op of one kind, looked up once per kind."""

    effect_traits: tuple[MemoryEffect, ...]
    terminator: bool
    symbol: bool
    isolated: bool

    @staticmethod
    def of(op: Operation, kinds: dict[type[Operation], _Kind]) -> _Kind:
        kind = kinds.get(type(op))
        if kind is None:
            effects = tuple(op.get_traits_of_type(MemoryEffect))
            if isinstance(op, _PURE_UNDECLARED):
                effects = (NoMemoryEffect(),)
            kind = kinds[type(op)] = _Kind(
                effects,
                op.has_trait(IsTerminator, value_if_unregistered=False),
                op.has_trait(SymbolOpInterface, value_if_unregistered=False),
                op.has_trait(IsolatedFromAbove, value_if_unregistered=True),
            )
        return kind


@dataclass(eq=False)
class _RegionKey:
    """Part of the key of an op with regions: equal when structurally equivalent."""

    op: Operation

    def __hash__(self) -> int:
        return 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _RegionKey) and all(
            a.is_structurally_equivalent(b)
            for a, b in zip(self.op.regions, other.op.regions, strict=True)
        )


def _key(op: Operation) -> Hashable:
    key = (op_signature(op), tuple(op.operands))
    return (key, _RegionKey(op)) if op.regions else key


@dataclass
class _Driver:
    kinds: dict[type[Operation], _Kind] = field(default_factory=dict)
    effects: dict[Operation, Effects] = field(default_factory=dict)
    known: dict[Hashable, Operation] = field(default_factory=dict)
    undo: list[tuple[Hashable, Operation | None]] = field(default_factory=list)
    to_erase: dict[Operation, None] = field(default_factory=dict)

    def effects_of(self, op: Operation) -> Effects:
        if op in self.effects:
            return self.effects[op]
        traits = _Kind.of(op, self.kinds).effect_traits
        result: set[EffectInstance] | None = set() if traits else None
        for trait in traits:
            recursive = isinstance(trait, RecursiveMemoryEffect)
            found = self._nested(op) if recursive else trait.get_effects(op)
            if found is None or result is None:
                result = None
                break
            result.update(found)
        frozen = None if result is None else frozenset(result)
        self.effects[op] = frozen
        return frozen

    def _nested(self, op: Operation) -> Effects:
        found: set[EffectInstance] = set()
        for region in op.regions:
            for block in region.blocks:
                for child in block.ops:
                    child_effects = self.effects_of(child)
                    if child_effects is None:
                        return None
                    found.update(child_effects)
        return frozenset(found)

    def is_dead(self, op: Operation, kind: _Kind) -> bool:
        if any(r.first_use is not None for r in op.results) or kind.terminator or kind.symbol:
            return False
        effects = self.effects_of(op)
        return effects is not None and all(
            e.kind == MemoryEffectKind.READ
            or (
                e.kind == MemoryEffectKind.ALLOC
                and isinstance(v := e.value, SSAValue)
                and op.is_ancestor(v.owner)
            )
            for e in effects
        )

    def remember(self, key: Hashable, op: Operation) -> None:
        self.undo.append((key, self.known.get(key)))
        self.known[key] = op

    def forget_since(self, mark: int) -> None:
        while len(self.undo) > mark:
            key, before = self.undo.pop()
            if before is None:
                del self.known[key]
            else:
                self.known[key] = before

    def write_between(self, first: Operation, last: Operation) -> bool:
        """Whether an op from `first` up to (not including) `last` may write memory."""
        op: Operation | None = first
        while op is not None and op is not last:
            effects = self.effects_of(op)
            if effects is None or any(e.kind == MemoryEffectKind.WRITE for e in effects):
                return True
            op = op.next_op
        return False

    def replace(self, op: Operation, existing: Operation) -> None:
        for old, new in zip(op.results, existing.results, strict=True):
            if all(_key(use.operation) not in self.known for use in old.uses):
                old.replace_all_uses_with(new)
        if all(r.first_use is None for r in op.results):
            self.to_erase[op] = None

    def simplify_op(self, op: Operation) -> None:
        kind = _Kind.of(op, self.kinds)
        if kind.terminator:
            return
        if self.is_dead(op, kind):
            self.to_erase[op] = None
            return
        if any(len(region.blocks) > 1 for region in op.regions):
            return
        effects = self.effects_of(op)
        key = _key(op)
        existing = self.known.get(key)
        if effects is None or effects:
            if effects is None or any(e.kind != MemoryEffectKind.READ for e in effects):
                return  # may write: never merged
            if (
                existing is not None
                and op.parent_block() is existing.parent_block()
                and not self.write_between(existing, op)
            ):
                self.replace(op, existing)
            else:
                self.remember(key, op)
        elif existing is not None:
            self.replace(op, existing)
        else:
            self.remember(key, op)

    def simplify_block(self, block: Block) -> None:
        for op in block.ops:
            if op.regions and _Kind.of(op, self.kinds).isolated:
                outer = self.known, self.undo
                self.known, self.undo = {}, []
                for region in op.regions:
                    self.simplify_region(region)
                self.known, self.undo = outer
            else:
                for region in op.regions:
                    self.simplify_region(region)
            self.simplify_op(op)

    def simplify_region(self, region: Region) -> None:
        if len(region.blocks) == 1:  # as xDSL: regions of several blocks are left alone
            mark = len(self.undo)
            self.simplify_block(region.block)
            self.forget_since(mark)

    def erase_marked(self) -> None:
        for op in reversed(self.to_erase):
            if (block := op.parent_block()) is not None:
                block.erase_op(op)


@dataclass(frozen=True)
class AotkCSEPass(ModulePass):
    """Replace each op by an equivalent earlier one in scope; erase dead ops."""

    name = "aotk-cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        driver = _Driver()
        for region in op.regions:
            driver.simplify_region(region)
        driver.erase_marked()
