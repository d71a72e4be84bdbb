"""Batched 2-D transposes as micro-kernels: dst[b, j, i] = src[b, i, j].

Any permutation that, once adjacent axes moving together are merged, swaps the last two
of at most three groups (`(1, 0)`, `(0, 2, 1)`) is one of these: the weight transposes of
every dense layer's gradient, `K.permute_dimensions` on sequences. A transpose only moves
bits, so one kernel per element size serves every dtype. 4- and 8-byte elements go by
squares of a vector's lanes, loaded as rows and transposed in registers (`_squares`): a
Keras CNN's training step transposes every conv kernel for its input gradient, and on
ResNet50 element by element that was a tenth of the step. 16 x 16 floats moved 9 x 512 x
512 in 0.23 ms, 8 x 8 in 0.48 ms, one at a time in 1.47. Other sizes, and matrices
narrower than a square, go element by element in square tiles of `TILE`, which keep the
rows read and the rows written in L1 (a naive nest over 4 KiB-strided rows misses on every
element). Threads take strips of rows (or columns). The matrices may be read last to
first: a conv's input gradient convolves with its kernel's taps reversed and channels
swapped, which is one such pass over [taps, C, O] (a reversed copy, then a transpose,
read and wrote the kernel twice).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from xdsl.dialects.builtin import IntegerType, VectorType
from xdsl.ir import SSAValue

from aotk.kernels import heuristics, library
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.kernel import Buf, DimV, Kernel

TILE = 32
ELEMENT_BYTES = (1, 2, 4, 8)
SHUFFLED_BYTES = (4, 8)  # element sizes transposed in registers


def as_batched_2d(dims: Sequence[DimV], perm: Sequence[int], k: Kernel) -> list[DimV] | None:
    """(batch, rows, cols) when transposing `dims` by `perm` is a batched 2-D transpose."""
    groups: list[list[int]] = []  # runs of source axes that stay adjacent in the output
    for axis in perm:
        if groups and groups[-1][-1] + 1 == axis:
            groups[-1].append(axis)
        else:
            groups.append([axis])
    order = [g[0] for g in groups]
    merged = {g[0]: k.product([dims[a] for a in g]) for g in groups}
    by_source = [merged[a] for a in sorted(order)]
    if len(groups) == 2 and order[0] > order[1]:
        return [1, *by_source]
    if len(groups) == 3 and order[0] < order[2] < order[1]:
        return by_source
    return None


def reversed_batch(
    dims: Sequence[DimV], perm: Sequence[int], reverse: Sequence[int]
) -> bool | None:
    """How the batched transpose of `dims` by `perm` reads x back to front along the axes
    `reverse`: False, reading nothing reversed (the axes of one element); True, reading
    its matrices last to first (every axis of the batch, the leading axes `perm` keeps,
    is reversed or of one element); None when neither holds (a matrix's axis reversed)."""
    flipped = [a for a in reverse if dims[a] != 1]
    if not flipped:
        return False
    lead = next((i for i, p in enumerate(perm) if p != i), len(perm))
    batch = [a for a in range(lead) if dims[a] != 1]
    return True if flipped == batch else None


def emit(
    k: Kernel, out: Buf, x: Buf, shape: Sequence[DimV], nbytes: int, reverse: bool = False
) -> None:
    """Call the micro-kernel for elements of `nbytes`: out = transpose of x, (b, r, c);
    with `reverse`, out[b] is the transpose of x[batch - 1 - b]."""
    library.call(k, f"transpose_{nbytes * 8}bit", [out, x, *shape, int(reverse)])


def _build(nbytes: int, k: Kernel, args: list[SSAValue]) -> None:
    """Squares of `lanes` x `lanes` transposed in registers (4- and 8-byte elements) where
    both sides have one, else tiles of TILE x TILE element by element."""
    batch, rows, cols, reverse = args[2:]
    elem = IntegerType(8 * nbytes)
    out = library.param_buf(k, args[0], (batch, cols, rows), elem)
    x = library.param_buf(k, args[1], (batch, rows, cols), elem)
    bufs, shape = (out, x), (batch, rows, cols, reverse)
    lanes = heuristics.vector_shape()[0] // nbytes  # the widest: shuffles, not bandwidth, bound
    if nbytes not in SHUFFLED_BYTES or lanes < 2:
        _tiles(k, bufs, shape)
        return
    narrow = k.either(k.compare("slt", rows, lanes), k.compare("slt", cols, lanes))
    k.if_else(narrow, lambda: _tiles(k, bufs, shape), lambda: _squares(k, bufs, shape, lanes))


def _squares(k: Kernel, bufs: tuple[Buf, Buf], shape: Sequence[DimV], lanes: int) -> None:
    """Each parallel task: a strip of `lanes` rows (or columns) of one matrix, its squares
    loaded as rows and stored as columns (`matmul_microkernel.transpose`). Of the two
    sides, the strided one is the shorter: rows loaded from a strip of columns are
    `cols` apart, columns stored from a strip of rows `rows` apart (at 1024 floats apart
    a square's stores fell in one set of L1: 8 x 8 squares of 1024 x 256 took 0.12 ms by
    strips of rows, 0.03 by strips of columns). Then the rows and columns past the last
    whole square, element by element."""
    out, x = bufs
    batch, rows, cols, _ = shape
    rows_full, cols_full = k.mul(k.div(rows, lanes), lanes), k.mul(k.div(cols, lanes), lanes)
    by_rows = k.compare("sle", rows, cols)
    strips = k.div(k.select(by_rows, rows, cols), lanes)
    along = k.select(by_rows, cols_full, rows_full)
    vt = VectorType(out.elem, [lanes])
    with k.loop(k.mul(batch, strips), parallel=True) as t:
        base, src = _bases(k, k.div(t, strips), shape)
        strip = k.mul(k.rem(t, strips), lanes)
        with k.loop(along, step=lanes, trips=1024 // lanes) as at:
            i, j = k.select(by_rows, strip, at), k.select(by_rows, at, strip)
            square = [
                mk.vload(k, x, k.add(src, k.add(k.mul(k.add(i, r), cols), j)), vt)
                for r in range(lanes)
            ]
            for c, column in enumerate(mk.transpose(k, square)):
                mk.vstore(k, out, k.add(base, k.add(k.mul(k.add(j, c), rows), i)), column)
    with k.loop(batch) as b:
        matrix = (*_bases(k, b, shape), rows, cols)
        _elements(k, bufs, matrix, (rows_full, rows), (0, cols))
        _elements(k, bufs, matrix, (0, rows_full), (cols_full, cols))


def _bases(k: Kernel, b: DimV, shape: Sequence[DimV]) -> tuple[DimV, DimV]:
    """Where matrix b of out starts, and where the matrix of x it transposes starts:
    x[b], or x[batch - 1 - b] when reversing."""
    batch, rows, cols, reverse = shape
    plane = k.mul(rows, cols)
    source = k.add(b, k.mul(reverse, k.sub(k.sub(batch, 1), k.mul(b, 2))))
    return k.mul(b, plane), k.mul(source, plane)


def _elements(
    k: Kernel,
    bufs: tuple[Buf, Buf],
    matrix: tuple[DimV, DimV, DimV, DimV],
    row_range: tuple[DimV, DimV],
    col_range: tuple[DimV, DimV],
) -> None:
    """out[base + j * rows + i] = x[src + i * cols + j] over the ranges, one at a time,
    for matrix = (base, src, rows, cols)."""
    out, x = bufs
    base, src, rows, cols = matrix
    with k.loop(col_range[1], lb=col_range[0], trips=TILE) as j:
        dst_row = k.add(base, k.mul(j, rows))
        with k.loop(row_range[1], lb=row_range[0], trips=TILE) as i:
            value = k.load_flat(x, k.add(src, k.add(k.mul(i, cols), j)))
            k.store_flat(out, k.add(dst_row, i), value)


def _tiles(k: Kernel, bufs: tuple[Buf, Buf], shape: Sequence[DimV]) -> None:
    """Tiles of TILE x TILE element by element; the loop over (batch, row tiles) is
    parallel."""
    batch, rows, cols, _ = shape
    row_tiles = k.div(k.add(rows, TILE - 1), TILE)
    with k.loop(k.mul(batch, row_tiles), parallel=True) as t:
        b, i0 = k.div(t, row_tiles), k.mul(k.rem(t, row_tiles), TILE)
        matrix = (*_bases(k, b, shape), rows, cols)
        i_end = k.min(k.add(i0, TILE), rows)
        with k.loop(cols, step=TILE, trips=1024 // TILE) as j0:
            j_end = k.min(k.add(j0, TILE), cols)
            _elements(k, bufs, matrix, (i0, i_end), (j0, j_end))


for _nbytes in ELEMENT_BYTES:
    library.register(
        library.MicroKernel(
            f"transpose_{_nbytes * 8}bit",
            "ppiiii",
            functools.partial(_build, _nbytes),
            ("dst", "src", "batch", "rows", "cols", "reverse"),
        )
    )
