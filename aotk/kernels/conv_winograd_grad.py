"""The kernel gradient of a 3 x 3 stride-1 convolution by Winograd's F(4 x 4, 3 x 3).

The forward tile is y = A^T [(G g G^T) * (B^T d B)] A, linear in the kernel g, so the
gradient of sum(y * e) over a tile's output gradient e is G^T [(B^T d B) * (A e A^T)] G,
and over the whole conv, per (input, output) channel pair,

    dg = G^T [sum over tiles of V[t] * Q[t]] G,  V = B^T d B, Q = A e A^T.

The sum is one matrix product C x tiles times tiles x K a point (36 for the 4 x 4
tiles), with 4 times fewer multiply-adds than the direct gradient's. Tiles overhanging
the output read e as 0 there. Where every thread gets `RUN_BLOCKS` blocks of `block()`
tiles, threads split them in `SLOTS` runs; a run's blocks add their products to its own
points x C x K sums (register tiles of `rows` input channels by `nvec` vectors of output
channels, loaded, summed over the block's tiles, stored). With fewer, one run takes every
block, and threads split each block's transforms by tiles and its products by points.
Then every channel pair adds the runs' sums and takes G^T S G.
Where a run's sums would not fit its budget, matmuls add to one set of sums
(`conv_winograd_grad_gemm`). A call of fewer than `conv_winograd.min_tiles` tiles, or on
images whose tiles' products the direct gradient's multiply-adds do not pay for
(`costs`: 3 x 3 and 5 x 5 'same' images), runs the direct gradient instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from xdsl.dialects.builtin import VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import (
    conv_tile,
    conv_winograd,
    conv_winograd_grad_gemm,
    heuristics,
    library,
    winograd_block,
)
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Geometry, Values
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const
from aotk.kernels.window import Window
from aotk.kernels.winograd_block import (
    Block,
    Shapes,
    block_tiles,
    gradient_transform,
    kernel_from_sums,
    m_at,
    v_at,
)
from aotk.kernels.winograd_tile import F4, Transform

SLOTS = 4  # runs of blocks, each with its own sums: a few per thread, to even out
# Runs are taken where each thread gets this many blocks; with fewer, one run's steps are
# split across threads instead: a run costs filling and adding its sums, and a few runs
# leave threads idle. At 128 channels, two threads, 32 images of 4 x 4 (one block) took
# 0.26 ms against 0.52-0.54 in one run (the direct gradient 0.47-0.62); 8 x 8 (three
# blocks, three runs) 1.29 against 1.70-1.78; 16 images of 16 x 16 (five blocks) 2.1-2.4
# against 4.1 in four runs. From 10 blocks a thread on, runs were 3-5% faster.
RUN_BLOCKS = 4
SUMS_L2 = 4  # a run's sums up to 4 L2s (256 x 256 channels: 4 MiB a run)
# Winograd's kernel gradient pays where the direct gradient's multiply-adds an image are
# at least 3/2 of the tiles' products (`costs`). Measured at 512 channels in and out, two
# threads, 'same' convs: 3 x 3 images (a ratio of 1.36) and 5 x 5 (1.17) took 1.4-1.8
# times the direct gradient's time, at 32 images; 6 x 6 (1.78) 0.8, 9 x 9 (1.93) as long,
# 10 x 10 (2.42) 0.74-0.84, 7 x 7 (2.51) 0.77 at 2 images, 0.62 at 32.
RATIO = (3, 2)  # the least direct multiply-adds : tiles' products
# The matmuls' path (`conv_winograd_grad_gemm`) below 512 channels needs twice the
# products: 32 images of 6 x 6 (1.78) took 3.35-3.43 ms at 192 channels against the direct
# gradient's 2.70-2.74, 6.6-6.8 against 5.1-5.7 at 256, as long at 384; 8 x 8 (3.36)
# 0.64, 0.69-0.79 and 0.54 of its time.
GEMM_RATIO = (2, 1)
GEMM_RATIO_BELOW = 512  # channels in or out


def block() -> int:
    """Tiles a block holds: three times the forward's, so that a run loads and stores
    its sums once per 54 (AVX-512) tiles."""
    return 3 * block_tiles()


def scratch_elems(
    k: Kernel,
    elem: Attribute,
    kernel: Sequence[DimV],
    conv: dict[str, Any],
    image: Sequence[object],
) -> DimV:
    """The scratch this path needs for the kernel gradient of a conv (`aotk.conv`'s
    attributes `conv`, a kernel of dims `kernel`, over images of `image` dims), or 0
    when it does not apply: the
    forward's conditions, whole vectors of output channels, and a run's sums within
    SUMS_L2 times L2 (they are read and written once a block: 256 x 256 channels measured
    0.66-0.71 of the direct gradient's time, 384 x 384 0.88), or else the sums of all
    runs (36 C K) within the forward's `GEMM_U_BYTES` (`conv_winograd_grad_gemm`)."""
    if not conv_winograd.takes(elem, kernel, conv, None, image) or not pays(
        elem, kernel, conv, image
    ):
        return 0
    cin, cout = kernel[2], kernel[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    if cout % conv_tile.tile_shape(dtypes.byte_size(elem), cout)[0]:
        return 0
    tf = transform_for(elem, kernel)
    if tf is not None:
        return SLOTS * _slot_elems(tf, cin, cout)
    if F4.points * cin * cout * dtypes.byte_size(elem) <= conv_winograd.GEMM_U_BYTES:
        return conv_winograd_grad_gemm.scratch_elems(k, elem, (cin, cout))
    return 0


def pays(
    elem: Attribute, kernel: Sequence[DimV], conv: dict[str, Any], image: Sequence[object]
) -> bool:
    """Whether Winograd pays for images of `image` dims (`costs`); True where a dim is
    known only at run time (`emit` then decides at each call)."""
    if not all(isinstance(d, int) for d in image):
        return True
    win, sizes = Window.of_conv(kernel[:-2], **conv), cast(list[int], list(image))
    pads = [win.pads(STATIC, size, d)[0] for d, size in enumerate(sizes)]
    dilated = [win.dilated(STATIC, size, d) for d, size in enumerate(sizes)]
    ratio = ratio_for(elem, kernel)
    direct, products = costs(STATIC, pads, dilated, win.out_dims(STATIC, sizes), F4, ratio)
    assert isinstance(direct, int) and isinstance(products, int)
    return direct >= products


def ratio_for(elem: Attribute, kernel: Sequence[DimV]) -> tuple[int, int]:
    """The least direct multiply-adds : tiles' products where Winograd pays (`costs`)."""
    cin, cout = kernel[2], kernel[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    by_gemms = transform_for(elem, kernel) is None
    return GEMM_RATIO if by_gemms and min(cin, cout) < GEMM_RATIO_BELOW else RATIO


def transform_for(elem: Attribute, kernel: Sequence[DimV]) -> Transform | None:
    """F4 where a run's sums fit SUMS_L2 L2s, else None (the matmuls' path or the direct
    one, `scratch_elems`). F(2 x 2, 3 x 3) in register tiles, whose sums take 16 C K,
    was slower than the matmuls beyond (one thread: 4 x 28 x 28 images, 192 channels
    10.3-11.4 ms against 7.8-8.6; 256 channels 20.3 against 13.7)."""
    cin, cout = kernel[2], kernel[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    sums = F4.points * cin * cout * dtypes.byte_size(elem)
    return F4 if sums <= SUMS_L2 * heuristics.L2_BYTES else None


def _slot_elems(tf: Transform, cin: int, cout: int) -> int:
    """A run's V and Q of a block, then its sums."""
    return tf.points * block() * (cin + cout) + tf.points * cin * cout


def emit(
    k: Kernel, bufs: tuple[Buf, Buf, Buf], g: Geometry, scratch: Buf, direct: Callable[[], None]
) -> None:
    """dw = the kernel gradient of conv(x, w) for bufs = (dw, dy, x), dy the output's
    gradient, given scratch of `scratch_elems`; `direct()` builds the direct gradient,
    for calls of few tiles (`conv_winograd.choose`)."""
    dw, dy, x = bufs
    cin, cout = dw.dims[2], dw.dims[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    lanes, rows, most = conv_tile.tile_shape(dtypes.byte_size(dw.elem), cout)  # type: ignore[arg-type]
    tf = transform_for(dw.elem, dw.dims)
    size = block() if tf is not None else conv_winograd_grad_gemm.BLOCK
    vt = VectorType(dw.elem, [lanes])
    shapes = Shapes(vt, rows, min(most, cout // lanes), cin, cout, tf or F4, size)
    side = shapes.tf.m
    grid = (k.div(k.add(dy.dims[1], side - 1), side), k.div(k.add(dy.dims[2], side - 1), side))
    if tf is None:
        paths = (lambda: conv_winograd_grad_gemm.emit(k, bufs, (g, grid, scratch), shapes), direct)
        least = conv_winograd.min_tiles(F4)
        ratio = ratio_for(dw.elem, dw.dims)
        cost = costs(k, g.pad_before, g.dilated, g.out_dims, F4, ratio)
        conv_winograd.choose(k, (dy.dims[0], *grid), paths, least, costs=cost)
        return
    points = tf.points

    def winograd() -> None:
        tiles = k.product([dy.dims[0], *grid])
        blocks = k.div(k.add(tiles, block() - 1), block())
        enough = k.compare("sge", blocks, k.mul(library.parallel_width(k), RUN_BLOCKS))
        slots = k.select(enough, k.min(blocks, SLOTS), 1)
        with k.loop(slots, parallel=True) as s:
            v_base = k.mul(s, _slot_elems(tf, cin, cout))
            m_base = k.add(v_base, points * block() * cin)
            sums = k.add(m_base, points * block() * cout)
            zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
            mk.fill(k, scratch, (sums, points * cin * cout), zero, parallel=True)
            first, last = (k.div(k.mul(k.add(s, i), blocks), slots) for i in (0, 1))
            with k.loop(last, lb=first) as b:
                t0 = k.mul(b, block())
                at = Block((dy, x), g, (grid[0], grid[1]), None, scratch, v_base, m_base, t0)
                count = k.min(block(), k.sub(tiles, t0))
                # one run: its steps split across threads (inside a run's task, serial)
                winograd_block.input_transform(k, at, shapes, count, parallel=True)
                gradient_transform(k, at, shapes, (0, count), parallel=True)
                _accumulate(k, at, shapes, (sums, count))
        sums = (points * block() * (cin + cout), _slot_elems(tf, cin, cout), slots)
        kernel_from_sums(k, (dw, scratch), shapes, sums)

    least = conv_winograd.min_tiles(tf)
    cost = costs(k, g.pad_before, g.dilated, g.out_dims, tf)
    conv_winograd.choose(k, (dy.dims[0], *grid), (winograd, direct), least, costs=cost)


def costs(
    a: DimArith,
    pads: Sequence[Dim],
    sizes: Sequence[Dim],
    outs: Sequence[Dim],
    tf: Transform,
    ratio: tuple[int, int] = RATIO,
) -> tuple[Dim, Dim]:
    """(the direct gradient's multiply-adds an image, the tiles' products) per channel
    pair, scaled so that Winograd pays where the first is at least the second (`choose`):
    the direct gradient skips the taps over the padding, which on small images are many
    (3 x 3 images, 'same': 49 of 81), while every tile's products are made in full. It
    implies the forward's fill rule (`conv_winograd.fills_tiles`): outputs filling less
    than a third of the tiles' 16 make fewer than 48 taps a tile, 54 needed.
    `pads`: the pads before each spatial axis, `sizes` the input's, `outs` the output's;
    `ratio`: `ratio_for` the conv's."""
    direct, tiles = 1, 1
    for pad, size, out in zip(pads, sizes, outs, strict=True):
        taps = 0
        for t in range(3):  # outputs o with o + t - pad inside the input: o + t in [lo, hi)
            lo, hi = a.max(t, pad), a.min(a.add(out, t), a.add(size, pad))
            taps = a.add(taps, a.sub(a.max(hi, lo), lo))
        direct = a.mul(direct, taps)
        tiles = a.mul(tiles, a.div(a.add(out, tf.m - 1), tf.m))
    return a.mul(direct, ratio[1]), a.mul(a.mul(tiles, tf.points), ratio[0])


def _accumulate(k: Kernel, at: Block, shapes: Shapes, where: tuple[DimV, DimV]) -> None:
    """sums[xi] += V[xi]^T Q[xi] over the block's `count` tiles, in register tiles of
    `rows` input channels by `nvec` vectors, then the remainders of each (the tiles add,
    so none may overlap)."""
    rows, nvec, cin = shapes.rows, shapes.nvec, shapes.cin
    vectors = shapes.cout // shapes.lanes
    row_parts = [(rows, cin // rows, 0), (cin % rows, 1, cin // rows * rows)]
    vector_parts = [(nvec, vectors // nvec, 0), (vectors % nvec, 1, vectors // nvec * nvec)]
    with k.loop(shapes.tf.points, parallel=True) as xi:  # run alone: points across threads
        for r, r_trips, r_start in row_parts:
            for v, v_trips, v_start in vector_parts:
                if r == 0 or v == 0:
                    continue
                with k.loop(r_trips) as i, k.loop(v_trips) as j:
                    c0 = k.add(r_start, k.mul(i, r))
                    o = k.mul(k.add(v_start, k.mul(j, v)), shapes.lanes)
                    _sum_tile(k, at, shapes, (xi, c0, o, r, v), where)


def _sum_tile(
    k: Kernel, at: Block, shapes: Shapes, tile: tuple[Any, DimV, DimV, int, int], where: Any
) -> None:
    """sums[xi, c0:c0 + r, o:o + v vectors] += sum over tiles t of V[xi, t, c] Q[xi, t, o]."""
    xi, c0, o, r, v = tile
    sums, count = where
    vt, lanes, cin, cout = shapes.vt, shapes.lanes, shapes.cin, shapes.cout
    base = k.add(sums, k.add(k.mul(k.add(k.mul(xi, cin), c0), cout), o))
    offsets = [k.add(base, row * cout + vec * lanes) for row in range(r) for vec in range(v)]
    accs = [mk.vload(k, at.scratch, offset, vt) for offset in offsets]

    def step(t: SSAValue, accs: Values) -> list[SSAValue]:
        q_at = k.add(m_at(k, at, shapes, xi, t), o)
        qs = [mk.vload(k, at.scratch, k.add(q_at, vec * lanes), vt) for vec in range(v)]
        v_row = k.add(v_at(k, at, shapes, xi, t), c0)
        new = list(accs)
        for row in range(r):
            broadcast = mk.splat(k, k.load_flat(at.scratch, k.add(v_row, row)), vt)
            for vec in range(v):
                new[row * v + vec] = mk.vfma(k, broadcast, qs[vec], accs[row * v + vec])
        return new

    for offset, value in zip(offsets, k.fold_loop(count, accs, step), strict=True):
        mk.vstore(k, at.scratch, offset, value)
