"""Software prefetch of the next panel of B while the register tiles work on this one.

A packed matmul blocked over K (`matmul_packed.emit_packed`) packs a panel of B, then
runs its tiles over it. B comes from memory or L3 (a weight read once a step), and the
pack, one row of B after another, each in its own page, waited on it: in a training
step, the pack of 128 x 1024 x 1024 took two and a half times as long as packing a
panel already in cache. So the last tiles of each column block prefetch the next
panel's lines into L2, one column of lines each, a line per k step (where a step has
mr x nr FMAs to hide it); the other tiles' prefetches all name one line, a cache hit.
Issued from the first tiles instead, they saved less (W4's step 2.2% against 3.2%):
more time for the lines to leave L2 again before the pack.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.heuristics import MatmulTiles
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.prefetch import LINE_BYTES, prefetch

Range = tuple[DimV, DimV]


@dataclass(frozen=True)
class Region:
    """Part of a stored operand: `rows` rows `stride` elements apart from element
    `start`, each `lines` cache lines (of `per_line` elements) long."""

    start: DimV
    stride: DimV
    rows: DimV
    lines: DimV
    per_line: int


@dataclass(frozen=True)
class Walk:
    """What one tile prefetches: at k step s, the line at start + min(s, last) * stride
    (a stride of 0 names one line throughout)."""

    start: DimV
    stride: DimV
    last: DimV


def next_panel(
    k: Kernel, ops: mk.Operands, tiles: MatmulTiles, blocks: tuple[Range, Range], plan: Range
) -> Region:
    """Where in the stored B the panel after this one lies: the next columns of this K
    block, else the first of the next K block, else (the last panel) this one again.
    `blocks` = (K range, columns) of this panel, `plan` = (columns in whole slivers,
    columns a panel)."""
    (k0, k1), (jb, j_end) = blocks
    n_main, panel = plan
    last_columns = _at_least(k, j_end, n_main)
    last_panel = _both(k, last_columns, _at_least(k, k1, ops.kdim))
    k_next = k.select(last_columns, k1, k0)
    k_next_end = k.select(last_columns, k.min(k.add(k1, tiles.packed_kc), ops.kdim), k1)
    k_lo, k_hi = k.select(last_panel, k0, k_next), k.select(last_panel, k1, k_next_end)
    j_lo = k.select(last_panel, jb, k.select(last_columns, 0, j_end))
    j_hi = k.select(last_panel, j_end, k.min(k.add(j_lo, panel), n_main))
    per_line = LINE_BYTES // dtypes.byte_size(ops.c.elem)
    if ops.b_t:  # stored [N, K]: a row per column of the panel
        lines = k.div(k.add(k.sub(k_hi, k_lo), per_line - 1), per_line)
        start = k.add(k.mul(j_lo, ops.kdim), k_lo)
        return Region(start, ops.kdim, k.sub(j_hi, j_lo), lines, per_line)
    lines = k.div(k.add(k.sub(j_hi, j_lo), per_line - 1), per_line)
    return Region(k.add(k.mul(k_lo, ops.n), j_lo), ops.n, k.sub(k_hi, k_lo), lines, per_line)


def tile_walk(k: Kernel, region: Region, tile: DimV, tiles_in_block: DimV) -> Walk:
    """The walk of the block's tile number `tile` (in the order they run): the last
    `region.lines` tiles take a column of lines each, the others one line."""
    column = k.sub(tile, k.sub(tiles_in_block, region.lines))
    late = _at_least(k, column, 0)
    start = k.add(region.start, k.mul(k.max(column, 0), region.per_line))
    return Walk(start, k.select(late, region.stride, 0), k.max(k.sub(region.rows, 1), 0))


def run_walk(k: Kernel, run: tuple[DimV, DimV], tile: DimV, steps: DimV, per_line: int) -> Walk:
    """Tile number `tile`'s walk over a run of contiguous lines, run = (first element,
    lines): `steps` lines a tile, so the first tiles cover the run; a tile past it names
    the run's last line."""
    start, lines = run
    first = k.mul(tile, steps)
    inside = _at_least(k, k.sub(lines, 1), first)
    at = k.add(start, k.mul(k.min(first, k.sub(lines, 1)), per_line))
    last = k.max(k.sub(k.min(steps, k.sub(lines, first)), 1), 0)
    return Walk(at, k.select(inside, per_line, 0), last)


def step(k: Kernel, buf: Buf, walk: Walk, steps_done: DimV) -> None:
    """The prefetch of k step `steps_done` of a tile's walk. The clamp is on the offset
    (the stride is not negative), so steps_done * stride grows by an add a step."""
    offset = k.min(k.mul(steps_done, walk.stride), k.mul(walk.last, walk.stride))
    prefetch(k, buf, k.add(walk.start, offset))


def _at_least(k: Kernel, a: DimV, b: DimV) -> SSAValue | bool:
    if isinstance(a, int) and isinstance(b, int):
        return a >= b
    return k.b.insert(arith.CmpiOp(k.index(a), k.index(b), "sge")).result


def _both(k: Kernel, x: SSAValue | bool, y: SSAValue | bool) -> SSAValue | bool:
    if isinstance(x, bool) or isinstance(y, bool):
        flag, other = (x, y) if isinstance(x, bool) else (y, x)
        return other if flag else False
    return k.b.insert(arith.AndIOp(x, y)).result
