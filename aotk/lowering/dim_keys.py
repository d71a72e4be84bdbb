"""Structural keys of a kernel's run-time dims, and their values rebuilt at its start.

The workspace plan (`workspace_plan`) shares memory between buffers whose sizes are the
same product of run-time dims. Those dims are SSA values that shape rules compute as the
lowering goes, shared or not, differently in each of the function's plans (the size
function checks and memoizes its arithmetic); a key names a dim by how it is computed
from the input dims instead: equal keys, equal values, in every plan.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import Operation, SSAValue

from aotk.kernels.kernel import DimV, Kernel

# a max or min of alike operands is that operand: broadcasting a value's batch dim with
# itself takes their max, which is that batch dim
_IDEMPOTENT: dict[str, type[Operation]] = {
    "arith.maxui": arith.MaxUIOp,
    "arith.maxsi": arith.MaxSIOp,
    "arith.minui": arith.MinUIOp,
    "arith.minsi": arith.MinSIOp,
}


@dataclass(frozen=True)
class _Op:
    """How a key is computed: `op` (a template) on operands of these keys."""

    op: Operation
    operands: tuple[int, ...]


@dataclass(frozen=True)
class _Set:
    """A max or min (`name`) over operands of these keys."""

    name: str
    members: frozenset[int]


class DimKeys:
    """Keys of run-time dims: equal when computed alike from the same input dims,
    however the SSA values are shared; None when not computed from them alone."""

    def __init__(self) -> None:
        self._known: dict[SSAValue, int | None] = {}
        self._interned: dict[object, int] = {}
        self._how: dict[int, SSAValue | int | _Op | _Set] = {}
        self._entry_safe: dict[int, bool] = {}

    def name(self, value: SSAValue, label: object) -> None:
        """`value` is the run-time input dim `label` ((input, axis)), in every plan, and
        is known from the kernel's start."""
        key = self._known[value] = self._intern(("dim", label))
        self._how[key] = value

    def key(self, value: DimV) -> int | None:
        if isinstance(value, int):
            key = self._intern(("int", value))
            self._how[key] = value
            return key
        if value in self._known:
            return self._known[value]
        owner = value.owner
        key: int | None = None
        if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
            key = self.key(owner.value.value.data)
        elif isinstance(owner, Operation) and not owner.regions and len(owner.results) == 1:
            operands = [self.key(v) for v in owner.operands]
            if None not in operands:
                key = self._of_op(owner, [o for o in operands if o is not None])
        self._known[value] = key
        return key

    def scaled(self, key: int) -> tuple[int, int]:
        """(m, base) with the dim of `key` m times that of `base`, m taking the constant
        factors of a product (a batch of 2 x 49 rows is 49 times the batch)."""
        how = self._how[key]
        if isinstance(how, _Op) and how.op.name == "arith.muli":
            a, b = how.operands
            for constant, other in ((a, b), (b, a)):
                factor = self._how[constant]
                if isinstance(factor, int) and factor > 0:
                    m, base = self.scaled(other)
                    return factor * m, base
        return 1, key

    def at_least(self, big: int, small: int) -> bool:
        """Whether the dim of `big` is at least that of `small` for every value of the
        input dims: the same key, or a max taken over it (broadcast batch dims)."""
        how = self._how[big]
        maximum = isinstance(how, _Set) and how.name in ("arith.maxui", "arith.maxsi")
        return big == small or (maximum and small in how.members)  # type: ignore[union-attr]

    def at_start(self, key: int) -> bool:
        """Whether the dim of `key` can be computed at the kernel's start: from input
        dims and constants by `arith` ops alone."""
        known = self._entry_safe.get(key)
        if known is None:
            how = self._how[key]
            if isinstance(how, _Set):
                known = all(self.at_start(m) for m in how.members)
            elif isinstance(how, _Op):
                known = how.op.name.startswith("arith.") and all(
                    self.at_start(o) for o in how.operands
                )
            else:
                known = True
            self._entry_safe[key] = known
        return known

    def rebuild(self, k: Kernel, key: int, made: dict[int, DimV]) -> DimV:
        """The dim of `key` computed at `k` (for `at_start` keys, at the start), sharing
        what `made` holds already."""
        if key in made:
            return made[key]
        how = self._how[key]
        if isinstance(how, _Set):
            members = [self.rebuild(k, m, made) for m in sorted(how.members)]
            value = members[0]
            for other in members[1:]:
                value = k.b.insert(_template(how.name, k.index(value), k.index(other))).results[0]
        elif isinstance(how, _Op):
            operands = [k.index(self.rebuild(k, o, made)) for o in how.operands]
            op = how.op
            copy = type(op).create(
                operands=operands,
                result_types=[r.type for r in op.results],
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            )
            value = k.b.insert(copy).results[0]
        else:
            value = how
        made[key] = value
        return value

    def _of_op(self, op: Operation, operands: list[int]) -> int:
        if op.name in ("arith.divui", "arith.divsi") and self._how[operands[1]] != 0:
            # a reshape's -1 dim: the product of the dims divided by the known ones
            m, base = self.scaled(operands[0])
            if m == self._how[operands[1]]:
                return base
        if op.name in _IDEMPOTENT:
            members = frozenset().union(*(self._members_of(op.name, o) for o in operands))
            if len(members) == 1:
                return next(iter(members))
            key = self._intern((op.name, tuple(sorted(members))))
            self._how.setdefault(key, _Set(op.name, members))
            return key
        props = tuple(sorted((n, str(p)) for n, p in op.properties.items()))
        attrs = tuple(sorted((n, str(a)) for n, a in op.attributes.items()))
        key = self._intern((op.name, props, attrs, tuple(operands)))
        self._how.setdefault(key, _Op(op, tuple(operands)))
        return key

    def _members_of(self, name: str, key: int) -> frozenset[int]:
        """The operands a max or min (`name`) of key `key` is taken over, or the key."""
        how = self._how.get(key)
        return how.members if isinstance(how, _Set) and how.name == name else frozenset({key})

    def _intern(self, structure: object) -> int:
        return self._interned.setdefault(structure, len(self._interned))


def _template(name: str, a: SSAValue, b: SSAValue) -> Operation:
    """An arith max or min `name` of two index values."""
    return _IDEMPOTENT[name].create(operands=[a, b], result_types=[a.type])
