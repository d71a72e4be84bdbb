"""`make`: an xDSL op built by `Operation.create`, for ops lowering emits by the thousand.

An IRDL op's constructor matches every argument against the op's definition on each call
(`irdl_op_init`). That is two thirds of the cost of making an op, and lowering makes
tens of thousands. `Operation.create` takes the operands, result types and properties
as given, and fills in the definition's default properties as the constructor does, so
for an op without optional or variadic groups it builds the same op. The tests compare
the two ways on every op built so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import TypeVar

from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Operation, SSAValue

OpT = TypeVar("OpT", bound=Operation)


def make(
    cls: type[OpT],
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
    properties: Mapping[str, Attribute] = {},
) -> OpT:
    """The op `cls(...)` would build from these operands, result types and properties."""
    return cls.create(operands=operands, result_types=result_types, properties=properties)


@cache
def integer(value: int, t: IntegerType | IndexType) -> IntegerAttr:
    """`IntegerAttr(value, t)`, made once: attributes are immutable, and each new one is
    verified."""
    return IntegerAttr(value, t)
