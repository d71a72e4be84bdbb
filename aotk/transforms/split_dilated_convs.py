"""`aotk-split-dilated-convs`: a convolution of a dilated input as one plain conv per phase.

A transposed convolution (`K.conv2d_transpose`, and the input gradient of any strided
conv) is an `aotk.conv` whose input is dilated by L: L - 1 zeros between its elements.
Of the taps of one output position, only those that land on an input element count, and
which ones depends on the position's phase, its index modulo L. So each phase is a plain
convolution of the undilated input with the kernel's taps of that phase, strided by L /
gcd(L, dilation): a conv the register tiles compute, where the dilated form took the
untiled loop that visits every tap (about 24 GFLOP/s). The phases' outputs are then
interleaved: one size-1 axis inserted after each split spatial axis, the phases of that
axis concatenated along it, and a reshape that merges each (positions, phases) pair.

Matched: a float32/float64 `aotk.conv` with some lhs_dilation above 1, strides 1 (what a
transposed conv has) and static spatial sizes; either groups 1 and output channels of at
least one vector (else the phases would take the untiled loop too), or depthwise with one
channel per group (`kernels.conv_depthwise`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from aotk import dtypes
from aotk.dialect.base import dtype_of, elem_of, shape_of
from aotk.dialect.conv import ConvOp
from aotk.dialect.elementwise import FillLikeOp
from aotk.dialect.shape import FULL, ConcatOp, ReshapeOp, SliceOp
from aotk.dialect.views import ExpandDimsOp
from aotk.kernels import conv_tile
from aotk.kernels.window import Window
from aotk.transforms.emitter import Emitter

# Each phase compiles as a tiled conv of its own (a 3x3 stride-2 conv2d_transpose took
# 0.9 s to compile split in 4, against 0.1 s as one untiled loop): stride-8 or -32
# upsampling (an FCN's 64 to 1024 phases) stays one loop.
MAX_PHASES = 16


@dataclass(frozen=True)
class AxisPhase:
    """One phase r of one spatial axis: output positions q * L + r, q < `count`, read
    input elements q + first + j * step for the kernel taps `taps` (j-th of them)."""

    taps: range  # the kernel's taps along this axis, in order (empty: no tap lands)
    first: int  # input element of q = 0 and the first tap (may be negative)
    step: int  # input elements between consecutive taps of the phase
    count: int  # output positions computed (the longest phase's count, for all)


def axis_phases(win: Window, d: int, size: int, out: int) -> list[AxisPhase]:
    """The phases of spatial axis d for an input of `size` and an output of `out`."""
    dilate, tap_gap = win.lhs_dilation[d], win.dilation[d]
    pad = win.pad_before[d]
    gcd = math.gcd(tap_gap, dilate)
    count = -(-out // dilate)
    phases = []
    for r in range(dilate):
        # tap t lands on an input element where (r - pad + t * tap_gap) % dilate == 0
        landing = [
            t
            for t in range(min(win.window[d], dilate // gcd))
            if (r - pad + t * tap_gap) % dilate == 0
        ]
        if not landing or size == 0:
            phases.append(AxisPhase(range(0), 0, 1, count))
            continue
        t0 = landing[0]
        phases.append(
            AxisPhase(
                range(t0, win.window[d], dilate // gcd),
                (r - pad + t0 * tap_gap) // dilate,
                tap_gap // gcd,
                count,
            )
        )
    return phases


def splittable(op: ConvOp) -> Window | None:
    """The conv's window when the rewrite applies to it, else None."""
    attrs = op.attrs()
    kernel_shape = shape_of(op.kernel.type)
    win = Window.of_conv(kernel_shape[:-2], **attrs)
    sizes = shape_of(op.x.type)[1:-1]
    elem = elem_of(op.result.type)
    if all(v == 1 for v in win.lhs_dilation) or any(s != 1 for s in win.strides):
        return None
    if math.prod(win.lhs_dilation) > MAX_PHASES:
        return None
    if win.same or any(s is None for s in sizes):
        return None
    if dtypes.byte_size(elem) not in (4, 8) or not dtypes.is_float(elem):
        return None
    channels = kernel_shape[-1]
    assert channels is not None
    if win.groups != 1:  # depthwise convs of one channel per group have their own path
        return win if tuple(kernel_shape[-2:]) == (1, win.groups) else None
    if conv_tile.tile_shape(dtypes.byte_size(elem), channels)[2] == 0:
        return None
    return win


class SplitDilatedConv(RewritePattern):
    """conv(dilated x, w) -> interleave(conv(x, w_phase) for each phase)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ConvOp, rewriter: PatternRewriter, /) -> None:
        win = splittable(op)
        if win is None:
            return
        sizes = [int(s) for s in shape_of(op.x.type)[1:-1] if s is not None]
        outs = [int(s) for s in shape_of(op.result.type)[1:-1] if s is not None]
        if len(outs) != len(sizes):
            return
        per_axis = [
            axis_phases(win, d, s, o) for d, (s, o) in enumerate(zip(sizes, outs, strict=True))
        ]
        emit = Emitter(rewriter, op)
        convs = {
            key: _phase_conv(emit, op, win, sizes, [per_axis[d][r] for d, r in enumerate(key)])
            for key in product(*(range(len(phases)) for phases in per_axis))
        }
        like = next((v for v in convs.values() if v is not None), None)
        if like is None:
            return  # no tap lands anywhere: left to the untiled loop, which writes zeros
        dtype = dtype_of(op.result.type)
        filled = {
            key: v if v is not None else emit(FillLikeOp, [like], value=0.0, dtype=dtype)
            for key, v in convs.items()
        }
        joined = _interleave(emit, filled, [len(p) for p in per_axis], ())
        counts = [p[0].count * len(p) for p in per_axis]
        merged = emit(ReshapeOp, [joined], shape=[-1, *counts, shape_of(op.result.type)[-1]])
        if counts != outs:
            rank = len(counts) + 2
            stops = [FULL, *outs, FULL]
            merged = emit(SliceOp, [merged], start=[0] * rank, stop=stops, step=[1] * rank)
        rewriter.replace(op, [], [merged])


def _phase_conv(
    emit: Emitter, op: ConvOp, win: Window, sizes: list[int], phases: list[AxisPhase]
) -> SSAValue | None:
    """The plain conv of one phase (None when no tap lands on an axis): the input cut
    where the phase starts past it, the kernel's taps of the phase, pads for the rest."""
    if any(not p.taps for p in phases):
        return None
    rank = len(phases)
    x, kernel = op.x, op.kernel
    crop = [max(p.first, 0) for p in phases]
    if any(crop):
        stop = [FULL] * (rank + 2)
        x = emit(SliceOp, [x], start=[0, *crop, 0], stop=stop, step=[1] * (rank + 2))
    steps = [p.taps.step for p in phases]
    if any(len(p.taps) != w for p, w in zip(phases, win.window, strict=True)):
        start = [p.taps.start for p in phases]
        kernel = emit(
            SliceOp, [kernel], start=[*start, 0, 0], stop=[FULL] * (rank + 2), step=[*steps, 1, 1]
        )
    before = [max(-p.first, 0) for p in phases]
    after = []
    for p, size, c, b in zip(phases, sizes, crop, before, strict=True):
        natural = size - c + b - (len(p.taps) - 1) * p.step  # outputs without after-pads
        after.append(max(p.count - natural, 0))
    conv = emit(
        ConvOp,
        [x, kernel],
        strides=[1] * rank,
        dilation=[p.step for p in phases],
        lhs_dilation=[1] * rank,
        pad_before=before,
        pad_after=after,
        padding="explicit",
        groups=win.groups,
    )
    got = [int(s) for s in shape_of(conv.type)[1:-1] if s is not None]
    want = [p.count for p in phases]
    if got == want:
        return conv
    stop = [FULL, *want, FULL]
    return emit(SliceOp, [conv], start=[0] * (rank + 2), stop=stop, step=[1] * (rank + 2))


def _interleave(
    emit: Emitter,
    convs: dict[tuple[int, ...], SSAValue],
    counts: list[int],
    prefix: tuple[int, ...],
) -> SSAValue:
    """The phases under `prefix`, their axes from len(prefix) on interleaved: each split
    axis d followed by a phases axis at position d + 2."""
    d = len(prefix)
    if d == len(counts):
        return convs[prefix]
    parts = [_interleave(emit, convs, counts, (*prefix, r)) for r in range(counts[d])]
    if counts[d] == 1:
        return parts[0]
    expanded = [emit(ExpandDimsOp, [p], axes=[d + 2]) for p in parts]
    return emit(ConcatOp, expanded, axis=d + 2)


@dataclass(frozen=True)
class AotkSplitDilatedConvsPass(ModulePass):
    """Compute transposed convolutions as one register-tiled conv per output phase."""

    name = "aotk-split-dilated-convs"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(SplitDilatedConv()).rewrite_module(op)
