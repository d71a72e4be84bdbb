"""Register-tiled matmul on a packed copy of B, for kernels given scratch memory.

Each `kc` x `nc` block of B is copied into scratch as slivers of `nr` vectors' width,
each sliver `kc` rows of contiguous memory. A tile of `mr` x `nr` vectors of C then lives
in registers (scf.for iter_args) over the K block: per step, `nr` loads of the sliver,
`mr` broadcasts of A and `mr * nr` FMAs, and C is loaded and stored once per block.
Packing is what makes this fast for any N: unpacked, rows of a sliver of a B whose rows
are a multiple of 4 KiB long all land in one cache set and one page each. Threads split
the packing by rows of B, then the tiles by rows of C.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.heuristics import MatmulTiles
from aotk.kernels.kernel import Buf, DimV, Kernel

Range = tuple[DimV, DimV]


def scratch_elems(tiles: MatmulTiles) -> int:
    """Elements of scratch the packed path needs: one block of B."""
    return tiles.packed_kc * tiles.packed_nc


def pack_b(
    k: Kernel, ops: mk.Operands, tiles: MatmulTiles, scratch: Buf, k_range: Range, j_range: Range
) -> None:
    """scratch[sliver s][kk - k0][:] = B[kk, j0 + s * width : ...], read row by row."""
    width = tiles.nr * tiles.lanes
    k0, k1 = k_range
    jb, j_end = j_range
    with k.loop(k1, lb=k0, parallel=True) as kk:
        src = k.mul(kk, ops.n)
        dst = k.mul(k.sub(kk, k0), width)
        with k.loop(j_end, lb=jb, step=width, trips=tiles.packed_nc // width) as j0:
            sliver = k.add(k.mul(k.sub(j0, jb), tiles.packed_kc), dst)
            for v in range(tiles.nr):
                off = v * tiles.lanes
                value = mk.vload(k, ops.b, k.add(src, k.add(j0, off)), ops.vt)
                mk.vstore(k, scratch, k.add(sliver, off), value)


def packed_tile(
    k: Kernel,
    ops: mk.Operands,
    tiles: MatmulTiles,
    scratch: Buf,
    i0: DimV,
    j: tuple[DimV, DimV],
    k_range: Range,
) -> None:
    """C[i0:i0+mr, j0:j0+width] += A[rows, k-range] @ packed sliver starting at j0 - jb.

    A K block of full length gets a copy of the K loop with that constant trip count
    (the common case; LLVM schedules it better), the last, shorter one the general loop.
    """
    lanes, vt, rows, nvec = tiles.lanes, ops.vt, tiles.mr, tiles.nr
    j0, jb = j
    k0, k1 = k_range
    c_offs = [
        k.add(k.mul(k.add(i0, r), ops.n), k.add(j0, v * lanes))
        for r in range(rows)
        for v in range(nvec)
    ]
    a_rows = [k.mul(k.add(i0, r), ops.kdim) for r in range(rows)]
    sliver = k.sub(k.mul(k.sub(j0, jb), tiles.packed_kc), k.mul(k0, nvec * lanes))

    def step(kk: SSAValue, accs: Sequence[SSAValue]) -> list[SSAValue]:
        b_row = k.add(sliver, k.mul(kk, nvec * lanes))
        bs = [mk.vload(k, scratch, k.add(b_row, v * lanes), vt) for v in range(nvec)]
        out = list(accs)
        for r in range(rows):
            av = mk.splat(k, k.load_flat(ops.a, k.add(a_rows[r], kk)), vt)
            for v in range(nvec):
                out[r * nvec + v] = mk.vfma(k, av, bs[v], accs[r * nvec + v])
        return out

    def tile(k_end: DimV) -> None:
        inits = [mk.vload(k, ops.c, off, vt) for off in c_offs]
        results = k.fold_loop(k_end, inits, step, lb=k0, trips=tiles.packed_kc)
        for off, value in zip(c_offs, results, strict=True):
            mk.vstore(k, ops.c, off, value)

    if isinstance(k0, int) and isinstance(k1, int):
        tile(k1)
        return
    full = k.b.insert(arith.CmpiOp(k.index(k.sub(k1, k0)), k.index(tiles.packed_kc), "eq")).result
    k.if_else(full, lambda: tile(k.add(k0, tiles.packed_kc)), lambda: tile(k1))


def emit_packed(
    k: Kernel,
    ops: mk.Operands,
    tiles: MatmulTiles,
    scratch: Buf,
    rows: Range,
    cols: Range,
    blocks: tuple[Range, Range],
) -> None:
    """C[rows, cols] += A[rows, k-block] @ B[k-block, cols] for one (k, n) block.

    `rows` must be a multiple of mr long, `cols` of nr vectors; the caller zeroes C.
    """
    width = tiles.nr * tiles.lanes
    k_range, (jb, _) = blocks
    pack_b(k, ops, tiles, scratch, k_range, cols)
    # threads take tiles of rows; the packed block of B is read by all of them
    with k.loop(rows[1], lb=rows[0], step=tiles.mr, parallel=True) as i0:
        with k.loop(cols[1], lb=cols[0], step=width, trips=tiles.packed_nc // width) as j0:
            packed_tile(k, ops, tiles, scratch, i0, (j0, jb), k_range)
