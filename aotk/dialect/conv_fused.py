"""`aotk.conv_fused`: a convolution whose output goes through an elementwise epilogue.

    %y = aotk.conv_fused %x, %w strides [1, 1] ... groups 1 epilogue(%acc, %b = %bias)
           : (tensor<?x8x8x3xf32>, tensor<3x3x3x16xf32>, tensor<16xf32>) -> tensor<?x8x8x16xf32> {
      %s = "aotk.add"(%acc, %b) : ...
      ...
      aotk.yield %r : tensor<f32>
    }

With `packed %u` after the kernel, the op also takes the kernel in Winograd's points
(`kernels.winograd_weight`), made once for a weight a K.function does not write
(`aotk.weight_packs`), and its code does not make it per call.

The body is an `aotk.fused` body: block argument %acc is an element of the convolution,
the others an element of each epilogue input, each a scalar or one value per output
channel (every dim but the last 1). It yields the result element, of the conv's dtype.
Only `aotk-fuse` builds it, after autodiff (a conv followed by a bias and an activation):
the conv's tiles apply it while their output is still in cache, instead of a pass over
the whole output.
"""

from __future__ import annotations

from typing import Any, Self

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, TensorType, VectorType, i32
from xdsl.dialects.utils.format import parse_assignment, print_assignment
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, Pure
from xdsl.utils.exceptions import VerifyException

from aotk.dialect.arithmetic import AddOp, DivOp, MaximumOp, MinimumOp, MulOp, SubOp
from aotk.dialect.base import Shape, elem_of, shape_of, tensor, types_compatible
from aotk.dialect.conv import (
    SEGMENTS,
    ConvWindowOp,
    conv_shape,
    infer_conv,
    np_conv,
    winograd_scratch,
)
from aotk.dialect.elementwise import ConstantOp
from aotk.dialect.fused import YieldOp, scalar_body
from aotk.dialect.registry import REGISTRY, BodyLowering, Kind, OpDef, register
from aotk.kernels import conv_kernel, conv_winograd
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Body, Epilogue, geometry
from aotk.kernels.kernel import Buf, Kernel
from aotk.kernels.window import Window


class EpilogueConvOp(ConvWindowOp):
    """A convolution whose result goes through an elementwise body: the form and checks
    `aotk.conv_fused` and `aotk.conv_pool` share. A subclass says what its result is
    (`inferred`) and which properties are the conv's (`conv_attrs`)."""

    x = operand_def(TensorType)
    kernel = operand_def(TensorType)
    packed = opt_operand_def(TensorType)
    extras = var_operand_def(TensorType)
    result = result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(Pure(), IsolatedFromAbove())
    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    @classmethod
    def assemble(
        cls,
        operands: tuple[SSAValue, SSAValue, SSAValue | None, list[SSAValue]],
        result_type: Attribute,
        properties: dict[str, Attribute],
        body: Region,
    ) -> Self:
        """The op of operands = (x, kernel, packed or None, extras)."""
        x, kernel, packed, extras = operands
        packs = [packed] if packed is not None else []
        sizes = DenseArrayBase.from_list(i32, [1, 1, len(packs), len(extras)])
        return cls.create(
            operands=[x, kernel, *packs, *extras],
            result_types=[result_type],
            properties={**properties, SEGMENTS: sizes},
            regions=[body],
        )

    def attrs(self) -> dict[str, Any]:
        return {k: v for k, v in super().attrs().items() if k != SEGMENTS}

    def window_properties(self) -> dict[str, Attribute]:
        """The properties but the operand segments: the window's, and the pool's."""
        return {k: v for k, v in self.properties.items() if k != SEGMENTS}

    def plain(self) -> bool:
        """Whether the epilogue leaves the conv's output as it is (`identity_body`)."""
        ops = list(self.body.block.ops)
        return len(ops) == 1 and list(ops[0].operands) == [self.body.block.args[0]]

    def epilogue_inputs(self, values: list[Any]) -> list[Any]:
        """Of one value per operand (arrays, buffers), those of the extras."""
        return values[2 + (self.packed is not None) :]

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list([self.x, self.kernel], printer.print_operand)
        if self.packed is not None:
            printer.print_string(" packed ")
            printer.print_operand(self.packed)
        self.print_window(printer)
        acc, *args = self.body.block.args
        printer.print_string(" epilogue(")
        printer.print_block_argument(acc, print_type=False)
        for arg, value in zip(args, self.extras, strict=True):
            printer.print_string(", ")
            print_assignment(printer, arg, value)
        printer.print_string(")")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        args = [parser.parse_unresolved_operand()]
        parser.parse_punctuation(",")
        args.append(parser.parse_unresolved_operand())
        packs = []
        if parser.parse_optional_keyword("packed"):
            packs.append(parser.parse_unresolved_operand())
        props = cls.parse_window(parser)
        parser.parse_keyword("epilogue")
        parser.parse_punctuation("(")
        acc = parser.parse_argument(expect_type=False)
        bindings = []
        while parser.parse_optional_punctuation(","):
            bindings.append(parse_assignment(parser))
        parser.parse_punctuation(")")
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        fn = parser.parse_function_type()
        types, leading = list(fn.inputs.data), len(args) + len(packs)
        if len(types) != leading + len(bindings) or len(fn.outputs.data) != 1:
            parser.raise_error(
                f"{leading + len(bindings)} operands and 1 result, but the type lists "
                f"{len(types)} and {len(fn.outputs.data)}",
                pos,
                parser.pos,
            )
        operands = parser.resolve_operands([*args, *packs, *(o for _, o in bindings)], types, pos)
        block_args = [acc.resolve(_element(types[0]))]
        for (arg, _), t in zip(bindings, types[leading:], strict=True):
            block_args.append(arg.resolve(_element(t)))
        body = parser.parse_region(block_args)
        x, kernel, *rest = operands
        packed = rest[0] if packs else None
        op = cls.assemble((x, kernel, packed, rest[len(packs) :]), fn.outputs.data[0], props, body)
        op.attributes.update(attrs)
        return op

    def conv_attrs(self) -> dict[str, Any]:
        """The convolution's properties, as `aotk.conv`'s rules take them."""
        return self.attrs()

    def inferred(self) -> Attribute:
        """The result type from the operands' (raises ValueError or TypeError)."""
        return infer_conv(self.x.type, self.kernel.type, **self.conv_attrs())

    def verify_(self) -> None:
        try:
            expected = self.inferred()
        except (ValueError, TypeError) as err:
            raise VerifyException(f"{self.name}: {err}") from None
        if not types_compatible(expected, self.result.type):
            raise VerifyException(
                f"{self.name}: result type should be {expected}, got {self.result.type}"
            )
        self.verify_packed()
        channels = shape_of(expected)[-1]
        for value in self.extras:
            if not per_channel(shape_of(value.type), channels):
                raise VerifyException(
                    f"{self.name}: epilogue input {value.type} must be a scalar or hold one "
                    f"value per output channel ({channels})"
                )
        _verify_body(self)

    def pooling(self) -> Any:
        """The pool's window (2 ints) the conv's tiles apply, None for none."""
        return None

    def verify_packed(self) -> None:
        """`packed` is U as the Winograd path computes this conv with, if given."""
        if self.packed is None:
            return
        elem = elem_of(self.x.type)
        dims = conv_winograd.weight_shape(
            elem,
            shape_of(self.kernel.type),
            self.conv_attrs(),
            self.pooling(),
            shape_of(self.x.type)[1:-1],
        )
        if dims is None:
            raise VerifyException(
                f"{self.name}: packed is given, but this conv does not take Winograd's path"
            )
        got = self.packed.type
        if elem_of(got) != elem or tuple(shape_of(got)) != dims:
            raise VerifyException(
                f"{self.name}: packed must be {tensor(elem, dims)} for this conv, got {got}"
            )


@irdl_op_definition
class ConvFusedOp(EpilogueConvOp):
    """`aotk.conv` followed by an elementwise body applied to each output element."""

    name = "aotk.conv_fused"


def identity_body(result_type: Attribute) -> Region:
    """An epilogue that leaves a conv's output (of type `result_type`) as it is."""
    block = Block(arg_types=[_element(result_type)])
    block.add_op(YieldOp(block.args[0]))
    return Region(block)


def per_channel(shape: Shape, channels: int | None) -> bool:
    """A shape that broadcasts along every axis but the last, holding 1 or `channels`."""
    if any(d != 1 for d in shape[:-1]):
        return False
    return not shape or shape[-1] == 1 or (channels is not None and shape[-1] == channels)


def _element(t: Any) -> TensorType:
    return tensor(elem_of(t), ())


def _verify_body(op: EpilogueConvOp) -> None:
    block = op.body.block
    expected = [_element(op.x.type), *(_element(v.type) for v in op.extras)]
    if [a.type for a in block.args] != expected:
        raise VerifyException(f"{op.name}: block arguments should be {expected}")
    for inner in block.ops:
        kind = REGISTRY.get(type(inner))  # type: ignore[arg-type]
        if not isinstance(inner, YieldOp) and (kind is None or kind.kind is not Kind.ELEMENTWISE):
            raise VerifyException(f"{op.name}: {inner.name} is not an elementwise aotk op")
    last = block.last_op
    if not isinstance(last, YieldOp) or len(last.values) != 1:
        raise VerifyException(f"{op.name}: body must end with aotk.yield of one value")
    if elem_of(last.values[0].type) != elem_of(op.result.type):
        raise VerifyException(
            f"{op.name}: body yields {last.values[0].type}, not the result's dtype"
        )


def _infer(op: ConvFusedOp, shapes: list[Shape], body_shapes: Any) -> list[Shape]:
    return [shape_of(infer_conv(*operand_types(op, shapes), **op.attrs()))]


def operand_types(op: EpilogueConvOp, shapes: list[Shape]) -> tuple[TensorType, TensorType]:
    """x's and the kernel's types with the interpreter's `shapes`."""
    x, w = (tensor(elem_of(v.type), s) for v, s in zip(op.operands[:2], shapes, strict=False))
    return x, w


def _numpy(op: ConvFusedOp, inputs: list[np.ndarray], run_body: Any) -> list[np.ndarray]:
    """The conv's oracle, then the body on whole arrays (its ops are elementwise)."""
    conv = np_conv(inputs[0], inputs[1], **op.attrs())
    extras = [np.broadcast_to(v, conv.shape) for v in op.epilogue_inputs(inputs)]
    (value,) = run_body([conv, *extras])
    return [np.ascontiguousarray(np.broadcast_to(value, conv.shape))]


def _lower(low: BodyLowering, op: ConvFusedOp, targets: dict[SSAValue, Buf]) -> None:
    ins = [low.bufs[v] for v in op.operands]
    x, w, packed = ins[0], ins[1], ins[2] if op.packed is not None else None
    extras, attrs = op.epilogue_inputs(ins), op.attrs()
    (out,) = low.bind_results(op, conv_shape(low.k, [x.dims, w.dims], **attrs), targets)
    scratch = low.scratch(op, ins[: len(ins) - len(extras)]).get("scratch")

    def emit() -> None:
        g = geometry(low.k, Window.of_conv(w.dims[:-2], **attrs), x.dims[1:-1])
        conv_kernel.emit(low.k, (out, x, w), g, epilogue_of(op, extras), scratch, packed)

    low.emit_loops(op, [out, *ins, *([scratch] if scratch else [])], emit)


def epilogue_of(op: EpilogueConvOp, extras: list[Buf]) -> Epilogue:
    """The op's body as the kernels apply it, on the buffers of its extra operands."""
    block = op.body.block
    return Epilogue(lambda k, xs: scalar_body(k, block, xs)[0], tuple(extras), _vector_body(block))


# Ops whose scalar rule is one arith op on its operands, so it applies to vectors as is.
_VECTOR_SAFE = (AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp)


def _vector_body(block: Block) -> Body | None:
    """The body on vectors, when it is built from `_VECTOR_SAFE` ops and constants (a
    bias and relu): the tiles then apply it to their accumulators before storing them."""
    ops = [op for op in block.ops if not isinstance(op, YieldOp)]
    if not all(isinstance(op, (*_VECTOR_SAFE, ConstantOp)) for op in ops):
        return None

    def body(k: Kernel, xs: list[SSAValue]) -> SSAValue:
        vt = xs[0].type
        assert isinstance(vt, VectorType)
        return scalar_body(k, block, xs, lambda scalar: mk.splat(k, scalar, vt))[0]

    return body


register(
    OpDef(
        ir=ConvFusedOp,
        kind=Kind.REGION,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        scratch=winograd_scratch,
    )
)
