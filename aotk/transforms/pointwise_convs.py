"""`aotk-pointwise-convs`: a 1 x 1 convolution as the matmul it is.

A convolution with a window of ones, stride 1 and one group multiplies each position's
channels by the kernel: x [N, *S, C] times w [C, O]. Bottleneck layers (ResNet, DenseNet,
MobileNet) have one or two of them each. As convolutions, each shape compiled register
tiles of its own, forward and both gradients; as `aotk.matmul` they call the packed
matmul routines, compiled once per machine, and the kernel gradient can take the weight
update in its epilogue (`aotk-matmul-updates`).

- conv(x, w) = x times w as [C, O] (matmul multiplies a batch of rows [..., C]);
- its input gradient: g times w as [C, O], transposed;
- its kernel gradient: x as rows [P, C], transposed, times g as rows [P, O], as
  [1, ..., 1, C, O].

Matched: float32/float64 convolutions and their gradients with a window of ones, strides
1, no input dilation, one group and no explicit padding (`same` pads nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from aotk import dtypes
from aotk.dialect.base import elem_of, shape_of
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_backprop import ConvBackpropOp, Wrt
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.shape import ReshapeOp
from aotk.kernels.window import Window
from aotk.transforms.emitter import Emitter


def pointwise(op: ConvOp | ConvBackpropOp) -> bool:
    """Whether `op` is a 1 x 1 convolution (or its gradient) that is a matmul."""
    elem = elem_of(op.result.type)
    if not dtypes.is_float(elem) or dtypes.byte_size(elem) not in (4, 8):
        return False
    window = shape_of(op.kernel.type)[:-2]
    if any(d != 1 for d in window):
        return False
    win = Window.of_conv(window, **op.attrs())
    unpadded = win.same or not any((*win.pad_before, *win.pad_after))
    plain = all(v == 1 for v in (*win.strides, *win.lhs_dilation))
    return unpadded and plain and win.groups == 1


class PointwiseConv(RewritePattern):
    """A pointwise conv or gradient -> aotk.matmul (and reshapes, which are views)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, ConvOp | ConvBackpropOp) or not pointwise(op):
            return
        emit = Emitter(rewriter, op)
        kernel_shape = shape_of(op.kernel.type)
        channels, outs = kernel_shape[-2], kernel_shape[-1]
        if isinstance(op, ConvOp):
            result = emit(MatMulOp, [op.x, emit(ReshapeOp, [op.kernel], shape=[channels, outs])])
        elif op.attrs()["wrt"] == Wrt.INPUT:
            w = emit(ReshapeOp, [op.kernel], shape=[channels, outs])
            result = emit(MatMulOp, [op.g, w], transpose_rhs=True)
        else:
            rows_x = emit(ReshapeOp, [op.x], shape=[-1, channels])
            rows_g = emit(ReshapeOp, [op.g], shape=[-1, outs])
            product = emit(MatMulOp, [rows_x, rows_g], transpose_lhs=True)
            result = emit(ReshapeOp, [product], shape=list(kernel_shape))
        rewriter.replace(op, [], [result])


@dataclass(frozen=True)
class AotkPointwiseConvsPass(ModulePass):
    """Rewrite 1 x 1 convolutions and their gradients as matmuls."""

    name = "aotk-pointwise-convs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(PointwiseConv(), apply_recursively=False).rewrite_module(op)
