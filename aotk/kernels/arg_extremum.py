"""argmax and argmin of float32 and float64 tensors along one axis, split across threads.

NumPy's rule: the index of the first extremum, where a NaN counts as the extremum (the
first NaN, then). Seen as (outer, n, inner) around the axis:

- Along the last axis (inner == 1), a row is read twice while it stays in L1: its
  extremum without NaNs, in vectors (`row_reductions.row_extremum`); then the first
  index holding it and the first NaN, one loop LLVM vectorizes. A NaN found wins.
  (A NaN-propagating extremum in the first pass, leaving one index to find, took a
  third longer: x86 has no instruction for it.)
- Along another axis, each (outer, vector of inner) item walks the axis once, carrying
  the best value and its index for every lane in registers: every element is read
  once, a row of vectors at a time, where a lane-by-lane walk strides by the row.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType, i64
from xdsl.ir import SSAValue

from aotk import dtypes
from aotk.kernels import heuristics
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.matmul_microkernel import lane_mask, splat, vload_lanes, vstore_lanes
from aotk.kernels.row_reductions import row_extremum
from aotk.kernels.scalar import insert, select

# vectors of the inner axis one walk down the reduced axis carries: two are a cache line
# of float32, and two chains of compares in flight
WALK_VECTORS = 2
TYPICAL_AXIS = 256  # the length assumed of a dynamic reduced axis, in cost estimates


def handles(elem: object) -> bool:
    """Whether these kernels take tensors of `elem` (the others take a scalar loop)."""
    return isinstance(elem, Float32Type | Float64Type)


def emit_rows(k: Kernel, out: Buf, x: Buf, rows: tuple[DimV, DimV], kind: str) -> None:
    """out[o] = arg`kind` of x[o, :] for `rows` = (outer, n) contiguous rows of n >= 1."""
    outer, n = rows
    none = k.index(n)
    with k.loop(outer, parallel=True) as o:
        start = k.mul(o, n)
        best = row_extremum(k, x, (start, n), kind)

        def find(i: SSAValue, firsts: Sequence[SSAValue]) -> list[SSAValue]:
            v = k.load_flat(x, k.add(start, i))
            equal = _cmp(k, v, best, "oeq")
            is_nan = _cmp(k, v, v, "uno")
            return [_first(k, firsts[0], equal, i, none), _first(k, firsts[1], is_nan, i, none)]

        first_best, first_nan = k.fold_loop(n, [none, none], find)
        some_nan = insert(k.b, arith.CmpiOp(first_nan, none, "ult"))
        index = insert(k.b, arith.SelectOp(some_nan, first_nan, first_best))
        k.store_flat(out, o, insert(k.b, arith.IndexCastOp(index, i64)))


def emit_strided(k: Kernel, out: Buf, x: Buf, dims: tuple[DimV, DimV, DimV], kind: str) -> None:
    """out[o, j] = arg`kind` of x[o, :, j] for `dims` = (outer, n >= 1, inner)."""
    outer, n, inner = dims
    vt = VectorType(x.elem, [heuristics.narrow_vector_bytes() // dtypes.byte_size(x.elem)])
    width = WALK_VECTORS * vt.get_shape()[0]
    blocks = k.div(k.add(inner, width - 1), width)
    with k.loop(k.mul(outer, blocks), parallel=True) as item:
        o = k.div(item, blocks)
        j = k.mul(k.sub(item, k.mul(o, blocks)), width)
        base, count = k.add(k.mul(o, k.mul(n, inner)), j), k.sub(inner, j)
        at = k.add(k.mul(o, inner), j)

        def walk(masks: Sequence[SSAValue | None]) -> None:
            lanes = vt.get_shape()[0]
            indices = _walk(k, x, (base, n, inner), (vt, masks), kind)
            for v, (index, mask) in enumerate(zip(indices, masks, strict=True)):
                vstore_lanes(k, out, k.add(at, v * lanes), index, mask)

        if isinstance(inner, int) and inner % width == 0:
            walk([None] * WALK_VECTORS)
            return
        whole = insert(k.b, arith.CmpiOp(k.index(count), k.index(width), "sge"))
        k.if_else(
            whole, lambda: walk([None] * WALK_VECTORS), lambda: walk(_edge_masks(k, count, vt))
        )


def _edge_masks(k: Kernel, count: DimV, vt: VectorType) -> list[SSAValue]:
    """The lanes of each of WALK_VECTORS vectors that the first `count` elements cover."""
    lanes = vt.get_shape()[0]
    return [
        lane_mask(k, k.min(k.max(k.sub(count, v * lanes), 0), lanes), vt)
        for v in range(WALK_VECTORS)
    ]


def _walk(
    k: Kernel,
    x: Buf,
    axis: tuple[DimV, DimV, DimV],
    lanes: tuple[VectorType, Sequence[SSAValue | None]],
    kind: str,
) -> list[SSAValue]:
    """The index (an i64 vector) of each lane's first extremum down `axis` = (base, n,
    stride) of x, for vectors side by side from base (a lane mask each, or None)."""
    base, n, stride = axis
    vt, masks = lanes
    width = vt.get_shape()[0]
    index_type = VectorType(i64, vt.get_shape())

    def load(row: DimV, v: int) -> SSAValue:
        return vload_lanes(k, x, k.add(k.add(base, k.mul(row, stride)), v * width), vt, masks[v])

    def step(i: SSAValue, carried: Sequence[SSAValue]) -> list[SSAValue]:
        here = splat(k, insert(k.b, arith.IndexCastOp(i, i64)), index_type)
        bests, indices = carried[: len(masks)], carried[len(masks) :]
        pairs = [
            _better(k, load(i, v), held, here, kind)
            for v, held in enumerate(zip(bests, indices, strict=True))
        ]
        return [p[0] for p in pairs] + [p[1] for p in pairs]

    firsts = [load(0, v) for v in range(len(masks))]
    zero = splat(k, insert(k.b, arith.ConstantOp.from_int_and_width(0, i64)), index_type)
    inits = [*firsts, *[zero] * len(masks)]
    return list(k.fold_loop(n, inits, step, lb=1, trips=TYPICAL_AXIS)[len(masks) :])


def _better(
    k: Kernel, v: SSAValue, held: tuple[SSAValue, SSAValue], here: SSAValue, kind: str
) -> tuple[SSAValue, SSAValue]:
    """(best, index) per lane after `v` at index `here`: a NaN best stays; otherwise a
    NaN or a strictly better value takes its place."""
    best, index = held
    beats = _cmp(k, v, best, "ugt" if kind == "max" else "ult")
    settled = _cmp(k, best, best, "uno")
    taken = (select(k.b, beats, v, best), select(k.b, beats, here, index))
    return select(k.b, settled, best, taken[0]), select(k.b, settled, index, taken[1])


def _cmp(k: Kernel, a: SSAValue, b: SSAValue, predicate: str) -> SSAValue:
    return insert(k.b, arith.CmpfOp(a, b, predicate))


def _first(k: Kernel, first: SSAValue, hit: SSAValue, i: SSAValue, none: SSAValue) -> SSAValue:
    """The smaller of `first` and i where `hit` (an index loop LLVM vectorizes)."""
    return insert(k.b, arith.MinUIOp(first, select(k.b, hit, i, none)))
