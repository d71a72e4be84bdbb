"""The op registry: one `OpDef` per aotk op.

The tracer, the interpreter, the call-time shape check, autodiff and the lowering all look
an op up here by its IR class; none of them switches on op types. Ops with a body
(`aotk.scan`, `aotk.fused`) are `Kind.REGION`: their rules take the op itself, and a
callback that applies the same machinery to the body (see `OpDef`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import IRDLOperation

from aotk.kernels.elementwise_nest import BodyFn
from aotk.kernels.kernel import Buf, DimV, Kernel


class Kind(Enum):
    """How an op iterates, which decides fusion and the loop-nest builder."""

    ELEMENTWISE = "elementwise"  # lower is a scalar body; the loop nest is shared
    REDUCTION = "reduction"
    CONTRACTION = "contraction"
    VIEW = "view"  # no data moves: the result aliases its operand's buffer
    OPAQUE = "opaque"  # lower builds its own loop nest
    REGION = "region"  # the op's meaning is its body: rules take the op (see OpDef)


InferRule = Callable[..., Any]
NumpyRule = Callable[..., Any]  # an array; a list of arrays for REGION ops
GradRule = Callable[..., Any]  # a tuple per input; a dict for REGION ops
LowerRule = Callable[..., Any]
ShapeRule = Callable[..., list[Any]]


@dataclass(frozen=True)
class OpDef:
    """Everything aotk knows about one op.

    A `Kind.REGION` op's rules see the op and recurse into its body through the callback
    their caller passes: `infer(op, operand_shapes, body_shapes) -> result shapes`,
    `numpy(op, operand_arrays, run_body) -> result arrays`,
    `grad(op, result_cotangents, backprop, wanted) -> {value: cotangent}` (for the values
    of the set `wanted` among its operands and the outer values its body uses) and
    `lower(lowering, op, output_targets)`, where `lowering` is a `BodyLowering`.
    """

    ir: type[IRDLOperation]
    kind: Kind
    infer: InferRule  # (operand types..., **attrs) -> result TensorType; raises on bad input
    numpy: NumpyRule  # (arrays..., **attrs) -> array: the oracle
    lower: (
        LowerRule | None
    )  # None only for VIEW ops; ELEMENTWISE: scalar body; else (kernel, out, *ins, **attrs) -> None
    grad: GradRule | None = None  # (g, y, *xs, **attrs) -> one cotangent or None per input
    # (arith, operand dims, **attrs) -> result dims, on `kernels.dim_arith.DimArith`: the
    # op's one shape rule. `infer` runs it on STATIC dims; the lowering on a Kernel's.
    shape: ShapeRule | None = None
    # (kernel, ins, result_type, **attrs) -> elements of scratch memory the lowering may use
    # while it runs (passed as `scratch=`); 0 for none. Counted in the workspace size.
    scratch: Callable[..., Any] | None = None
    # the operand a kernel may compute the result into, if any: one of the result's type
    # that the lowering reads only where, and before, it writes (`dialect.in_place`)
    accumulates_into: int | None = None


REGISTRY: dict[type[IRDLOperation], OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    """Add `opdef` to the registry; each IR class is registered once."""
    if opdef.ir in REGISTRY:
        raise ValueError(f"{opdef.ir.name} is registered twice")
    REGISTRY[opdef.ir] = opdef
    return opdef


def is_registered(op: object) -> bool:
    """Whether `op` is an aotk op with rules (as opposed to func, scf, a terminator ...)."""
    return type(op) in REGISTRY


def _opdef(op: object) -> OpDef | None:
    return REGISTRY.get(type(op))  # type: ignore[arg-type]


def kind_of(op: object) -> Kind | None:
    """The kind of an aotk op, None for any other op."""
    opdef = _opdef(op)
    return opdef.kind if opdef is not None else None


def accumulates_into(op: object) -> int | None:
    """`OpDef.accumulates_into` of an aotk op, None for any other op."""
    opdef = _opdef(op)
    return opdef.accumulates_into if opdef is not None else None


class BodyLowering(Protocol):
    """What a REGION op's lowering rule may use of `convert-aotk-to-loops`."""

    k: Kernel
    bufs: dict[SSAValue, Buf]
    code: bool  # False while only the workspace is planned: buffers, but no loops

    def alloc(self, t: Attribute, dims: list[DimV]) -> Buf: ...
    def lower_op(self, op: Operation, targets: dict[SSAValue, Buf]) -> None: ...
    def result_dims(self, op: Operation, ins: list[Buf]) -> list[DimV]: ...
    def bind_results(
        self, op: Operation, dims: Sequence[DimV], targets: dict[SSAValue, Buf]
    ) -> list[Buf]: ...
    # the op's `OpDef.scratch` as {"scratch": buffer} ({} for none), one slice per op
    # however often it is lowered (a scan plans its body before its loop emits it)
    def scratch(self, op: Operation, ins: list[Buf]) -> dict[str, Buf]: ...
    # emit the op's loops on `bufs` by `emit()` (or call those of an op lowered alike,
    # whose loops depend only on the op and the form of its buffers); nothing if not code
    def emit_loops(self, op: Operation, bufs: Sequence[Buf], emit: Callable[[], None]) -> None: ...
    # emit the op's elementwise loop nest on its buffers (`elementwise_nest.emit`), as loops
    # of any sizes that ops alike share
    def emit_elementwise(
        self, op: Operation, outs: Sequence[Buf], ins: Sequence[Buf], body: BodyFn
    ) -> None: ...


def build(op_cls: Any, operands: Sequence[SSAValue], **attrs: Any) -> Any:
    """An `op_cls` (an AotkOp) of `operands`, its result type from the op's infer rule
    (which raises on bad operands or attributes); not inserted anywhere."""
    attrs = op_cls.typed_attrs(attrs)
    result_type = lookup(op_cls).infer(*(v.type for v in operands), **attrs)
    return op_cls.make(operands, result_type, **attrs)


def lookup(op: IRDLOperation | type[IRDLOperation]) -> OpDef:
    """Return the OpDef of an op or op class."""
    cls = op if isinstance(op, type) else type(op)
    try:
        return REGISTRY[cls]
    except KeyError:
        raise KeyError(f"{cls.name} is not an aotk primitive") from None
