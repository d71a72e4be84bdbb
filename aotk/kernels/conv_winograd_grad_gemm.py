"""The kernel gradient of a 3 x 3 stride-1 conv of many channels by F(4 x 4, 3 x 3), as
matmuls.

Where the register-tile path's sums of a run would overflow its budget
(`conv_winograd_grad.scratch_elems`), one set of sums S (36 x C x K) lives in the scratch.
Per block of `BLOCK` tiles, the input transform writes V and the output gradient's
transform Q (threads splitting the tiles); then for each point S[xi] += V[xi]^T Q[xi],
a matmul of C x BLOCK by BLOCK x K (`matmul_kernel`, A transposed, adding to S, its
rows split across threads); then every channel pair takes dg = G^T S G.
"""

from __future__ import annotations

from xdsl.ir import Attribute

from aotk.kernels import matmul_kernel
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Geometry
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const
from aotk.kernels.winograd_block import (
    Block,
    Shapes,
    gradient_transform,
    input_transform,
    kernel_from_sums,
)
from aotk.kernels.winograd_tile import F4

BLOCK = 128  # tiles a block
RUNS = 8  # the transforms' runs of tiles, threads splitting them


def scratch_elems(k: Kernel, elem: Attribute, channels: tuple[int, int]) -> DimV:
    """S, a block's V and Q, the matmuls' factor (1) and their own scratch."""
    cin, cout = channels
    products = matmul_kernel.scratch_elems(k, elem, (cin, cout, BLOCK), a_t=True)
    return k.add(F4.points * (cin * cout + BLOCK * (cin + cout)) + 1, products)


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    where: tuple[Geometry, tuple[DimV, DimV], Buf],
    shapes: Shapes,
) -> None:
    """dw = the kernel gradient of conv(x, w) for bufs = (dw, dy, x), dy the output's
    gradient; where = (the geometry, the grid of tiles of an image, the scratch of
    `scratch_elems`); `shapes.block` == BLOCK."""
    dw, dy, x = bufs
    g, grid, scratch = where
    cin, cout, points = shapes.cin, shapes.cout, F4.points
    v_base = points * cin * cout  # after S
    q_base = v_base + points * BLOCK * cin
    one_at = q_base + points * BLOCK * cout
    room_size = matmul_kernel.scratch_elems(k, dw.elem, (cin, cout, BLOCK), a_t=True)
    room, one = k.view(scratch, one_at + 1, (room_size,)), k.view(scratch, one_at, (1,))
    k.store_flat(one, 0, const(k.b, 1.0, dw.elem))
    zero = mk.splat(k, const(k.b, 0.0, dw.elem), shapes.vt)
    mk.fill(k, scratch, (0, v_base), zero, parallel=True)  # S = 0; K is whole vectors
    tiles = k.product([dy.dims[0], *grid])
    with k.loop(k.div(k.add(tiles, BLOCK - 1), BLOCK)) as b:
        t0 = k.mul(b, BLOCK)  # no block shifted back: every tile adds once
        count = k.min(BLOCK, k.sub(tiles, t0))
        at = Block((dy, x), g, grid, None, scratch, v_base, q_base, t0)
        runs = k.min(count, RUNS)
        with k.loop(runs, parallel=True) as r:
            first, last = (k.div(k.mul(k.add(r, i), count), runs) for i in (0, 1))
            input_transform(k, at, shapes, last, first)
            gradient_transform(k, at, shapes, (first, last))
        with k.loop(points) as xi:
            s_xi = k.view(scratch, k.mul(xi, cin * cout), (cin, cout))
            v_xi = k.view(scratch, k.add(v_base, k.mul(xi, BLOCK * cin)), (count, cin))
            q_xi = k.view(scratch, k.add(q_base, k.mul(xi, BLOCK * cout)), (count, cout))
            matmul_kernel.emit(
                k, s_xi, v_xi, q_xi, m=cin, n=cout, kdim=count, scratch=room, a_t=True, alpha=one
            )
    kernel_from_sums(k, (dw, scratch), shapes, (0, 0, 1))
