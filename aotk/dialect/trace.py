"""Tracing: `KTensor`s wrap SSA values of one growing graph block while user code runs.

Placeholders and captured arrays (variables, constants) are block arguments of the graph;
every K call appends ops. `K.function` later extracts the ops its outputs need into a
`func.func` (see `extract`).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, Block, BlockArgument, Operation, Region, SSAValue
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from aotk import dtypes
from aotk.dialect import metadata
from aotk.dialect.base import AotkOp, Shape, dtype_of, shape_of, tensor
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.registry import build
from aotk.ir_walk import ops_within


class Graph:
    """The traced program: one block of aotk ops over placeholder and capture arguments."""

    def __init__(self) -> None:
        self.block = Block()
        self.insertion = self.block  # where emit appends: the graph, or a loop body
        self.captures: dict[BlockArgument, Any] = {}  # arg -> owner holding a NumPy buffer
        self.placeholders: set[BlockArgument] = set()
        self.learning_phase: KTensor | None = None  # the phase placeholder, made on first use
        self.fixed_phase: int | None = None  # set by K.set_learning_phase
        # variable -> its updated value, while K.control_dependencies(updates) is open
        self.updated_reads: dict[SSAValue, SSAValue] = {}
        self.name_scopes: list[str] = []  # open K.name_scope names, outermost first
        self._names = itertools.count()

    def add_arg(self, typ: Attribute, name: str) -> BlockArgument:
        arg = self.block.insert_arg(typ, len(self.block.args))
        arg.name_hint = _sanitize(name)
        return arg


_graph = Graph()


def graph() -> Graph:
    return _graph


def reset_graph() -> None:
    global _graph
    _graph = Graph()


def scoped_name(name: str) -> str:
    """`name` under the open K.name_scope names: "dense_1/kernel"."""
    return "/".join([*_graph.name_scopes, name])


def default_phase() -> int:
    """The learning phase fed to functions that do not take it as an input (0: test)."""
    return _graph.fixed_phase or 0


class KTensor:
    """A symbolic tensor: an SSA value of the current graph."""

    __array_priority__ = 1000  # so ndarray <op> KTensor defers to KTensor
    _shape_hint: Shape | None = None  # a shape Keras set through `_keras_shape`
    # set only where known, as Keras's TF backend does (its TimeDistributed asks `hasattr`):
    # False on placeholders and variables, True where the learning phase is read
    _uses_learning_phase: bool

    def __init__(self, value: SSAValue, name: str | None = None):
        self.value = value
        self.graph = _graph
        self.name = name or (value.name_hint or "tensor")

    @property
    def type(self) -> Attribute:
        return self.value.type

    @property
    def shape(self) -> Shape:
        return shape_of(self.value.type)

    @property
    def dtype(self) -> str:
        return dtype_of(self.value.type)

    @property
    def _keras_shape(self) -> Shape:
        """The static shape as Keras reads it: inferred dims, then the dims Keras set. Only
        where set (by Keras, or on placeholders and variables), as on Keras's TF backend:
        Keras takes a tensor with it for a layer's output and reads its other marks."""
        if self._shape_hint is None:
            raise AttributeError("_keras_shape")
        return merge_shape_hint(self.shape, self._shape_hint)

    @_keras_shape.setter
    def _keras_shape(self, shape: Any) -> None:
        self._shape_hint = None if shape is None else tuple(shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"<KTensor {self.name} shape={self.shape} dtype={self.dtype}>"

    def __hash__(self) -> int:
        return id(self)

    def __len__(self) -> int:
        if not self.shape or self.shape[0] is None:
            raise TypeError(f"len() of {self!r} is not known at trace time")
        return self.shape[0]

    def __iter__(self) -> Iterator[KTensor]:
        """The slices along the first axis, which must be of known size: Python's
        fallback iteration (`__getitem__` until IndexError) never ends on an unknown one."""
        return (self[i] for i in range(len(self)))

    if TYPE_CHECKING:  # installed by aotk.backend.operators

        def __getitem__(self, key: Any) -> KTensor: ...
        def __add__(self, other: Any) -> KTensor: ...
        def __radd__(self, other: Any) -> KTensor: ...
        def __sub__(self, other: Any) -> KTensor: ...
        def __rsub__(self, other: Any) -> KTensor: ...
        def __mul__(self, other: Any) -> KTensor: ...
        def __rmul__(self, other: Any) -> KTensor: ...
        def __truediv__(self, other: Any) -> KTensor: ...
        def __rtruediv__(self, other: Any) -> KTensor: ...
        def __pow__(self, other: Any) -> KTensor: ...
        def __matmul__(self, other: Any) -> KTensor: ...
        def __neg__(self) -> KTensor: ...

    def __bool__(self) -> bool:
        raise TypeError("a symbolic tensor has no truth value; use K.switch or K.greater")


def merge_shape_hint(shape: Shape, hint: Shape | None) -> Shape:
    """`shape` with its unknown dims taken from `hint` (ignored when ranks differ)."""
    if hint is None or len(hint) != len(shape):
        return shape
    return tuple(d if d is not None else h for d, h in zip(shape, hint, strict=True))


def emit(op_cls: type[AotkOp], *operands: KTensor, where: str, **attrs: Any) -> KTensor:
    """Check types with the op's infer rule, append the op to the graph, wrap its result."""
    for x in operands:
        if x.graph is not _graph:
            raise ValueError(f"{where}: {x!r} belongs to a graph dropped by K.clear_session()")
    attrs = {k: v for k, v in attrs.items() if v is not None}
    reads = _graph.updated_reads
    try:
        op = build(op_cls, [reads.get(x.value, x.value) for x in operands], **attrs)
    except (ValueError, TypeError) as err:
        shapes = ", ".join(f"{x.name}: shape {_fmt(x.shape)} {x.dtype}" for x in operands)
        context = f" (inputs {shapes})" if operands else ""
        raise type(err)(f"{where}: {err}{context}") from None
    _graph.insertion.add_op(op)
    return KTensor(op.results[0], name=f"{where.removeprefix('K.')}_{next(_graph._names)}")


@contextmanager
def body(arg_types: Sequence[Attribute]) -> Iterator[Block]:
    """Emit into a new block (a loop body) while the `with` lasts."""
    block = Block(arg_types=list(arg_types))
    outer, _graph.insertion = _graph.insertion, block
    try:
        yield block
    finally:
        _graph.insertion = outer


def append(op: Operation) -> None:
    """Append a structural op (a loop) where emit would."""
    _graph.insertion.add_op(op)


def placeholder_arg(shape: Sequence[int | None], dtype: str, name: str) -> BlockArgument:
    arg = _graph.add_arg(tensor(dtypes.element_type(dtype), shape), name)
    _graph.placeholders.add(arg)
    return arg


def capture_arg(owner: Any, array: np.ndarray, name: str) -> BlockArgument:
    """A block argument bound to `owner`, whose `.storage` array the kernel will read."""
    arg = _graph.add_arg(tensor(dtypes.element_type(array.dtype.name), array.shape), name)
    _graph.captures[arg] = owner
    return arg


def extract(
    inputs: Sequence[KTensor],
    outputs: Sequence[KTensor],
    where: str = "K.function",
    fixed: Mapping[KTensor, float] | None = None,
) -> tuple[ModuleOp, list[Any]]:
    """Build `@main(inputs..., captures...)` computing `outputs`; return it and the captures.

    Placeholders in `fixed` become constants of the given values instead of inputs."""
    needed = _needed_ops(outputs)
    input_args = [x.value for x in inputs]
    fixed_args = {x.value: value for x, value in (fixed or {}).items()}
    used_args = _used_args(needed, outputs)
    captures = [a for a in used_args if a in _graph.captures and a not in input_args]
    for a in used_args:
        if a not in input_args and a not in _graph.captures and a not in fixed_args:
            raise ValueError(
                f"{where}: the outputs depend on placeholder '{a.name_hint}', "
                "which is not among the inputs"
            )
    block = Block(arg_types=[v.type for v in [*input_args, *captures]])
    mapping: dict[SSAValue, SSAValue] = {}
    for old, new in zip([*input_args, *captures], block.args, strict=True):
        mapping[old] = new
        new.name_hint = old.name_hint
    for old, value in fixed_args.items():
        if old in used_args:
            const = ConstantOp.make([], old.type, value=float(value), dtype=dtype_of(old.type))
            block.add_op(const)
            mapping[old] = const.results[0]
    for op in needed:
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
    results = [mapping[x.value] for x in outputs]
    block.add_op(func.ReturnOp(*results))
    fn = func.FuncOp(
        "main", ([a.type for a in block.args], [r.type for r in results]), Region(block)
    )
    fn.attributes[metadata.ARG_NAMES] = ArrayAttr(
        [StringAttr(a.name_hint or "") for a in block.args]
    )
    return ModuleOp([fn]), [_graph.captures[a] for a in captures]


def _needed_ops(outputs: Sequence[KTensor]) -> list[Operation]:
    wanted: set[Operation] = set()
    stack = [x.value for x in outputs]
    while stack:
        v = stack.pop()
        owner = v.owner
        if (
            isinstance(owner, Operation)
            and owner not in wanted
            and owner.parent_block() is _graph.block
        ):
            wanted.add(owner)
            stack.extend(used_values(owner))
    return [op for op in _graph.block.ops if op in wanted]


def used_values(op: Operation) -> list[SSAValue]:
    """Operands of `op` and values its regions use from outside them."""
    inner: set[SSAValue] = {r for nested in ops_within(op) for r in nested.results}
    inner.update(
        a
        for nested in ops_within(op)
        for region in nested.regions
        for b in region.blocks
        for a in b.args
    )
    return [v for nested in ops_within(op) for v in nested.operands if v not in inner]


def erase_dead_ops(block: Block) -> None:
    """Erase the ops of `block` whose results nothing reads and that have no effect,
    last first (so that the ops feeding them are unread in turn)."""
    for op in reversed(list(block.ops)):
        if is_trivially_dead(op):
            op.detach()
            op.erase()


def depends_on(value: SSAValue, source: SSAValue) -> bool:
    """Whether `value` is computed from `source` (through any op, or a loop's body)."""
    seen: set[Operation] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if v is source:
            return True
        owner = v.owner
        if isinstance(owner, Operation) and owner not in seen:
            seen.add(owner)
            stack.extend(used_values(owner))
    return False


def _used_args(ops: list[Operation], outputs: Sequence[KTensor]) -> list[BlockArgument]:
    seen: dict[BlockArgument, None] = {}
    for v in [*(o for op in ops for o in used_values(op)), *(x.value for x in outputs)]:
        if isinstance(v, BlockArgument) and v.owner is _graph.block:
            seen[v] = None
    return list(seen)


def _sanitize(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"t{out}"


def _fmt(shape: Shape) -> str:
    return "(" + ", ".join("None" if d is None else str(d) for d in shape) + ")"
