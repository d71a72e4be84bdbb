"""The output transform of the Winograd convs (`conv_winograd`, `conv_winograd_gemm`):
each tile's A^T M A, the conv's epilogue, its 2 x 2 pools, and the masked stores of a
tile that overhangs the output.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Epilogue
from aotk.kernels.kernel import DimV, Kernel
from aotk.kernels.winograd_block import Block, Shapes, m_at, positions, shifted
from aotk.kernels.winograd_tile import Transform, pool, sandwich

LANES = 16  # the most lanes of a vector (64 bytes of float32)


def spill_elems(tf: Transform) -> int:
    """Room for a tile's output vectors, for an epilogue applied element by element."""
    return tf.m * tf.m * LANES


def outputs_per_side(shapes: Shapes, mode: str | None) -> int:
    """Outputs a tile writes along each side: m, or m / 2 pooled over 2 x 2 windows."""
    return shapes.tf.m // 2 if mode else shapes.tf.m


def output_transform(
    k: Kernel,
    at: Block,
    shapes: Shapes,
    tiles: tuple[DimV, DimV],
    finish: tuple[Epilogue | None, DimV],
) -> None:
    """Each tile's A^T M A, its epilogue, then its pools or its outputs, for the block's
    tiles [first, last) (`tiles`); finish = (the epilogue or None, where in the scratch
    to spill a tile's outputs: `spill_elems`)."""
    out, vt, tf = at.bufs[0], shapes.vt, shapes.tf
    epilogue, spill = finish
    side = outputs_per_side(shapes, at.mode)
    with k.loop(tiles[1], lb=tiles[0]) as t:
        n, ty, tx = at.tile(k, t)
        corner = (n, k.mul(ty, side), k.mul(tx, side))
        dsts = [p for line in positions(k, out, corner, side, vt) for p in line]
        with k.loop(shapes.vectors(shapes.cout)) as c:
            o = shifted(k, c, shapes.lanes, shapes.cout)
            m_row = k.add(m_at(k, at, shapes, 0, t), o)
            point = shapes.block * shapes.cout
            m = [mk.vload(k, at.scratch, k.add(m_row, xi * point), vt) for xi in range(tf.points)]
            ys = sandwich(k, tf.at, [m[r * tf.tile : (r + 1) * tf.tile] for r in range(tf.tile)])
            if epilogue is not None:
                ys = _finished(k, at, shapes, (ys, o, spill), epilogue)
            if at.mode:
                ys = [pool(k, window, at.mode) for window in _windows(ys, tf.m)]
            for (offset, mask), y in zip(dsts, ys, strict=True):
                mk.vstore_lanes(k, out, k.add(offset, o), y, mask)


def _finished(
    k: Kernel,
    at: Block,
    shapes: Shapes,
    ys: tuple[list[SSAValue], DimV, DimV],
    epilogue: Epilogue,
) -> list[SSAValue]:
    """The epilogue on a tile's outputs, ys = (vectors of channels from o, o, the spill's
    offset): on the vectors when its body allows, else element by element through the
    spill."""
    values, o, spill = ys
    vt, lanes = shapes.vt, shapes.lanes
    if epilogue.vector is not None:
        extras = epilogue.vector_extras(k, vt, o)
        return [epilogue.vector(k, [y, *extras]) for y in values]
    for q, y in enumerate(values):
        mk.vstore(k, at.scratch, k.add(spill, q * lanes), y)
    with k.loop(len(values) * lanes) as e:
        epilogue.apply(k, at.scratch, k.add(spill, e), k.add(o, k.rem(e, lanes)))
    return [mk.vload(k, at.scratch, k.add(spill, q * lanes), vt) for q in range(len(values))]


def _windows(ys: Sequence[SSAValue], m: int) -> list[list[SSAValue]]:
    """The 2 x 2 windows of an m x m tile of outputs (row-major), row-major."""
    return [
        [ys[(r + dr) * m + c + dc] for dr in (0, 1) for dc in (0, 1)]
        for r in range(0, m, 2)
        for c in range(0, m, 2)
    ]
