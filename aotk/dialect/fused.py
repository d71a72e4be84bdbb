"""`aotk.fused`: a group of elementwise ops that runs as one loop nest.

The region has one block whose arguments are rank-0 tensors, one per operand (an element
of it), and whose body is ordinary elementwise aotk ops on rank-0 tensors, ended by
`aotk.yield` of one value per result. Operands broadcast NumPy-style to the results'
shape, which all results share. Only `aotk-fuse` builds it, after autodiff: it has no
gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Self

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from aotk.dialect.base import (
    AotkOp,
    Shape,
    broadcast_shapes,
    elem_of,
    shape_of,
    tensor,
    types_compatible,
)
from aotk.dialect.elementwise import ConstantOp, lower_scalar
from aotk.dialect.region_syntax import parse_region_op, print_region_op
from aotk.dialect.registry import REGISTRY, BodyLowering, Kind, OpDef, register
from aotk.kernels import elementwise_nest
from aotk.kernels.kernel import Buf, Kernel


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends an `aotk.fused` body with the scalar result of each fused output."""

    name = "aotk.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue) -> None:
        # Operation's own constructor: with IRDL's argument handling a yield took 49 us,
        # so 10, and fusing ResNet50's training step makes 4,000
        Operation.__init__(self, operands=values)


@irdl_op_definition
class FusedOp(IRDLOperation):
    """Elementwise ops fused into one kernel; results share one broadcast shape."""

    name = "aotk.fused"
    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    # Isolated: CSE must not replace a body's constant with an equal one from outside
    traits = traits_def(Pure(), IsolatedFromAbove())

    def print(self, printer: Printer) -> None:
        print_region_op(printer, self, [("", len(self.inputs))])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands, ftype, body, attrs, _ = parse_region_op(
            parser, [""], lambda _, types: [tensor(elem_of(t), ()) for t in types]
        )
        return cls.create(
            operands=operands,
            result_types=list(ftype.outputs.data),
            regions=[body],
            attributes=attrs,
        )

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != len(self.inputs):
            raise VerifyException(
                f"aotk.fused: {len(self.inputs)} inputs but {len(block.args)} block arguments"
            )
        for arg, operand in zip(block.args, self.inputs, strict=True):
            if arg.type != tensor(elem_of(operand.type), ()):
                raise VerifyException(
                    f"aotk.fused: block argument {arg.type} does not match input {operand.type}"
                )
        for op in block.ops:
            if isinstance(op, YieldOp):
                continue
            opdef = REGISTRY.get(type(op))  # type: ignore[arg-type]
            if opdef is None or opdef.kind is not Kind.ELEMENTWISE:
                raise VerifyException(f"aotk.fused: {op.name} is not an elementwise aotk op")
        terminator = block.last_op
        if not isinstance(terminator, YieldOp) or len(terminator.values) != len(self.outputs):
            raise VerifyException(
                "aotk.fused: body must end with aotk.yield of one value per result"
            )
        shapes = [shape_of(r.type) for r in self.outputs]
        expected = broadcast_shapes(*(shape_of(o.type) for o in self.inputs)) if self.inputs else ()
        for r, shape in zip(self.outputs, shapes, strict=True):
            if len(shape) < len(expected) or not types_compatible(
                tensor(elem_of(r.type), _pad(expected, len(shape))), r.type
            ):
                raise VerifyException(
                    f"aotk.fused: result {r.type} does not match the broadcast of the inputs"
                )


def _pad(shape: tuple, rank: int) -> tuple:
    return (1,) * (rank - len(shape)) + tuple(shape)


def _infer(op: FusedOp, shapes: list[Shape], body_shapes: Callable) -> list[Shape]:
    shape = broadcast_shapes(*shapes) if shapes else ()
    return [_pad(shape, len(shape_of(r.type))) for r in op.results]


def _numpy(op: FusedOp, inputs: list[np.ndarray], run_body: Callable) -> list[np.ndarray]:
    """Run the body once on whole broadcast arrays (its ops are elementwise)."""
    shape = np.broadcast_shapes(*(x.shape for x in inputs)) if inputs else ()
    results = run_body([np.broadcast_to(x, shape) for x in inputs])
    return [
        np.ascontiguousarray(np.broadcast_to(value, shape)).reshape(
            _pad(shape, len(shape_of(r.type)))
        )
        for r, value in zip(op.results, results, strict=True)
    ]


def _lower(low: BodyLowering, op: FusedOp, targets: dict[SSAValue, Buf]) -> None:
    ins = [low.bufs[v] for v in op.inputs]
    static = shape_of(op.outputs[0].type)
    dims = elementwise_nest.broadcast_dims(low.k, static, ins)
    outs = low.bind_results(op, dims, targets)

    low.emit_elementwise(op, outs, ins, lambda k, xs: scalar_body(k, op.body.block, xs))


def scalar_body(
    k: Kernel,
    block: Block,
    xs: Sequence[SSAValue],
    constant: Callable[[SSAValue], SSAValue] | None = None,
) -> list[SSAValue]:
    """Lower an elementwise body (`aotk.fused`'s, `aotk.conv_fused`'s epilogue) on the
    values `xs` of its arguments; the values it yields. `constant` maps each constant's
    scalar (to a vector, when `xs` are vectors)."""
    env: dict[SSAValue, SSAValue] = dict(zip(block.args, xs, strict=True))
    for inner in block.ops:
        if isinstance(inner, YieldOp):
            return [env[v] for v in inner.values]
        assert isinstance(inner, AotkOp)
        value = lower_scalar(k, inner, [env[v] for v in inner.operands])
        if constant is not None and isinstance(inner, ConstantOp):
            value = constant(value)
        env[inner.results[0]] = value
    raise AssertionError("elementwise body without aotk.yield")


register(OpDef(ir=FusedOp, kind=Kind.REGION, infer=_infer, numpy=_numpy, lower=_lower))
