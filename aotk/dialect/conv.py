"""`aotk.conv`: convolution over 1 to 3 spatial dims, channels_last.

x [N, *S, C] with a kernel [*K, C / groups, O] gives [N, *P, O]. Strides, kernel dilation,
input dilation (`lhs_dilation`: zeros between input elements, which makes a transposed
convolution a plain one), explicit per-side padding or TF's "same" padding (computed from
the run-time dims, so dynamic spatial dims work), and feature groups (depthwise); the
geometry is `kernels.window.Window`'s. `WindowedOp` gives the window ops their custom form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, i64
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import Attribute, SpacedOpaqueSyntaxAttribute
from xdsl.irdl import (
    BaseAttr,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure

from aotk import dtypes
from aotk.dialect.base import AotkOp, Shape, dtype_of, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import conv_kernel, conv_winograd
from aotk.kernels.conv_geometry import geometry
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.window import ConvPadding, Window


@irdl_attr_definition
class ConvPaddingAttr(EnumAttribute[ConvPadding], SpacedOpaqueSyntaxAttribute):
    """aotk.conv's padding mode: `#aotk<conv_padding same>`."""

    name = "aotk.conv_padding"


SEGMENTS = "operandSegmentSizes"  # a property the operands imply: never spelled out


class WindowedOp(AotkOp):
    """An op over windows; its custom form spells each property out after the operands:
    `aotk.pool %x window [2, 2] strides [2, 2] padding same mode max : (...) -> ...`."""

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.operands, printer.print_operand)
        self.print_window(printer)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(self.operand_types, self.result_types)

    def print_window(self, printer: Printer) -> None:
        """Each property as ` name value`."""
        for name in self.get_irdl_definition().properties:
            if name == SEGMENTS:
                continue
            printer.print_string(f" {name} ")
            value = self.properties[name]
            if isinstance(value, DenseArrayBase):
                printer.print_string(f"[{', '.join(str(v) for v in value.get_values())}]")
            elif isinstance(value, IntegerAttr):
                printer.print_string(str(value.value.data))
            else:
                value.print_parameter(printer)  # pyright: ignore[reportAttributeAccessIssue]

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        pos = parser.pos
        args = parser.parse_comma_separated_list(
            parser.Delimiter.NONE, parser.parse_unresolved_operand
        )
        props = cls.parse_window(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        fn = parser.parse_function_type()
        operands = parser.resolve_operands(args, fn.inputs.data, pos)
        return cls.create(
            operands=list(operands),
            result_types=list(fn.outputs.data),
            properties=props,
            attributes=attrs,
        )

    @classmethod
    def parse_window(cls, parser: Parser) -> dict[str, Attribute]:
        """What `print_window` prints."""
        props: dict[str, Attribute] = {}
        for name, prop in cls.get_irdl_definition().properties.items():
            if name == SEGMENTS:
                continue
            parser.parse_keyword(name)
            props[name] = _parse_prop(parser, prop.constr)
        return props


def _parse_prop(parser: Parser, constr: Any) -> Attribute:
    kind = constr.attr if isinstance(constr, BaseAttr) else None
    if kind is DenseArrayBase:
        values = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)
        return DenseArrayBase.from_list(i64, values)
    if kind is IntegerAttr:
        return IntegerAttr(parser.parse_integer(allow_boolean=False), i64)
    if kind is not None and issubclass(kind, EnumAttribute):
        return kind(parser.parse_str_enum(kind.enum_type))
    parser.raise_error(f"no custom syntax for properties of type {constr}")


class ConvWindowOp(WindowedOp):
    """The window of a convolution, shared by `aotk.conv` and `aotk.conv_fused`."""

    strides = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    lhs_dilation = prop_def(DenseArrayBase)
    pad_before = prop_def(DenseArrayBase)
    pad_after = prop_def(DenseArrayBase)
    padding = prop_def(ConvPaddingAttr)  # explicit (pad_before/pad_after) or same
    groups = prop_def(IntegerAttr)


@irdl_op_definition
class ConvOp(ConvWindowOp):
    """N-d convolution (a correlation, as in TF) of channels_last `x` with `kernel`."""

    name = "aotk.conv"
    x = operand_def(TensorType)
    kernel = operand_def(TensorType)
    result = result_def(TensorType)
    traits = traits_def(Pure())


def _check_operands(x: Attribute, kernel: Attribute) -> None:
    xs, ks = shape_of(x), shape_of(kernel)
    if len(xs) < 3 or len(ks) != len(xs):
        raise ValueError(
            "expected x [N, *spatial, C] and a kernel [*window, C / groups, O] of equal rank "
            f">= 3, got {fmt_shape(xs)} and {fmt_shape(ks)}"
        )
    if elem_of(x) != elem_of(kernel):
        raise TypeError(f"x and kernel have different dtypes {dtype_of(x)} and {dtype_of(kernel)}")
    if not dtypes.is_float(elem_of(x)):
        raise TypeError(f"expected float tensors, got {dtype_of(x)}")
    if None in ks:
        raise ValueError(f"the kernel shape must be static, got {fmt_shape(ks)}")


def _check_channels(xs: Shape, ks: Shape, groups: int) -> None:
    cin, out_ch = ks[-2], ks[-1]
    assert cin is not None and out_ch is not None
    if out_ch % groups:
        raise ValueError(f"groups {groups} must be >= 1 and divide the {out_ch} output channels")
    if xs[-1] is not None and xs[-1] != cin * groups:
        raise ValueError(
            f"x has {xs[-1]} channels, the kernel {fmt_shape(ks)} expects {cin} * {groups} groups"
        )


def conv_shape(a: DimArith, dims: Sequence[Sequence[Dim]], **attrs: Any) -> list[Dim]:
    """[N, *S, C] with a kernel [*K, C / groups, O] -> [N, *P, O]."""
    x, w = dims[0], dims[1]
    win = Window.of_conv(w[:-2], **attrs)
    return [x[0], *win.out_dims(a, x[1:-1]), w[-1]]


def infer_conv(x: Attribute, kernel: Attribute, **attrs: Any) -> Attribute:
    _check_operands(x, kernel)
    xs, ks = shape_of(x), shape_of(kernel)
    win = Window.of_conv(ks[:-2], **attrs)
    _check_channels(xs, ks, win.groups)
    win.check_fits(xs[1:-1])
    return tensor(elem_of(x), conv_shape(STATIC, [xs, ks], **attrs))


def np_padded_input(x: np.ndarray, win: Window) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """x dilated and padded in float64, with the pads per spatial axis."""
    sizes = x.shape[1:-1]
    pads = [win.pads(STATIC, s, d) for d, s in enumerate(sizes)]
    dilated = [win.dilated(STATIC, s, d) for d, s in enumerate(sizes)]
    xd = np.zeros((x.shape[0], *dilated, x.shape[-1]))
    xd[(slice(None), *(slice(None, None, lh) for lh in win.lhs_dilation))] = x
    return np.pad(xd, [(0, 0), *pads, (0, 0)]), pads


def tap_slices(win: Window, tap: Sequence[int], outs: Sequence[int]) -> tuple[slice, ...]:
    """The strided slices of the padded input that window tap `tap` reads."""
    starts = [t * d for t, d in zip(tap, win.dilation, strict=True)]
    return tuple(
        slice(a, a + (o - 1) * st + 1 if o else a, st)
        for a, o, st in zip(starts, outs, win.strides, strict=True)
    )


def np_conv(x: np.ndarray, w: np.ndarray, **attrs: Any) -> np.ndarray:
    """The oracle: one strided window per kernel tap, contracted per group in float64."""
    win = Window.of_conv(w.shape[:-2], **attrs)
    xp, _ = np_padded_input(x, win)
    outs = win.out_dims(STATIC, x.shape[1:-1])
    groups = win.groups
    cg, og = w.shape[-2], w.shape[-1] // groups
    acc = np.zeros((x.shape[0], *outs, groups, og))
    for tap in np.ndindex(*w.shape[:-2]):
        patch = xp[(slice(None), *tap_slices(win, tap, outs))]
        patch = patch.reshape(x.shape[0], *outs, groups, cg)
        wt = w[tap].astype(np.float64).reshape(cg, groups, og)
        acc += np.einsum("...gc,cgo->...go", patch, wt)
    return acc.reshape(x.shape[0], *outs, groups * og).astype(x.dtype)


def _lower(k: Kernel, out: Buf, x: Buf, w: Buf, scratch: Buf | None = None, **attrs: Any) -> None:
    win = Window.of_conv(w.dims[:-2], **attrs)
    conv_kernel.emit(k, (out, x, w), geometry(k, win, x.dims[1:-1]), scratch=scratch)


def winograd_scratch(k: Kernel, ins: list[Buf], result_type: Attribute, **attrs: Any) -> DimV:
    """The scratch of `kernels.conv_winograd` when it computes this conv (attributes
    `attrs`; ins: x, the kernel, and U when the op is given it), else none."""
    packed = len(ins) > 2
    shape = (attrs, None, ins[0].dims[1:-1])
    return conv_winograd.scratch_elems(k, elem_of(result_type), ins[1].dims, shape, packed)


def _grad(g: Any, y: Any, x: Any, kernel: Any, **attrs: Any) -> tuple[Any, ...]:
    from aotk.dialect.conv_backprop import conv_grad

    return conv_grad(g, y, x, kernel, **attrs)


register(
    OpDef(
        ir=ConvOp,
        kind=Kind.OPAQUE,
        infer=infer_conv,
        numpy=np_conv,
        lower=_lower,
        shape=conv_shape,
        grad=_grad,
        scratch=winograd_scratch,
    )
)
