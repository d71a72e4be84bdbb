"""3 x 3 convolutions by Winograd's F(2 x 2, 3 x 3), pooled over 2 x 2 windows or not.

A 2 x 2 tile of conv outputs is A^T [(G g G^T) * (B^T d B)] A (`winograd_tile`), where d
is the 4 x 4 input patch beneath it and g the 3 x 3 kernel of one (input, output)
channel pair: 16 multiplications instead of 36. Summed over input channels, the 16
elementwise products become 16 matrix products, tiles x C times C x K, so the conv's
multiply-adds drop 2.25 times, for the price of the transforms (adds, a few per value).
A 2 x 2 pooling window is exactly one tile: the pool is part of the output transform.

- U = G g G^T of every channel pair, once per call, before the threads start (16 x C x K
  values; each block of tiles reads all of them, 18 multiply-adds per value read).
- The tiles of all images, in order, go in blocks of up to `block_tiles` (fewer when
  there are few tiles, `_block_size`), the last shifted back to end at the last tile;
  threads split the blocks in `SLOTS` runs, each with its own scratch. Per block, the
  input transform writes V = B^T d B (16 x tiles x C); 16 products V[xi] U[xi] in
  register tiles (`rows` tiles x `nvec` vectors of output channels) write M (16 x tiles
  x K); the output transform A^T M A, the epilogue, then the pool, or masked stores
  where a tile overhangs an odd output, write the output. Channel vectors past the end
  are shifted back too: a few values are computed twice, and nothing is read past a
  buffer's end.

A call of fewer than MIN_TILES tiles runs the direct conv instead (`choose`). Rounding
differs from the direct sum (the transforms add and subtract inputs before the products)
by a few units in the last place.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import conv_tile, heuristics
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Epilogue, Geometry, Values
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const
from aotk.kernels.window import Window
from aotk.kernels.winograd_tile import AT, BT, POINTS, TILE, G, pool, sandwich

SLOTS = 8  # runs of blocks, each with its own scratch (~110 KiB for W5's second conv)
_QUAD = 4 * 16  # a tile's four output vectors (of at most 64 bytes of float32)
# Fewer tiles in a call run the direct conv: U is made in every call (16 C K values),
# and few blocks keep threads idle. Measured at batch 1: 7 x 7 images (16 tiles) took
# 1.2-2.1 times the direct conv's time, 14 x 14 (49 tiles) 0.73-0.86.
MIN_TILES = 48


def applies(
    elem: Attribute, kernel: Sequence[DimV], win: Window, pooling: Sequence[int] | None
) -> bool:
    """Whether this path computes a conv of `kernel` dims (3, 3, C, K) and window `win`,
    pooled over `pooling` windows or not (None): float32 or float64, stride and dilation
    1, no groups, 2 x 2 windows, a vector of input and output channels, and a block's V
    and M within L2 (512 channels in and out take the direct kernels: measured, the two
    were within 0.85-1.22 of each other there, 0.42-0.66 up to 384)."""
    if not isinstance(elem, Float32Type | Float64Type) or len(kernel) != 4:
        return False
    taps_h, taps_w, cin, cout = kernel
    if (taps_h, taps_w) != (3, 3) or win.groups != 1:
        return False
    if pooling is not None and tuple(pooling) != (2, 2):
        return False
    if any(v != 1 for v in (*win.strides, *win.dilation, *win.lhs_dilation)):
        return False
    assert isinstance(cin, int) and isinstance(cout, int)  # a kernel's dims are static
    size = dtypes.byte_size(elem)
    lanes = conv_tile.tile_shape(size, cout)[0]
    block_bytes = POINTS * block_tiles() * (cin + cout) * size
    return min(cin, cout) >= lanes and block_bytes <= heuristics.L2_BYTES


def block_tiles() -> int:
    """Tiles transformed and multiplied together: three register tiles of rows."""
    return 3 * conv_tile.tile_shape(4, 1)[1]


def takes(elem: Attribute, kernel: Sequence[DimV], conv: dict[str, Any], pooling: Any) -> bool:
    """`applies` to a conv of `aotk.conv`'s attributes `conv`."""
    return applies(elem, kernel, Window.of_conv(kernel[:-2], **conv), pooling)


def scratch_elems(
    elem: Attribute, kernel: Sequence[DimV], conv: dict[str, Any], pooling: Any
) -> int:
    """The scratch elements this path needs for a conv (`aotk.conv`'s attributes `conv`,
    of a kernel of dims `kernel`) pooled over `pooling` or None; 0 when it does not
    apply. U, then each slot's V, M and four vectors."""
    if not takes(elem, kernel, conv, pooling):
        return 0
    cin, cout = kernel[2], kernel[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    return POINTS * cin * cout + SLOTS * _slot_elems(cin, cout)


def _slot_elems(cin: int, cout: int) -> int:
    return POINTS * block_tiles() * (cin + cout) + _QUAD


@dataclass(frozen=True)
class Shapes:
    """The vector type, the register tile (rows x nvec vectors) and the channels."""

    vt: VectorType
    rows: int
    nvec: int
    cin: int
    cout: int

    @property
    def lanes(self) -> int:
        return self.vt.get_shape()[0]

    def vectors(self, count: int) -> int:
        """Vectors covering `count` channels (the last shifted back, `shifted`)."""
        return -(-count // self.lanes)


@dataclass(frozen=True)
class Block:
    """A block of tiles from tile t0 (of the grid: images x tile rows x tile columns),
    its buffers, pooling mode (None: none), and the slot's V and M in the scratch."""

    bufs: tuple[Buf, Buf]  # out (or the output's gradient), x
    g: Geometry
    grid: tuple[DimV, DimV]  # tile rows, tile columns
    mode: str | None
    scratch: Buf
    v_base: DimV
    m_base: DimV
    t0: DimV
    capacity: int  # tiles V and M have room for: their stride from one point to the next

    def tile(self, k: Kernel, t: DimV) -> tuple[DimV, DimV, DimV]:
        """(image, tile row, tile column) of the block's tile t."""
        flat = k.add(self.t0, t)
        rest = k.div(flat, self.grid[1])
        return k.div(rest, self.grid[0]), k.rem(rest, self.grid[0]), k.rem(flat, self.grid[1])


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    g: Geometry,
    plan: tuple[str | None, Buf],
    epilogue: Epilogue | None,
    direct: Callable[[], None],
) -> None:
    """out = pool(epilogue(conv(x, w))) for bufs = (out, x, w), plan = (the pool's mode,
    None for no pool; scratch of `scratch_elems`), when `applies`; `direct()` builds the
    direct conv, for calls of few tiles (`choose`)."""
    out, x, w = bufs
    mode, scratch = plan
    cin, cout = w.dims[2], w.dims[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    lanes, rows, most = conv_tile.tile_shape(dtypes.byte_size(out.elem), cout)  # type: ignore[arg-type]
    shapes = Shapes(VectorType(out.elem, [lanes]), rows, min(most, cout // lanes), cin, cout)
    grid = out.dims[1:3] if mode else [k.div(k.add(d, 1), 2) for d in out.dims[1:3]]

    def winograd() -> None:
        _transform_kernel(k, (scratch, w), shapes)
        tiles = k.product([out.dims[0], *grid])
        block = _block_size(k, tiles, rows)
        blocks = k.div(k.add(tiles, k.sub(block, 1)), block)
        count = k.min(block, tiles)
        slots = k.min(blocks, SLOTS)
        with k.loop(slots, parallel=True) as s:
            v_base = k.add(POINTS * cin * cout, k.mul(s, _slot_elems(cin, cout)))
            m_base = k.add(v_base, POINTS * block_tiles() * cin)
            first, last = (k.div(k.mul(k.add(s, i), blocks), slots) for i in (0, 1))
            with k.loop(last, lb=first) as b:
                t0 = k.min(k.mul(b, block), k.sub(tiles, count))
                places = (scratch, v_base, m_base)
                at = Block((out, x), g, (grid[0], grid[1]), mode, *places, t0, block_tiles())
                input_transform(k, at, shapes, count)
                _products(k, at, shapes, count)
                _output_transform(k, at, shapes, count, epilogue)

    choose(k, (out.dims[0], grid[0], grid[1]), winograd, direct)


def choose(
    k: Kernel,
    grid: tuple[DimV, DimV, DimV],
    winograd: Callable[[], None],
    direct: Callable[[], None],
) -> None:
    """Build `winograd()` where a call has at least MIN_TILES tiles (grid: images x tile
    rows x tile columns), else `direct()`: from the image's static size when it is
    enough, else both, picked at run time."""
    per_image, tiles = k.product(grid[1:]), k.product(grid)
    if isinstance(per_image, int) and per_image >= MIN_TILES:
        winograd()
    elif isinstance(tiles, int):
        (winograd if tiles >= MIN_TILES else direct)()
    else:
        k.if_else(k.compare("slt", tiles, MIN_TILES), direct, winograd)


def _block_size(k: Kernel, tiles: DimV, rows: int) -> DimV:
    """Tiles per block: `block_tiles`, or fewer (a multiple of the register tile's rows)
    when that leaves fewer blocks than runs: a conv of 49 tiles in 3 blocks kept the
    second thread idle a third of the time."""
    per_run = k.div(k.add(tiles, SLOTS * rows - 1), SLOTS * rows)
    return k.mul(k.max(k.min(per_run, block_tiles() // rows), 1), rows)


def shifted(k: Kernel, j: DimV, width: int, count: int) -> DimV:
    """Start of the j-th block of `width` of `count` channels, the last ending at count."""
    return k.min(k.mul(j, width), count - width)


def v_at(k: Kernel, at: Block, shapes: Shapes, point: DimV, tile: DimV) -> DimV:
    """Offset of V[point, tile, 0] in the scratch."""
    return k.add(at.v_base, k.mul(k.add(k.mul(point, at.capacity), tile), shapes.cin))


def m_at(k: Kernel, at: Block, shapes: Shapes, point: DimV, tile: DimV) -> DimV:
    """Offset of M[point, tile, 0] in the scratch."""
    return k.add(at.m_base, k.mul(k.add(k.mul(point, at.capacity), tile), shapes.cout))


def _transform_kernel(k: Kernel, where: tuple[Buf, Buf], shapes: Shapes) -> None:
    """U[xi, c, o] = (G g G^T)[xi] for g = w[:, :, c, o], at the start of the scratch."""
    scratch, w = where
    cin, cout = shapes.cin, shapes.cout
    with k.loop(cin, parallel=True) as c:
        with k.loop(shapes.vectors(cout)) as j:
            o = shifted(k, j, shapes.lanes, cout)
            at = k.add(k.mul(c, cout), o)  # of w[0, 0, c, o] and U[0, c, o]
            g = [
                [mk.vload(k, w, k.add(at, (r * 3 + s) * cin * cout), shapes.vt)
                 for s in range(3)]
                for r in range(3)
            ]  # fmt: skip
            for xi, value in enumerate(sandwich(k, G, g)):
                mk.vstore(k, scratch, k.add(at, xi * cin * cout), value)


def input_transform(k: Kernel, at: Block, shapes: Shapes, count: DimV) -> None:
    """V[xi, t] = (B^T d B)[xi] for the patch d under each tile t of the block."""
    x = at.bufs[1]
    zero = mk.splat(k, const(k.b, 0.0, shapes.vt.element_type), shapes.vt)
    with k.loop(count) as t:
        n, ty, tx = at.tile(k, t)
        top = k.sub(k.mul(ty, 2), at.g.pad_before[0])
        left = k.sub(k.mul(tx, 2), at.g.pad_before[1])
        patch = positions(k, x, (n, top, left), TILE, shapes.vt)
        with k.loop(shapes.vectors(shapes.cin)) as j:
            c = shifted(k, j, shapes.lanes, shapes.cin)
            v_row, v_point = k.add(v_at(k, at, shapes, 0, t), c), at.capacity * shapes.cin
            d = [
                [mk.vload_masked(k, x, k.add(offset, c), mask, zero) for offset, mask in line]
                for line in patch
            ]
            for xi, value in enumerate(sandwich(k, BT, d)):
                mk.vstore(k, at.scratch, k.add(v_row, xi * v_point), value)


def positions(
    k: Kernel, buf: Buf, corner: tuple[DimV, DimV, DimV], size: int, vt: VectorType
) -> list[list[tuple[DimV, SSAValue]]]:
    """The size x size positions from buf[n, top, left]: for each, the offset of its
    channel 0 (clamped into the image) and the lanes to load or store there, all inside
    the image, none outside it (padding, or an output past an odd edge). Rows and
    columns are checked once each."""
    n, top, left = corner
    strides = k.strides(buf.dims)
    rows = [_clamped(k, k.add(top, r), buf.dims[1], strides[1]) for r in range(size)]
    columns = [_clamped(k, k.add(left, c), buf.dims[2], strides[2]) for c in range(size)]
    image = k.mul(n, strides[0])
    lanes = vt.get_shape()[0]
    grid = []
    for row, row_inside in rows:
        line = []
        for column, column_inside in columns:
            inside = k.b.insert(arith.AndIOp(row_inside, column_inside)).result
            offset = k.add(k.add(image, row), column)
            line.append((offset, mk.lane_mask(k, k.select(inside, lanes, 0), vt)))
        grid.append(line)
    return grid


def _clamped(k: Kernel, v: DimV, size: DimV, stride: DimV) -> tuple[DimV, SSAValue]:
    """v clamped into [0, size) times `stride`, and whether v was inside."""
    inside = k.both(k.compare("sge", v, 0), k.compare("slt", v, size))
    return k.mul(k.max(k.min(v, k.sub(size, 1)), 0), stride), inside


def _products(k: Kernel, at: Block, shapes: Shapes, count: DimV) -> None:
    """M[xi] = V[xi] U[xi] for the block's `count` tiles (at least `rows`: `choose`), in
    register tiles of `rows` tiles by nvec vectors of output channels, the last shifted
    back."""
    rows, nvec, cout = shapes.rows, shapes.nvec, shapes.cout
    width = nvec * shapes.lanes
    with k.loop(POINTS) as xi:
        with k.loop(-(-cout // width)) as j:
            o = shifted(k, j, width, cout)
            with k.loop(k.div(k.add(count, rows - 1), rows)) as rb:
                r0 = k.min(k.mul(rb, rows), k.sub(count, rows))
                accs = _product_tile(k, at, shapes, (xi, r0, o))
                m_row = k.add(m_at(k, at, shapes, xi, r0), o)
                for r in range(rows):
                    for v in range(nvec):
                        offset = k.add(m_row, r * cout + v * shapes.lanes)
                        mk.vstore(k, at.scratch, offset, accs[r * nvec + v])


def _product_tile(
    k: Kernel, at: Block, shapes: Shapes, where: tuple[SSAValue, DimV, DimV]
) -> Sequence[SSAValue]:
    """The accumulators of M[xi, r0:r0 + rows, o:o + nvec vectors], summed over C."""
    xi, r0, o = where
    vt, rows, nvec, cin, cout = shapes.vt, shapes.rows, shapes.nvec, shapes.cin, shapes.cout
    v_row = v_at(k, at, shapes, xi, r0)
    u_row = k.add(k.mul(k.mul(xi, cin), cout), o)

    def step(c: SSAValue, accs: Values) -> list[SSAValue]:
        u_at = k.add(u_row, k.mul(c, cout))
        us = [mk.vload(k, at.scratch, k.add(u_at, v * shapes.lanes), vt) for v in range(nvec)]
        new = list(accs)
        for r in range(rows):
            scalar = k.load_flat(at.scratch, k.add(v_row, k.add(c, r * cin)))
            broadcast = mk.splat(k, scalar, vt)
            for v in range(nvec):
                new[r * nvec + v] = mk.vfma(k, broadcast, us[v], accs[r * nvec + v])
        return new

    zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
    return k.fold_loop(cin, [zero] * (rows * nvec), step)


def _output_transform(
    k: Kernel, at: Block, shapes: Shapes, count: DimV, epilogue: Epilogue | None
) -> None:
    """Each tile's A^T M A, its epilogue, then its pool or its four outputs."""
    out, vt = at.bufs[0], shapes.vt
    with k.loop(count) as t:
        n, ty, tx = at.tile(k, t)
        if at.mode:
            dsts = [(k.linear([n, ty, tx], k.strides(out.dims)[:3]), None)]
        else:
            dsts = [
                p
                for line in positions(k, out, (n, k.mul(ty, 2), k.mul(tx, 2)), 2, vt)
                for p in line
            ]
        with k.loop(shapes.vectors(shapes.cout)) as c:
            o = shifted(k, c, shapes.lanes, shapes.cout)
            m_row = k.add(m_at(k, at, shapes, 0, t), o)
            point = at.capacity * shapes.cout
            m = [mk.vload(k, at.scratch, k.add(m_row, xi * point), vt) for xi in range(POINTS)]
            ys = sandwich(k, AT, [m[r * TILE : (r + 1) * TILE] for r in range(TILE)])
            if epilogue is not None:
                ys = _finished(k, at, shapes, (ys, o), epilogue)
            if at.mode:
                ys = [pool(k, ys, at.mode)]
            for (offset, mask), y in zip(dsts, ys, strict=True):
                mk.vstore_lanes(k, out, k.add(offset, o), y, mask)


def _finished(
    k: Kernel, at: Block, shapes: Shapes, ys: tuple[list[SSAValue], DimV], epilogue: Epilogue
) -> list[SSAValue]:
    """The epilogue on a tile's outputs `ys` (vectors of channels from o): on the vectors
    when its body allows, else element by element through the slot's four vectors."""
    values, o = ys
    vt, lanes = shapes.vt, shapes.lanes
    if epilogue.vector is not None:
        extras = epilogue.vector_extras(k, vt, o)
        return [epilogue.vector(k, [y, *extras]) for y in values]
    quad = k.add(at.m_base, POINTS * at.capacity * shapes.cout)
    for q, y in enumerate(values):
        mk.vstore(k, at.scratch, k.add(quad, q * lanes), y)
    with k.loop(len(values) * lanes) as e:
        epilogue.apply(k, at.scratch, k.add(quad, e), k.add(o, k.rem(e, lanes)))
    return [mk.vload(k, at.scratch, k.add(quad, q * lanes), vt) for q in range(len(values))]
