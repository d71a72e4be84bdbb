"""3 x 3 convs of many channels by Winograd's F(4 x 4, 3 x 3), as matrix products.

Where a block of tiles' V and M no longer fit L2 (`conv_winograd.plan_for`: above about
600 channels in and out together in float32), the fused path's register tiles re-read
all of U (36 C K values, 37 MB at 512 channels) for every 12 or 18 tiles, and wait on
memory. Here a block holds `BLOCK` tiles: the input transform writes their V (threads
splitting the tiles), then V[xi] U[xi] for each of the 36 points is one matmul of
BLOCK x C by C x K, then the output transform reads M (threads splitting the tiles). A
point's U is read once a block, already in the slivers `matmul_prepacked` reads
(`winograd_weight`'s layout "f4_slivers"), so nothing is packed in a call: the products
run on all of U packed, threads sharing out (sliver, row tile) pairs. V and M live in
the scratch, 36 x BLOCK x (C + K) values.

Measured on one thread, against the direct kernels: 512 channels in and out, 4 x 14 x
14 images 14.0 ms against 30.5, 8 x 28 x 28 106-108 against 289; 384 channels (F(2 x 2,
3 x 3) by register tiles before), 2 x 28 x 28 12.6 against 19.2. Blocks of 256 tiles
were within 5% of 128, either way. With U in slivers rather than row-major, packed by
the matmul micro-kernel for each point in every call: 1 x 14 x 14 x 512 3.3 ms against
6.2, 4 x 14 x 14 x 512 12.6 against 14.5, 2 x 28 x 28 x 384 11.4 against 13.1-13.6.
"""

from __future__ import annotations

from aotk.kernels import library, matmul_prepacked
from aotk.kernels.conv_geometry import Epilogue, Geometry
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.winograd_block import Block, Shapes, input_transform
from aotk.kernels.winograd_output import output_transform, spill_elems
from aotk.kernels.winograd_tile import Transform

BLOCK = 128  # tiles a block
RUNS = 8  # the transforms' runs of tiles, threads splitting them; each its own spill


def scratch_elems(tf: Transform, channels: tuple[int, int]) -> int:
    """V and M of a block, the runs' spills (after U, when it is made in the call)."""
    cin, cout = channels
    return tf.points * BLOCK * (cin + cout) + RUNS * spill_elems(tf)


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    where: tuple[Geometry, tuple[DimV, DimV], str | None],
    given: tuple[Buf, Buf, int],
    shapes: Shapes,
    epilogue: Epilogue | None,
) -> None:
    """out = pool(epilogue(conv(x, w))) for bufs = (out, x, w), where = (the geometry,
    the grid of tiles of an image, the pool's mode or None), given = (the scratch of
    `scratch_elems`, U (there or apart), the scratch's first element after U), with
    `shapes.block` == BLOCK."""
    out, x = bufs[:2]
    g, grid, mode = where
    scratch, u, v_base = given
    tf, cin, cout = shapes.tf, shapes.cin, shapes.cout
    m_base = v_base + tf.points * BLOCK * cin
    spills = m_base + tf.points * BLOCK * cout
    point = matmul_prepacked.packed_elems(k, out.elem, cout, cin)  # of U in slivers
    product = matmul_prepacked.matmul_name(out.elem)
    tiles = k.product([out.dims[0], *grid])
    count = k.min(BLOCK, tiles)
    with k.loop(k.div(k.add(tiles, BLOCK - 1), BLOCK)) as b:
        t0 = k.min(k.mul(b, BLOCK), k.sub(tiles, count))  # the last block shifted back
        at = Block((out, x), g, grid, mode, scratch, v_base, m_base, t0)
        runs = k.min(count, RUNS)
        with k.loop(runs, parallel=True) as r:
            first, last = (k.div(k.mul(k.add(r, i), count), runs) for i in (0, 1))
            input_transform(k, at, shapes, last, first)
        with k.loop(tf.points) as xi:
            m_xi = k.view(scratch, k.add(m_base, k.mul(xi, BLOCK * cout)), (count, cout))
            v_xi = k.view(scratch, k.add(v_base, k.mul(xi, BLOCK * cin)), (count, cin))
            u_xi = k.view(u, k.mul(xi, point), (point,))
            library.call(k, product, [m_xi, v_xi, u_xi, count, cout, cin])
        with k.loop(runs, parallel=True) as r:
            first, last = (k.div(k.mul(k.add(r, i), count), runs) for i in (0, 1))
            spill = k.add(spills, k.mul(r, spill_elems(tf)))
            output_transform(k, at, shapes, (first, last), (epilogue, spill))
