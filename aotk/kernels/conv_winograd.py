"""A 3 x 3 convolution pooled over 2 x 2 windows by Winograd's F(2 x 2, 3 x 3).

The 2 x 2 conv outputs under one pooling window are A^T [(G g G^T) * (B^T d B)] A, where
d is the 4 x 4 input patch beneath them and g the 3 x 3 kernel of one (input, output)
channel pair: 16 multiplications instead of 36. Summed over input channels, the 16
elementwise products become 16 matrix products, tiles x C times C x K, so the conv's
multiply-adds drop 2.25 times, for the price of the transforms (a few adds per element).
A window is exactly one Winograd tile, so the pool is part of the output transform.

- U = G g G^T of every channel pair, once per call, before the threads start (16 x C x K
  values, which `applies` keeps within half of L2: every tile reads all of them).
- Threads split (image, pooled row) items in `SLOTS` runs, each with its own scratch.
  An item's tiles go in blocks of `block_tiles` (the last shifted back to end at the row's
  end): the input transform writes V = B^T d B (16 x tiles x C) for the block; 16 products
  V[xi] U[xi] in register tiles (`rows` tiles x `nvec` vectors of output channels) write
  M (16 x tiles x K); the output transform A^T M A, the epilogue and the pool store one
  output row of the block. Channel vectors past the end are shifted back too: a few
  values are computed twice, never read past a buffer's end.

Rounding differs from the direct sum (the transforms add and subtract inputs before the
products); the error stays within a few units of the direct conv's own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import conv_tile, heuristics
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.conv_geometry import Epilogue, Geometry, Values, cmp
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const
from aotk.kernels.window import Window

TILE = 4  # input patch of a 2 x 2 output tile: 4 x 4 positions
POINTS = TILE * TILE  # products per tile and channel pair, one matrix product each
SLOTS = 8  # runs of items, each with its own scratch (~110 KiB for W5's second conv)
_QUAD = TILE * 16  # a tile's four output vectors (of at most 64 bytes of float32)

# F(2, 3) in one dimension: y = A^T [(G g) * (B^T d)], for y0 = d0 g0 + d1 g1 + d2 g2,
# y1 = d1 g0 + d2 g1 + d3 g2
_BT = ((1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0), (0, 1, 0, -1))
_G = ((1, 0, 0), (0.5, 0.5, 0.5), (0.5, -0.5, 0.5), (0, 0, 1))
_AT = ((1, 1, 1, 0), (0, 1, -1, -1))


def applies(elem: Attribute, kernel: Sequence[DimV], win: Window, pool: Sequence[int]) -> bool:
    """Whether this path computes a conv of `kernel` dims (3, 3, C, K) and window `win`,
    pooled over `pool`: float32 or float64, stride and dilation 1, no groups, 2 x 2
    windows, at least a vector of input and output channels, U within half of L2."""
    if not isinstance(elem, Float32Type | Float64Type) or len(kernel) != 4:
        return False
    taps_h, taps_w, cin, cout = kernel
    if (taps_h, taps_w) != (3, 3) or tuple(pool) != (2, 2) or win.groups != 1:
        return False
    if any(v != 1 for v in (*win.strides, *win.dilation, *win.lhs_dilation)):
        return False
    assert isinstance(cin, int) and isinstance(cout, int)  # a kernel's dims are static
    size = dtypes.byte_size(elem)
    lanes = conv_tile.tile_shape(size, cout)[0]
    return min(cin, cout) >= lanes and POINTS * cin * cout * size <= heuristics.L2_BYTES // 2


def block_tiles() -> int:
    """Tiles transformed and multiplied together: three register tiles of rows."""
    return 3 * conv_tile.tile_shape(4, 1)[1]


def scratch_elems(kernel: Sequence[int]) -> int:
    """Scratch elements: U, then each slot's V, M."""
    cin, cout = kernel[2], kernel[3]
    return POINTS * cin * cout + SLOTS * _slot_elems(cin, cout)


def _slot_elems(cin: int, cout: int) -> int:
    """A slot's V and M for a block of tiles, and four vectors for a scalar epilogue."""
    return POINTS * block_tiles() * (cin + cout) + _QUAD


@dataclass(frozen=True)
class _Shapes:
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
        """Vectors covering `count` channels (the last shifted back, `_shifted`)."""
        return -(-count // self.lanes)


@dataclass(frozen=True)
class _Item:
    """One item's buffers, geometry, scratch and slot (V at v_base, M after it), and
    (image, pooled row)."""

    out: Buf
    x: Buf
    g: Geometry
    scratch: Buf
    v_base: DimV
    m_base: DimV
    at: tuple[SSAValue, DimV]


def emit(
    k: Kernel,
    bufs: tuple[Buf, Buf, Buf],
    g: Geometry,
    plan: tuple[str, Buf],
    epilogue: Epilogue | None = None,
) -> None:
    """out = pool(epilogue(conv(x, w))) for bufs = (out, x, w), plan = (the pool's mode,
    scratch of `scratch_elems`), when `applies`."""
    out, x, w = bufs
    mode, scratch = plan
    cin, cout = w.dims[2], w.dims[3]
    assert isinstance(cin, int) and isinstance(cout, int)
    lanes, rows, most = conv_tile.tile_shape(dtypes.byte_size(out.elem), cout)  # type: ignore[arg-type]
    shapes = _Shapes(VectorType(out.elem, [lanes]), rows, min(most, cout // lanes), cin, cout)
    _transform_kernel(k, (scratch, w), shapes)
    items = k.mul(out.dims[0], out.dims[1])
    slots = k.min(items, SLOTS)
    tiles, block = out.dims[2], block_tiles()
    with k.loop(slots, parallel=True) as s:
        v_base = k.add(POINTS * cin * cout, k.mul(s, _slot_elems(cin, cout)))
        m_base = k.add(v_base, POINTS * block * cin)
        first, last = (k.div(k.mul(k.add(s, i), items), slots) for i in (0, 1))
        with k.loop(last, lb=first) as i:
            at = (k.index(k.div(i, out.dims[1])), k.rem(i, out.dims[1]))
            item = _Item(out, x, g, scratch, v_base, m_base, at)
            with k.loop(k.div(k.add(tiles, block - 1), block)) as b:
                count = k.min(block, tiles)
                t0 = k.min(k.mul(b, block), k.sub(tiles, count))
                _input_transform(k, item, shapes, (t0, count))
                _products(k, item, shapes, count)
                _output_transform(k, item, shapes, (t0, count), (mode, epilogue))


def _shifted(k: Kernel, j: DimV, width: int, count: int) -> DimV:
    """Start of the j-th block of `width` of `count` channels, the last ending at count."""
    return k.min(k.mul(j, width), count - width)


def _v_at(k: Kernel, item: _Item, shapes: _Shapes, point: DimV, tile: DimV) -> DimV:
    """Offset of V[point, tile, 0] in the scratch."""
    return k.add(item.v_base, k.mul(k.add(k.mul(point, block_tiles()), tile), shapes.cin))


def _m_at(k: Kernel, item: _Item, shapes: _Shapes, point: DimV, tile: DimV) -> DimV:
    """Offset of M[point, tile, 0] in the scratch."""
    return k.add(item.m_base, k.mul(k.add(k.mul(point, block_tiles()), tile), shapes.cout))


def _transform_kernel(k: Kernel, where: tuple[Buf, Buf], shapes: _Shapes) -> None:
    """U[xi, c, o] = (G g G^T)[xi] for g = w[:, :, c, o], at the start of the scratch."""
    scratch, w = where
    cin, cout = shapes.cin, shapes.cout
    with k.loop(cin, parallel=True) as c:
        with k.loop(shapes.vectors(cout)) as j:
            o = _shifted(k, j, shapes.lanes, cout)
            g = [
                [mk.vload(k, w, k.add(k.mul(k.add((r * 3 + s) * cin, c), cout), o), shapes.vt)
                 for s in range(3)]
                for r in range(3)
            ]  # fmt: skip
            for xi, value in enumerate(_sandwich(k, _G, g)):
                mk.vstore(k, scratch, k.add(k.mul(k.add(xi * cin, c), cout), o), value)


def _input_transform(k: Kernel, item: _Item, shapes: _Shapes, tiles: tuple[DimV, DimV]) -> None:
    """V[xi, t] = (B^T d B)[xi] for the patch d under each tile t of the block."""
    t0, count = tiles
    n, py = item.at
    zero = mk.splat(k, const(k.b, 0.0, shapes.vt.element_type), shapes.vt)
    with k.loop(count) as t:
        top = k.sub(k.mul(py, 2), item.g.pad_before[0])
        left = k.sub(k.mul(k.add(t0, t), 2), item.g.pad_before[1])
        patch = [
            [_position(k, item.x, (n, k.add(top, r), k.add(left, s)), shapes.lanes)
             for s in range(TILE)]
            for r in range(TILE)
        ]  # fmt: skip
        with k.loop(shapes.vectors(shapes.cin)) as j:
            c = _shifted(k, j, shapes.lanes, shapes.cin)
            d = [
                [mk.vload_masked(k, item.x, k.add(at, c), mask, zero) for at, mask in line]
                for line in patch
            ]
            for xi, value in enumerate(_sandwich(k, _BT, d)):
                mk.vstore(k, item.scratch, k.add(_v_at(k, item, shapes, xi, t), c), value)


def _position(k: Kernel, x: Buf, nyx: tuple[DimV, DimV, DimV], lanes: int) -> tuple[DimV, SSAValue]:
    """The offset of x[n, y, x, 0] (clamped into the image: it may be padding) and the
    lanes to load there: all inside the image, none in the padding."""
    n, *yx = nyx
    inside: SSAValue | None = None
    clamped: list[DimV] = []
    for v, size in zip(yx, x.dims[1:3], strict=True):
        ok = k.b.insert(arith.AndIOp(cmp(k, "sge", v, 0), cmp(k, "slt", v, size))).result
        inside = ok if inside is None else k.b.insert(arith.AndIOp(inside, ok)).result
        clamped.append(k.max(k.min(v, k.sub(size, 1)), 0))
    assert inside is not None
    vt = VectorType(x.elem, [lanes])
    offset = k.linear([n, *clamped], k.strides(x.dims)[:-1])
    return offset, mk.lane_mask(k, k.select(inside, lanes, 0), vt)


def _products(k: Kernel, item: _Item, shapes: _Shapes, count: DimV) -> None:
    """M[xi] = V[xi] U[xi] for the block's `count` tiles, in register tiles of `rows`
    tiles by nvec vectors of output channels. The last tile of rows is shifted back; a
    block shorter than a tile computes rows past `count` too, which nothing reads."""
    rows, nvec, cout = shapes.rows, shapes.nvec, shapes.cout
    width = nvec * shapes.lanes
    with k.loop(POINTS) as xi:
        with k.loop(-(-cout // width)) as j:
            o = _shifted(k, j, width, cout)
            with k.loop(k.div(k.add(count, rows - 1), rows)) as rb:
                r0 = k.max(k.min(k.mul(rb, rows), k.sub(count, rows)), 0)
                accs = _product_tile(k, item, shapes, (xi, r0, o))
                m_row = k.add(_m_at(k, item, shapes, xi, r0), o)
                for r in range(rows):
                    for v in range(nvec):
                        at = k.add(m_row, r * cout + v * shapes.lanes)
                        mk.vstore(k, item.scratch, at, accs[r * nvec + v])


def _product_tile(
    k: Kernel, item: _Item, shapes: _Shapes, at: tuple[SSAValue, DimV, DimV]
) -> Sequence[SSAValue]:
    """The accumulators of M[xi, r0:r0 + rows, o:o + nvec vectors], summed over C."""
    xi, r0, o = at
    vt, rows, nvec, cin, cout = shapes.vt, shapes.rows, shapes.nvec, shapes.cin, shapes.cout
    v_row = _v_at(k, item, shapes, xi, r0)
    u_row = k.add(k.mul(k.mul(xi, cin), cout), o)

    def step(c: SSAValue, accs: Values) -> list[SSAValue]:
        u_at = k.add(u_row, k.mul(c, cout))
        us = [mk.vload(k, item.scratch, k.add(u_at, v * shapes.lanes), vt) for v in range(nvec)]
        new = list(accs)
        for r in range(rows):
            scalar = k.load_flat(item.scratch, k.add(v_row, k.add(c, r * cin)))
            broadcast = mk.splat(k, scalar, vt)
            for v in range(nvec):
                new[r * nvec + v] = mk.vfma(k, broadcast, us[v], accs[r * nvec + v])
        return new

    zero = mk.splat(k, const(k.b, 0.0, vt.element_type), vt)
    return k.fold_loop(cin, [zero] * (rows * nvec), step)


def _output_transform(
    k: Kernel,
    item: _Item,
    shapes: _Shapes,
    tiles: tuple[DimV, DimV],
    finish: tuple[str, Epilogue | None],
) -> None:
    """out[n, py, t0 + t] = pool(epilogue(A^T M[:, t] A)) for the block's tiles."""
    t0, count = tiles
    mode, epilogue = finish
    out, vt = item.out, shapes.vt
    n, py = item.at
    with k.loop(count) as t:
        dst = k.linear([n, py, k.add(t0, t)], k.strides(out.dims)[:3])
        with k.loop(shapes.vectors(shapes.cout)) as j:
            o = _shifted(k, j, shapes.lanes, shapes.cout)
            m = [mk.vload(k, item.scratch, k.add(_m_at(k, item, shapes, xi, t), o), vt)
                 for xi in range(POINTS)]  # fmt: skip
            ys = _sandwich(k, _AT, [m[r * TILE : (r + 1) * TILE] for r in range(TILE)])
            if epilogue is not None:
                ys = _finished(k, item, shapes, (ys, o), epilogue)
            mk.vstore(k, out, k.add(dst, o), _pool(k, ys, mode))


def _finished(
    k: Kernel, item: _Item, shapes: _Shapes, ys: tuple[list[SSAValue], DimV], epilogue: Epilogue
) -> list[SSAValue]:
    """The epilogue on a tile's outputs `ys` (vectors of channels from o): on the vectors
    when its body allows, else element by element through the slot's four vectors."""
    values, o = ys
    vt, lanes = shapes.vt, shapes.lanes
    if epilogue.vector is not None:
        extras = epilogue.vector_extras(k, vt, o)
        return [epilogue.vector(k, [y, *extras]) for y in values]
    quad = k.add(item.m_base, POINTS * block_tiles() * shapes.cout)
    for q, y in enumerate(values):
        mk.vstore(k, item.scratch, k.add(quad, q * lanes), y)
    with k.loop(len(values) * lanes) as e:
        epilogue.apply(k, item.scratch, k.add(quad, e), k.add(o, k.rem(e, lanes)))
    return [mk.vload(k, item.scratch, k.add(quad, q * lanes), vt) for q in range(len(values))]


def _pool(k: Kernel, ys: list[SSAValue], mode: str) -> SSAValue:
    """The max or the mean of a window's four vectors."""
    combine = arith.MaximumfOp if mode == "max" else arith.AddfOp
    total = ys[0]
    for y in ys[1:]:
        total = k.b.insert(combine(total, y)).result
    if mode == "max":
        return total
    four = mk.splat(k, const(k.b, float(len(ys)), _element(total)), total.type)  # type: ignore[arg-type]
    return k.b.insert(arith.DivfOp(total, four)).result


def _element(v: SSAValue) -> Attribute:
    assert isinstance(v.type, VectorType)
    return v.type.element_type


def _sandwich(
    k: Kernel, p: Sequence[Sequence[float]], grid: Sequence[Sequence[SSAValue]]
) -> list[SSAValue]:
    """P X P^T of a grid X of vectors, row-major; P's entries are 0, +-1 or +-1/2."""
    half = [[_combine(k, p_row, [line[j] for line in grid]) for j in range(len(grid[0]))]
            for p_row in p]  # fmt: skip
    return [_combine(k, p_col, half_row) for half_row in half for p_col in p]


def _combine(k: Kernel, coeffs: Sequence[float], values: Sequence[SSAValue]) -> SSAValue:
    """sum(c * v), with the terms' common magnitude multiplied once."""
    terms = [(c, v) for c, v in zip(coeffs, values, strict=True) if c != 0]
    scale = abs(terms[0][0])
    assert all(abs(c) == scale for c, _ in terms)
    (c0, total), rest = terms[0], terms[1:]
    if c0 < 0:
        total = k.b.insert(arith.NegfOp(total)).result
    for c, v in rest:
        total = k.b.insert((arith.AddfOp if c > 0 else arith.SubfOp)(total, v)).result
    if scale == 1:
        return total
    factor = mk.splat(k, const(k.b, scale, _element(total)), total.type)  # type: ignore[arg-type]
    return k.b.insert(arith.MulfOp(total, factor)).result
