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

A kernel that is a transpose of another's channel axes (the input gradient of a
convolution, written as one by autodiff) is read as the other, transposed by the matmul.

With strides, x is first sliced to the positions the window reads (every s-th, from 0),
and the input gradient is written there, zeros elsewhere (`aotk.unslice`).

Matched: float32/float64 convolutions and their gradients with a window of ones, no
input dilation, one group and no explicit padding (`same` pads nothing at a window of 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern

from aotk import dtypes
from aotk.dialect.base import Dim, elem_of, shape_of
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_backprop import ConvBackpropOp, Wrt
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.shape import FULL, ReshapeOp, SliceOp
from aotk.dialect.unslice import UnsliceOp
from aotk.kernels.window import Window
from aotk.transforms.emitter import Emitter
from aotk.transforms.simplify import swapped_last_of


def pointwise(op: ConvOp | ConvBackpropOp) -> Window | None:
    """The window of `op` if it is a 1 x 1 convolution (or its gradient) that is a
    matmul, else None."""
    elem = elem_of(op.result.type)
    if not dtypes.is_float(elem) or dtypes.byte_size(elem) not in (4, 8):
        return None
    window = shape_of(op.kernel.type)[:-2]
    if any(d != 1 for d in window):
        return None
    win = Window.of_conv(window, **op.attrs())
    unpadded = win.same or not any((*win.pad_before, *win.pad_after))
    if not unpadded or any(v != 1 for v in win.lhs_dilation) or win.groups != 1:
        return None
    return win


class PointwiseConv(RewritePattern):
    """A pointwise conv or gradient -> aotk.matmul (and reshapes, which are views)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if not isinstance(op, ConvOp | ConvBackpropOp) or (win := pointwise(op)) is None:
            return
        emit = Emitter(rewriter, op)
        kernel_shape = shape_of(op.kernel.type)
        channels, outs = kernel_shape[-2], kernel_shape[-1]
        # the positions a strided window reads (with no padding, 'same' starts at 0 too)
        rank = len(kernel_shape)
        every = {"start": [0] * rank, "stop": [FULL] * rank, "step": [1, *win.strides, 1]}
        strided = any(s != 1 for s in win.strides)
        x = emit(SliceOp, [op.x], **every) if strided else op.x
        if isinstance(op, ConvOp):
            w, transposed = _kernel_matrix(emit, op.kernel, channels, outs)
            result = emit(MatMulOp, [x, w], **_rhs(transposed))
        elif op.attrs()["wrt"] == Wrt.INPUT:
            w, transposed = _kernel_matrix(emit, op.kernel, channels, outs)
            result = emit(MatMulOp, [op.g, w], **_rhs(not transposed))
            if strided:
                result = emit(UnsliceOp, [result, op.x], **every)
        else:
            rows_x = emit(ReshapeOp, [x], shape=[-1, channels])
            rows_g = emit(ReshapeOp, [op.g], shape=[-1, outs])
            product = emit(MatMulOp, [rows_x, rows_g], transpose_lhs=True)
            result = emit(ReshapeOp, [product], shape=list(kernel_shape))
        rewriter.replace(op, [], [result])


def _kernel_matrix(
    emit: Emitter, kernel: SSAValue, channels: Dim, outs: Dim
) -> tuple[SSAValue, bool]:
    """A 1 x 1 kernel as the [channels, outs] matrix, or as the [outs, channels] one it
    is the transpose of (True): no copy of the weights transposed on every call."""
    source = swapped_last_of(kernel, len(shape_of(kernel.type)))
    if source is not None:
        return emit(ReshapeOp, [source], shape=[outs, channels]), True
    return emit(ReshapeOp, [kernel], shape=[channels, outs]), False


def _rhs(transposed: bool) -> dict[str, bool]:
    """The matmul's flag, only when set (the op's default otherwise)."""
    return {"transpose_rhs": True} if transposed else {}


@dataclass(frozen=True)
class AotkPointwiseConvsPass(ModulePass):
    """Rewrite 1 x 1 convolutions and their gradients as matmuls."""

    name = "aotk-pointwise-convs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(PointwiseConv(), apply_recursively=False).rewrite_module(op)
