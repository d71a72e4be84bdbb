"""The blocks of tiles of the Winograd convs (`conv_winograd`) and their kernel gradients
(`conv_winograd_grad`): shapes, where a block's V and M live in the scratch, the input
transform V = B^T d B, and the masked positions of a tile's patch or outputs.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import VectorType
from xdsl.ir import SSAValue

from aotk.kernels import conv_tile
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Geometry, Values
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const
from aotk.kernels.winograd_tile import Slots, Transform, sandwich, sandwich_into


def block_tiles() -> int:
    """Tiles transformed and multiplied together: three register tiles of rows."""
    return 3 * conv_tile.tile_shape(4, 1)[1]


@dataclass(frozen=True)
class Shapes:
    """The vector type, the register tile (rows x nvec vectors), the channels and the
    transform."""

    vt: VectorType
    rows: int
    nvec: int
    cin: int
    cout: int
    tf: Transform
    block: int  # tiles a block's V and M have room for: their stride between points

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

    def tile(self, k: Kernel, t: DimV) -> tuple[DimV, DimV, DimV]:
        """(image, tile row, tile column) of the block's tile t."""
        flat = k.add(self.t0, t)
        rest = k.div(flat, self.grid[1])
        return k.div(rest, self.grid[0]), k.rem(rest, self.grid[0]), k.rem(flat, self.grid[1])


def shifted(k: Kernel, j: DimV, width: int, count: int) -> DimV:
    """Start of the j-th block of `width` of `count` channels, the last ending at count."""
    return k.min(k.mul(j, width), count - width)


def v_at(k: Kernel, at: Block, shapes: Shapes, point: DimV, tile: DimV) -> DimV:
    """Offset of V[point, tile, 0] in the scratch."""
    return k.add(at.v_base, k.mul(k.add(k.mul(point, shapes.block), tile), shapes.cin))


def m_at(k: Kernel, at: Block, shapes: Shapes, point: DimV, tile: DimV) -> DimV:
    """Offset of M[point, tile, 0] in the scratch."""
    return k.add(at.m_base, k.mul(k.add(k.mul(point, shapes.block), tile), shapes.cout))


def input_transform(
    k: Kernel, at: Block, shapes: Shapes, count: DimV, first: DimV = 0, parallel: bool = False
) -> None:
    """V[xi, t] = (B^T d B)[xi] for the patch d under each tile t of the block, t from
    `first` to `count` (split across threads with `parallel`)."""
    x, tf = at.bufs[1], shapes.tf
    with k.loop(count, lb=first, parallel=parallel) as t:
        n, ty, tx = at.tile(k, t)
        top = k.sub(k.mul(ty, tf.m), at.g.pad_before[0])
        left = k.sub(k.mul(tx, tf.m), at.g.pad_before[1])
        rows = patch(k, x, (n, top, left), tf.tile, shapes.vt)
        with k.loop(shapes.vectors(shapes.cin)) as j:
            c = shifted(k, j, shapes.lanes, shapes.cin)
            v = Slots(at.scratch, k.add(v_at(k, at, shapes, 0, t), c), shapes.block * shapes.cin)
            sandwich_into(k, tf.bt, lambda r: rows.row(k, r, c, shapes.vt), (v, shapes.vt))


@dataclass(frozen=True)
class Patch:
    """Rows of image `image` (its offset) of `buf` from row `top`, at the positions
    `columns` gives: each column's offset (clamped into the image) and lanes."""

    buf: Buf
    image: DimV
    top: DimV
    row_stride: DimV
    columns: list[tuple[DimV, DimV]]

    def places(self, k: Kernel, r: DimV, vt: VectorType, c: DimV = 0) -> list[Place]:
        """Row r's positions: the offset of channel c at each (clamped into the image)
        and the lanes to load or store there, all inside the image, none outside it
        (padding, or an output past the edge)."""
        scales = (self.row_stride, vt.get_shape()[0])
        row, row_lanes = _clamped(k, k.add(self.top, r), self.buf.dims[1], scales)
        start = k.add(k.add(self.image, row), c)
        return [
            (k.add(start, column), mk.lane_mask(k, k.min(row_lanes, column_lanes), vt))
            for column, column_lanes in self.columns
        ]

    def row(self, k: Kernel, r: DimV, c: DimV, vt: VectorType) -> list[SSAValue]:
        """Row r's vectors of channels from c, 0 in lanes outside the image."""
        zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
        return [
            mk.vload_masked(k, self.buf, offset, mask, zero)
            for offset, mask in self.places(k, r, vt, c)
        ]


Place = tuple[DimV, SSAValue]  # an offset, and the mask of the lanes there


def patch(k: Kernel, buf: Buf, corner: tuple[DimV, DimV, DimV], size: int, vt: VectorType) -> Patch:
    """The patch of `size` columns from buf[n, top, left], corner = (n, top, left)."""
    n, top, left = corner
    strides, lanes = k.strides(buf.dims), vt.get_shape()[0]
    columns = [_clamped(k, k.add(left, c), buf.dims[2], (strides[2], lanes)) for c in range(size)]
    return Patch(buf, k.mul(n, strides[0]), top, strides[1], columns)


def positions(
    k: Kernel, buf: Buf, corner: tuple[DimV, DimV, DimV], size: int, vt: VectorType
) -> list[list[Place]]:
    """The size x size positions from buf[n, top, left] (`Patch.places`), row by row."""
    square = patch(k, buf, corner, size, vt)
    return [square.places(k, r, vt) for r in range(size)]


def _clamped(k: Kernel, v: DimV, size: DimV, scales: tuple[DimV, int]) -> tuple[DimV, DimV]:
    """v clamped into [0, size) times `stride`, and `lanes` if v was inside, else 0, for
    scales = (stride, lanes)."""
    stride, lanes = scales
    inside = k.both(k.compare("sge", v, 0), k.compare("slt", v, size))
    return k.mul(k.max(k.min(v, k.sub(size, 1)), 0), stride), k.select(inside, lanes, 0)


def gradient_transform(
    k: Kernel, at: Block, shapes: Shapes, tiles: tuple[DimV, DimV], parallel: bool = False
) -> None:
    """Q[xi, t] = (A e A^T)[xi] for the output gradient's m x m tile e under each tile t
    of [first, last) (`tiles`; 0 past the output's edge), where the forward keeps M: the
    kernel gradient's (`conv_winograd_grad`). Whole vectors of output channels. Split
    across threads with `parallel`."""
    dy, vt, tf = at.bufs[0], shapes.vt, shapes.tf
    with k.loop(tiles[1], lb=tiles[0], parallel=parallel) as t:
        n, ty, tx = at.tile(k, t)
        tile = patch(k, dy, (n, k.mul(ty, tf.m), k.mul(tx, tf.m)), tf.m, vt)
        with k.loop(shapes.cout // shapes.lanes) as j:
            o = k.mul(j, shapes.lanes)
            q = Slots(at.scratch, k.add(m_at(k, at, shapes, 0, t), o), shapes.block * shapes.cout)
            sandwich_into(k, tf.a, lambda r, o=o, tile=tile: tile.row(k, r, o, vt), (q, vt))


def kernel_from_sums(
    k: Kernel, where: tuple[Buf, Buf], shapes: Shapes, runs: tuple[DimV, DimV, DimV]
) -> None:
    """dw[:, :, c, o] = G^T S G, S the sums (points x C x K) of the runs, where = (dw,
    the scratch), runs = (the first's offset, the stride between them, how many)."""
    dw, scratch = where
    vt, lanes, cin, cout, tf = shapes.vt, shapes.lanes, shapes.cin, shapes.cout, shapes.tf
    first_sums, stride, slots = runs
    with k.loop(cin, parallel=True) as c:
        with k.loop(cout // lanes) as j:
            o = k.mul(j, lanes)
            at = k.add(k.mul(c, cout), o)

            def add_run(s: SSAValue, totals: Values) -> list[SSAValue]:
                run = k.add(k.add(first_sums, k.mul(s, stride)), at)
                return [
                    k.b.insert(
                        arith.AddfOp(total, mk.vload(k, scratch, k.add(run, xi * cin * cout), vt))
                    ).result
                    for xi, total in enumerate(totals)
                ]

            zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
            totals = k.fold_loop(slots, [zero] * tf.points, add_run)
            grid = [totals[r * tf.tile : (r + 1) * tf.tile] for r in range(tf.tile)]
            for tap, value in enumerate(sandwich(k, tf.gt, grid)):
                mk.vstore(k, dw, k.add(k.mul(k.add(tap * cin, c), cout), o), value)
