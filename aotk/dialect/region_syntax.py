"""The textual form of the ops with a body, `aotk.fused` and `aotk.scan`:

    %r = aotk.fused(%e = %x, %f = %y) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32> {
      ...
      aotk.yield %v : tensor<f32>
    }

Each operand is bound by name to the block argument that sees it (`%arg = %operand`, in
named groups), then come the attributes, the op's function type and the body. The block
arguments' types follow from the operand types, so they are not repeated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects.builtin import FunctionType
from xdsl.dialects.utils.format import parse_assignment, print_assignment
from xdsl.ir import Attribute, Operation, Region, SSAValue
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer

Binding = tuple[Parser.UnresolvedArgument, UnresolvedOperand]


def print_region_op(printer: Printer, op: Operation, groups: Sequence[tuple[str, int]]) -> None:
    """Print `op`'s operands as named groups of (keyword, count), its type and its body."""
    args, start = op.regions[0].block.args, 0
    for keyword, count in groups:
        printer.print_string(f" {keyword}(" if keyword else "(")
        pairs = zip(args[start : start + count], op.operands[start : start + count], strict=True)
        printer.print_list(pairs, lambda pair: print_assignment(printer, *pair))
        printer.print_string(")")
        start += count
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_function_type(op.operand_types, op.result_types)
    printer.print_string(" ")
    printer.print_region(op.regions[0], print_entry_block_args=False)


def parse_region_op(
    parser: Parser,
    keywords: Sequence[str],
    arg_types: Callable[[list[int], Sequence[Attribute]], list[Attribute]],
) -> tuple[list[SSAValue], FunctionType, Region, dict[str, Attribute], list[int]]:
    """Parse what `print_region_op` prints; `arg_types(group sizes, operand types)` gives
    the block arguments' types. Returns operands, type, body, attributes, group sizes."""
    pos = parser.pos
    groups = [_parse_bindings(parser, keyword) for keyword in keywords]
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    ftype = parser.parse_function_type()
    bindings = [b for group in groups for b in group]
    inputs = list(ftype.inputs.data)
    if len(inputs) != len(bindings):
        parser.raise_error(
            f"{len(bindings)} operands bound but the type lists {len(inputs)}", pos, parser.pos
        )
    operands = list(parser.resolve_operands([o for _, o in bindings], inputs, pos))
    sizes = [len(group) for group in groups]
    types = arg_types(sizes, inputs)
    body = parser.parse_region([a.resolve(t) for (a, _), t in zip(bindings, types, strict=True)])
    return operands, ftype, body, attrs, sizes


def _parse_bindings(parser: Parser, keyword: str) -> list[Binding]:
    if keyword:
        parser.parse_keyword(keyword)
    parser.parse_punctuation("(")
    if parser.parse_optional_punctuation(")"):
        return []
    bindings = parser.parse_comma_separated_list(
        parser.Delimiter.NONE, lambda: parse_assignment(parser)
    )
    parser.parse_punctuation(")")
    return bindings
