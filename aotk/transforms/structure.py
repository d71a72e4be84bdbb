"""A hashable key of a function's body: equal keys mean the same code up to names.

Identical kernels are common: the two directions of a bidirectional RNN, layers of one
width, the update of each same-shaped weight. A key numbers values and blocks in order of
definition, so two bodies that differ only in SSA names, block names or the function's
name get equal keys, and anything else (an op, a type, an attribute, how values are
wired) makes them differ.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable

from xdsl.dialects import func
from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

from aotk.ir_walk import ops_in_region, ops_within


def op_signature(
    op: Operation, type_key: Callable[[Attribute], Hashable] = lambda t: t
) -> tuple[Hashable, ...]:
    """What makes two ops with the same operands the same op: name, attributes,
    properties and result types, each as `type_key` sees it (regions and operands are
    the caller's to compare)."""
    name = op.op_name.data if isinstance(op, UnregisteredOp) else op.name
    return (
        name,
        frozenset(op.attributes.items()),
        frozenset(op.properties.items()),
        tuple(type_key(t) for t in op.result_types),
    )


def structure_key(fn: func.FuncOp) -> Hashable:
    """The key of `fn`'s type, attributes and body (not its name)."""
    values: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}
    properties = frozenset((k, v) for k, v in fn.properties.items() if k != "sym_name")
    parts: list[Hashable] = [
        properties,
        frozenset(fn.attributes.items()),
        _number(fn.body.blocks, values, blocks),
    ]
    _add_ops(ops_in_region(fn.body), values, blocks, parts)
    return tuple(parts)


def op_structure_key(
    op: Operation, type_key: Callable[[Attribute], Hashable] = lambda t: t
) -> Hashable:
    """The key of `op` and what its regions hold (its operands by their types alone).
    `type_key` says what of the types of `op`'s own operands and results counts."""
    values: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}
    parts: list[Hashable] = [
        tuple(type_key(v.type) for v in op.operands),
        op_signature(op, type_key),
    ]
    for region in op.regions:
        parts.append(_number(region.blocks, values, blocks))
    _add_ops(ops_within(op)[1:], values, blocks, parts)
    return tuple(parts)


def _add_ops(
    ops: Iterable[Operation],
    values: dict[SSAValue, int],
    blocks: dict[Block, int],
    parts: list[Hashable],
) -> None:
    """Append each op's signature and wiring to `parts`, numbering what it defines."""
    for op in ops:
        for region in op.regions:
            parts.append(_number(region.blocks, values, blocks))
        parts.append(
            (
                op_signature(op),
                tuple(values.get(v, v) for v in op.operands),
                tuple(blocks.get(b, b) for b in op.successors),
            )
        )
        for r in op.results:
            values[r] = len(values)


def _number(
    region_blocks: Iterable[Block], values: dict[SSAValue, int], blocks: dict[Block, int]
) -> tuple[Hashable, ...]:
    """Number the blocks of a region and their arguments; their argument types."""
    shape: list[Hashable] = []
    for block in region_blocks:
        blocks[block] = len(blocks)
        for arg in block.args:
            values[arg] = len(values)
        shape.append(tuple(a.type for a in block.args))
    return tuple(shape)


def structure_text(root: Operation, skip: frozenset[str] = frozenset()) -> str:
    """`root` as text that two processes print alike and that names nothing but ops,
    types and attributes: a line per op of its name, attributes and properties (but
    those named in `skip`), operand numbers, successor numbers and result types, with
    values and blocks numbered in order of definition. xDSL's printer, on a copy with
    the names cleared, took 1.7 s on DenseNet121's training graph."""
    printed: dict[Attribute, str] = {}

    def text(attr: Attribute) -> str:
        found = printed.get(attr)
        if found is None:
            found = printed[attr] = str(attr)
        return found

    values: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}
    lines: list[str] = []

    def add(op: Operation) -> None:
        name = op.op_name.data if isinstance(op, UnregisteredOp) else op.name
        fields = sorted(
            f"{kind}{k}={text(v)}"
            for kind, named in (("", op.attributes), ("<", op.properties))
            for k, v in named.items()
            if k not in skip
        )
        operands = ",".join(str(values.setdefault(v, len(values))) for v in op.operands)
        successors = ",".join(str(blocks.setdefault(b, len(blocks))) for b in op.successors)
        results = ",".join(text(t) for t in op.result_types)
        lines.append(f"{name} {' '.join(fields)} ({operands}) [{successors}] -> {results}")
        for region in op.regions:
            lines.append("{")
            arg_types = _number(region.blocks, values, blocks)
            for block, types in zip(region.blocks, arg_types, strict=True):
                assert isinstance(types, tuple)
                lines.append(f"^{blocks[block]}({','.join(text(t) for t in types)})")
                for inner in block.ops:
                    add(inner)
            lines.append("}")
        for r in op.results:
            values[r] = len(values)

    add(root)
    return "\n".join(lines)
