"""The products of Winograd's conv (`conv_winograd`) in register tiles, for convs whose
block of tiles keeps V and M in L2.

Threads split the blocks of tiles in `SLOTS` runs, each with its own scratch. Per block,
the input transform writes V (points x tiles x C), the products M[xi] = V[xi] U[xi] run
in register tiles of `rows` tiles by `nvec` vectors of output channels (the last shifted
back), and the output transform writes the output from M (`winograd_block`,
`winograd_output`).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Epilogue, Geometry, Values
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const
from aotk.kernels.winograd_block import Block, Shapes, input_transform, m_at, shifted, v_at
from aotk.kernels.winograd_output import output_transform, spill_elems
from aotk.kernels.winograd_tile import Transform

SLOTS = 8  # runs of blocks, each with its own scratch (~250 KiB for W5's second conv)


def scratch_elems(tf: Transform, block: int, channels: tuple[int, int]) -> int:
    """The slots' scratch, for blocks of `block` tiles and channels = (C, K)."""
    return SLOTS * _slot_elems(tf, block, channels)


def _slot_elems(tf: Transform, block: int, channels: tuple[int, int]) -> int:
    """A slot's V and M for a block of `block` tiles, then room for a tile's output
    vectors (`spill_elems`)."""
    return tf.points * block * sum(channels) + spill_elems(tf)


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    where: tuple[Geometry, tuple[DimV, DimV], str | None],
    given: tuple[Buf, Buf, int],
    shapes: Shapes,
    epilogue: Epilogue | None,
) -> None:
    """The conv (as `conv_winograd_gemm.emit` takes it) in blocks of tiles whose V and
    M fit L2, threads splitting the blocks in SLOTS runs."""
    out, x = bufs[:2]
    g, grid, mode = where
    scratch, u, free = given
    tf, cin, cout = shapes.tf, shapes.cin, shapes.cout
    tiles = k.product([out.dims[0], *grid])
    block = _block_size(k, tiles, shapes)
    blocks = k.div(k.add(tiles, k.sub(block, 1)), block)
    count = k.min(block, tiles)
    slots = k.min(blocks, SLOTS)
    per_slot = _slot_elems(tf, shapes.block, (cin, cout))
    with k.loop(slots, parallel=True) as s:
        v_base = k.add(free, k.mul(s, per_slot))
        m_base = k.add(v_base, tf.points * shapes.block * cin)
        first, last = (k.div(k.mul(k.add(s, i), blocks), slots) for i in (0, 1))
        with k.loop(last, lb=first) as b:
            t0 = k.min(k.mul(b, block), k.sub(tiles, count))
            at = Block((out, x), g, grid, mode, scratch, v_base, m_base, t0)
            input_transform(k, at, shapes, count)
            _products(k, (at, u), shapes, count)
            spill = k.add(m_base, tf.points * shapes.block * cout)
            output_transform(k, at, shapes, (0, count), (epilogue, spill))


def _block_size(k: Kernel, tiles: DimV, shapes: Shapes) -> DimV:
    """Tiles per block: `block_tiles`, or fewer (a multiple of the register tile's rows)
    when that leaves fewer blocks than runs: a conv of 49 tiles in 3 blocks kept the
    second thread idle a third of the time."""
    rows = shapes.rows
    per_run = k.div(k.add(tiles, SLOTS * rows - 1), SLOTS * rows)
    return k.mul(k.max(k.min(per_run, shapes.block // rows), 1), rows)


def _products(k: Kernel, where: tuple[Block, Buf], shapes: Shapes, count: DimV) -> None:
    """M[xi] = V[xi] U[xi] for the block's `count` tiles (at least `rows`: `choose`), in
    register tiles of `rows` tiles by nvec vectors of output channels, the last shifted
    back; where = (the block, U's buffer, U from its start)."""
    at, u = where
    rows, nvec, cout = shapes.rows, shapes.nvec, shapes.cout
    width = nvec * shapes.lanes
    with k.loop(shapes.tf.points) as xi:
        with k.loop(-(-cout // width)) as j:
            o = shifted(k, j, width, cout)
            with k.loop(k.div(k.add(count, rows - 1), rows)) as rb:
                r0 = k.min(k.mul(rb, rows), k.sub(count, rows))
                accs = _product_tile(k, (at, u), shapes, (xi, r0, o))
                m_row = k.add(m_at(k, at, shapes, xi, r0), o)
                for r in range(rows):
                    for v in range(nvec):
                        offset = k.add(m_row, r * cout + v * shapes.lanes)
                        mk.vstore(k, at.scratch, offset, accs[r * nvec + v])


def _product_tile(
    k: Kernel, bufs: tuple[Block, Buf], shapes: Shapes, where: tuple[SSAValue, DimV, DimV]
) -> Sequence[SSAValue]:
    """The accumulators of M[xi, r0:r0 + rows, o:o + nvec vectors], summed over C."""
    at, u = bufs
    xi, r0, o = where
    vt, rows, nvec, cin, cout = shapes.vt, shapes.rows, shapes.nvec, shapes.cin, shapes.cout
    v_row = v_at(k, at, shapes, xi, r0)
    u_row = k.add(k.mul(k.mul(xi, cin), cout), o)

    def step(c: SSAValue, accs: Values) -> list[SSAValue]:
        u_at = k.add(u_row, k.mul(c, cout))
        us = [mk.vload(k, u, k.add(u_at, v * shapes.lanes), vt) for v in range(nvec)]
        new = list(accs)
        for r in range(rows):
            scalar = k.load_flat(at.scratch, k.add(v_row, k.add(c, r * cin)))
            broadcast = mk.splat(k, scalar, vt)
            for v in range(nvec):
                new[r * nvec + v] = mk.vfma(k, broadcast, us[v], accs[r * nvec + v])
        return new

    zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
    return k.fold_loop(cin, [zero] * (rows * nvec), step)
