"""3 x 3 convolutions by Winograd's F(4 x 4, 3 x 3), pooled over 2 x 2 windows or not.

An m x m tile of conv outputs is A^T [(G g G^T) * (B^T d B)] A (`winograd_tile`), where
d is the (m + 2) x (m + 2) input patch beneath it and g the 3 x 3 kernel of one (input,
output) channel pair: F4 makes 16 outputs with 36 multiplications, where the direct sum
takes 9 an output. Summed over input channels, a tile's products become one matrix
product a point, tiles x C times C x K, so the conv's multiply-adds drop 4 times, for
the price of the transforms. Up to about 600 channels in and out together in float32
(300 in float64), a block's V and M fit L2 and the products run in register tiles
(below); beyond, as matmuls (`conv_winograd_gemm`), while U takes at most GEMM_U_BYTES;
the direct kernels beyond that (`plan_for`). A 2 x 2 pooling window is part of the
output transform, four a tile.

- U = G g G^T of every channel pair (points x C x K values, `winograd_weight`; each
  point's C x K in a matmul's slivers for the products by matmuls), once per call
  before the threads start, or given: made once for a weight the function does not
  write (`aotk.weight_packs`).
- The tiles of all images, in order, go in blocks of up to `Shapes.block` (fewer when
  there are few tiles), the last shifted back to end at the last tile; threads split
  the blocks in runs, each with its own scratch (`winograd_register`). Per block, the
  input transform writes V = B^T d B (points x tiles x C); the products V[xi] U[xi] in
  register tiles (`rows` tiles x `nvec` vectors of output channels) write M (points x
  tiles x K); the output transform A^T M A, the epilogue, then the pools, with masked
  stores where a tile overhangs the output, write the output (`winograd_output`).
  Channel vectors past the end are shifted back too: a few values are computed twice,
  and nothing is read past a buffer's end.

A call of fewer tiles than `min_tiles` runs the direct conv instead (`choose`); given U,
one of fewer than a register tile's rows. So do images whose outputs fill less than
a third (`MIN_FILL_PARTS`) of the tiles over them (2 x 2 outputs: a quarter), whatever
the batch: known at compile time, or at run time for images of dynamic dims.
Rounding differs from the direct sum: the transforms add and subtract scaled inputs
before the products. Measured in float32 against float64 on random convs of 32 to 256
channels, the root-mean-square error was 2.4-2.9 times the direct kernels' (with F4's
points 0, +-1, 2, -1/2: 1.2-2.7 x 10^-6 on outputs of magnitude 1.4); the largest error,
in units in the last place of the sum of the terms' magnitudes, 8-17 against the direct
kernels' 2.2-3.1 (F(2 x 2, 3 x 3)'s 0.6-0.7 times the direct kernels', for 2.25 times
fewer products, not 4, and slower: `plan_for`).
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import (
    conv_tile,
    conv_winograd_gemm,
    heuristics,
    winograd_register,
    winograd_weight,
)
from aotk.kernels.conv_geometry import Epilogue, Geometry
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.window import Window
from aotk.kernels.winograd_block import Shapes, block_tiles
from aotk.kernels.winograd_output import outputs_per_side
from aotk.kernels.winograd_tile import F4, Transform

# Fewer tiles in a call run the direct conv: U is made in every call, and few blocks
# keep threads idle. Measured at batch 1 by F(2 x 2, 3 x 3), in tiles of 4 outputs: 7 x
# 7 images (16 tiles) took 1.2-2.1 times the direct conv's time, 14 x 14 (49 tiles)
# 0.73-0.86; F4's 12 tiles are as many outputs as 48 of those.
MIN_TILES = 12
# Outputs must fill this much of the F4 tiles over them: on 2 x 2 images a tile's 36
# products make 4 outputs, the direct conv's 9 each, and with the transforms Winograd
# took 1.2-1.3 times the direct conv's time (512 channels, 8-32 images, two threads),
# its kernel gradient 2.1 times at 32 images; 3 x 3 images (a fill of 0.56) took half
# the direct conv's time, their kernel gradient 0.85-0.88.
MIN_FILL_PARTS = 3  # at least one part in this many
# U made in a call (36 C K values) takes at most this (512 channels in and out: 37.7 MB
# in float32); larger convs take the direct kernels
GEMM_U_BYTES = 64 << 20


def enabled() -> bool:
    """Whether convs may take this path (and their kernel gradients `conv_winograd_grad`'s):
    `AOTK_CONV_WINOGRAD=0` keeps every conv on the direct kernels, whose float32 rounding
    is closer to the exact sum (above), at 2-4 times the time. Read as a function is
    compiled, and part of its cache key (`option_tag`)."""
    return os.environ.get("AOTK_CONV_WINOGRAD", "1") not in ("0", "off", "false")


def option_tag() -> str:
    """How `enabled` changes the code a function compiles to, for cache keys."""
    return "" if enabled() else " winograd=off"


def applies(
    elem: Attribute,
    kernel: Sequence[DimV],
    win: Window,
    pooling: Sequence[int] | None,
    image: Sequence[object],
) -> bool:
    """Whether this path computes a conv of `kernel` dims (3, 3, C, K) and window `win`
    over images of spatial dims `image` (ints where known), pooled over `pooling`
    windows or not (None): `enabled`, float32 or float64, stride and dilation 1, no
    groups, 2 x 2 windows, a vector of input and output channels, outputs that fill
    F4's tiles (`fills_tiles`), and a plan (`plan_for`)."""
    if not enabled() or not isinstance(elem, Float32Type | Float64Type) or len(kernel) != 4:
        return False
    taps_h, taps_w, cin, cout = kernel
    if (taps_h, taps_w) != (3, 3) or win.groups != 1:
        return False
    if pooling is not None and tuple(pooling) != (2, 2):
        return False
    if any(v != 1 for v in (*win.strides, *win.dilation, *win.lhs_dilation)):
        return False
    assert isinstance(cin, int) and isinstance(cout, int)  # a kernel's dims are static
    lanes = conv_tile.tile_shape(dtypes.byte_size(elem), cout)[0]
    if min(cin, cout) < lanes or not fills_tiles(win, image):
        return False
    return plan_for(elem, kernel) is not None


def fills_tiles(win: Window, image: Sequence[object]) -> bool:
    """Whether the conv's outputs over images of `image` dims (unknown unless ints) fill
    at least one part in MIN_FILL_PARTS of the F4 tiles that cover them (`choose` checks
    dims known only at run time)."""
    if not all(isinstance(d, int) for d in image):
        return True
    outputs, covered = image_fill(STATIC, win.out_dims(STATIC, list(image)), F4.m)
    return MIN_FILL_PARTS * outputs >= covered


class Plan(NamedTuple):
    """The transform, the tiles of a block, and whether the products are matmuls
    (`conv_winograd_gemm`) rather than register tiles over a block in L2."""

    tf: Transform
    block: int
    gemms: bool

    def layout(self) -> winograd_weight.Layout:
        """How U is laid out for these products: in slivers for the matmuls."""
        return winograd_weight.Layout(self.tf, self.gemms)


def plan_for(elem: Attribute, kernel: Sequence[DimV]) -> Plan | None:
    """F4 in blocks of three register tiles' rows or two, whichever first has V and M
    within L2; else F4 by matmuls, where U takes at most GEMM_U_BYTES; else None. A
    block of one register tile's rows reads all of U (36 C K values) for 6 tiles: 384
    channels in and out took 1.7-2.1 times F(2 x 2, 3 x 3)'s time that way, 256 in
    blocks of two 0.72-1.02. F(2 x 2, 3 x 3) in blocks within L2, which took convs of up
    to about 900 channels before the matmuls, was slower than those but on a few tiles
    (batch 1, one thread, 384 channels, 14 x 14: 2.69 ms against 2.57; two images 4.90
    against 4.33; 7 x 7 images of 400, too few F4 tiles for Winograd: 0.98 against the
    direct conv's 1.21)."""
    cin, cout = kernel[2], kernel[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    rows, size = block_tiles() // 3, dtypes.byte_size(elem)
    for block in (3 * rows, 2 * rows):
        if F4.points * block * (cin + cout) * size <= heuristics.L2_BYTES:
            return Plan(F4, block, False)
    if F4.points * cin * cout * size <= GEMM_U_BYTES:
        return Plan(F4, conv_winograd_gemm.BLOCK, True)
    return None


def min_tiles(tf: Transform) -> int:
    """MIN_TILES of F4's tiles in `tf`'s: as many outputs."""
    return MIN_TILES * F4.m**2 // tf.m**2


def takes(
    elem: Attribute,
    kernel: Sequence[DimV],
    conv: dict[str, Any],
    pooling: Any,
    image: Sequence[object],
) -> bool:
    """`applies` to a conv of `aotk.conv`'s attributes `conv`."""
    return applies(elem, kernel, Window.of_conv(kernel[:-2], **conv), pooling, image)


def weight_layout(
    elem: Attribute,
    kernel: Sequence[DimV | None],
    conv: dict[str, Any],
    pooling: Any,
    image: Sequence[object],
) -> winograd_weight.Layout | None:
    """U's layout for a conv (`aotk.conv`'s attributes `conv`, of a kernel of dims
    `kernel`, None where unknown) over images of `image` dims, pooled over `pooling` or
    None; None when this path does not apply."""
    static = [d for d in kernel if d is not None]
    if len(static) != len(kernel) or not takes(elem, static, conv, pooling, image):
        return None
    plan = plan_for(elem, static)
    assert plan is not None
    return plan.layout()


def weight_shape(
    elem: Attribute,
    kernel: Sequence[DimV | None],
    conv: dict[str, Any],
    pooling: Any,
    image: Sequence[object],
) -> tuple[int, ...] | None:
    """U's dims (`winograd_weight.Layout.dims`) for a conv, as `weight_layout` takes it;
    None when this path does not apply."""
    layout = weight_layout(elem, kernel, conv, pooling, image)
    if layout is None:
        return None
    cin, cout = kernel[2], kernel[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    return layout.dims(elem, (cin, cout))


def scratch_elems(
    k: Kernel,
    elem: Attribute,
    kernel: Sequence[DimV],
    conv: tuple[dict[str, Any], Any, Sequence[object]],
    packed: bool,
) -> DimV:
    """The scratch elements this path needs for a conv (conv = (`aotk.conv`'s
    attributes, the pooling or None, the images' dims), as `weight_shape` takes them),
    given U (`packed`) or not; 0 when it does not apply. U unless packed, then each
    slot's V, M and four vectors (or `conv_winograd_gemm.scratch_elems`)."""
    dims = weight_shape(elem, kernel, *conv)
    if dims is None:
        return 0
    plan = plan_for(elem, kernel)
    assert plan is not None
    u = 0 if packed else math.prod(dims)
    cin, cout = kernel[2], kernel[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    channels = (cin, cout)
    if plan.gemms:
        return k.add(u, conv_winograd_gemm.scratch_elems(plan.tf, channels))
    return u + winograd_register.scratch_elems(plan.tf, plan.block, channels)


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    g: Geometry,
    plan: tuple[str | None, Buf],
    epilogue: Epilogue | None,
    direct: Callable[[], None],
    packed: Buf | None = None,
) -> None:
    """out = pool(epilogue(conv(x, w))) for bufs = (out, x, w), plan = (the pool's mode,
    None for no pool; scratch of `scratch_elems`), when `applies`; `direct()` builds the
    direct conv, for calls of few tiles (`choose`). `packed` is U (`weight_shape`),
    else it is made in the scratch."""
    out, w = bufs[0], bufs[2]
    mode, scratch = plan
    cin, cout = w.dims[2], w.dims[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    lanes, rows, most = conv_tile.tile_shape(dtypes.byte_size(out.elem), cout)  # type: ignore[arg-type]
    layout = plan_for(out.elem, w.dims)
    assert layout is not None
    vt = VectorType(out.elem, [lanes])
    shapes = Shapes(vt, rows, min(most, cout // lanes), cin, cout, layout.tf, layout.block)
    side = outputs_per_side(shapes, mode)
    grid = (k.div(k.add(out.dims[1], side - 1), side), k.div(k.add(out.dims[2], side - 1), side))
    by = conv_winograd_gemm.emit if layout.gemms else winograd_register.emit

    def winograd() -> None:
        u_layout = layout.layout()
        free = 0 if packed else math.prod(u_layout.dims(out.elem, (cin, cout)))  # after U
        if packed is None:
            winograd_weight.transform(k, (scratch, w), u_layout, vt, (cin, cout))
        by(k, bufs, (g, grid, mode), (scratch, packed or scratch, free), shapes, epilogue)

    # given U, a call of a register tile's rows of tiles was faster than the direct conv:
    # batch 1, one thread, 12 x 12 x 128 channels (9 F4 tiles) 0.15 ms against 0.48,
    # 10 x 10 x 256 0.63-0.74 against 1.16
    least = shapes.rows if packed else min_tiles(layout.tf)
    choose(k, (out.dims[0], *grid), (winograd, direct), least, image_fill(k, out.dims[1:3], side))


def image_fill(a: DimArith, out: Sequence[Dim], side: int) -> tuple[Dim, Dim]:
    """(outputs, outputs the tiles cover) of an image of `out` dims in tiles of `side`
    outputs a side (pooled ones, with a pool), known statically (`STATIC`) or computed
    by a kernel."""
    tiles = [a.mul(a.div(a.add(d, side - 1), side), side) for d in out]
    return a.product(list(out)), a.product(tiles)


def choose(
    k: Kernel,
    grid: tuple[DimV, DimV, DimV],
    paths: tuple[Callable[[], None], Callable[[], None]],
    least: int = MIN_TILES,
    fill: tuple[DimV, DimV] | None = None,
    costs: tuple[DimV, DimV] | None = None,
) -> None:
    """Build `winograd()` of paths = (winograd, direct) where a call has at least `least`
    tiles (grid: images x tile rows x tile columns), given fill = (outputs, outputs the
    tiles cover) of an image, they fill a part in MIN_FILL_PARTS (`fills_tiles`), and
    given costs = (the direct path's, Winograd's), the first is not the smaller; else
    `direct()`: decided statically where the dims tell, else both, picked at run time."""
    winograd, direct = paths
    per_image, tiles = k.product(grid[1:]), k.product(grid)
    direct_if: list[bool | SSAValue] = []
    if not (isinstance(per_image, int) and per_image >= least):
        direct_if.append(_less(k, tiles, least))
    if fill is not None and not isinstance(per_image, int):  # static: `fills_tiles`
        direct_if.append(_less(k, k.mul(fill[0], MIN_FILL_PARTS), fill[1]))
    if costs is not None:
        direct_if.append(_less(k, *costs))
    run_time = [c for c in direct_if if not isinstance(c, bool)]
    if True in direct_if:
        direct()
    elif not run_time:
        winograd()
    else:
        k.if_else(functools.reduce(k.either, run_time), direct, winograd)


def _less(k: Kernel, a: DimV, b: DimV) -> bool | SSAValue:
    return a < b if isinstance(a, int) and isinstance(b, int) else k.compare("slt", a, b)
