"""U = G g G^T, a 3 x 3 conv kernel in Winograd's points, made in a conv's call or once.

U holds, for each point xi, input channel c and output channel o, (G g G^T)[xi] of the
kernel g = w[:, :, c, o]. A point's C x K matrix is row-major for the products in
register tiles (`conv_winograd`), or in a matmul's slivers for the products by matmuls
(`conv_winograd_gemm`, which hands each point to `matmul_prepacked` as it is: packing U
per call took 1x14x14x512 channels from 3.3 ms to 6.2). A conv makes U at the start of
every call, in its scratch; a K.function's conv on a weight it does not write reads it
from a copy made once (`aotk.weight_packs`) by the micro-kernel
`winograd_weight_<layout>_<dtype>(u, w, n, k)`, for a kernel of k input and n output
channels. At batch 1 that was most of a conv's time: 14 x 14 x 256 channels 2.2 ms a
call, 0.9 without it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import heuristics, library, matmul_prepacked
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.scalar import const
from aotk.kernels.winograd_tile import F4, Slots, Transform, sandwich_into


@dataclass(frozen=True)
class Layout:
    """U's transform, and whether each point's C x K matrix is in slivers."""

    tf: Transform
    slivers: bool

    def dims(self, elem: Attribute, channels: tuple[int, int]) -> tuple[int, ...]:
        """U's dims: (points, C, K), or (points, slivers, C, sliver width)."""
        cin, cout = channels
        if not self.slivers:
            return self.tf.points, cin, cout
        width = matmul_prepacked.sliver_width(elem)
        return self.tf.points, -(-cout // width), cin, width

    def point_elems(self, k: Kernel, elem: Attribute, channels: tuple[DimV, DimV]) -> DimV:
        """Elements of one point's matrix (with its slivers' padding)."""
        cin, cout = channels
        if not self.slivers:
            return k.mul(cin, cout)
        return matmul_prepacked.packed_elems(k, elem, cout, cin)


LAYOUTS = {"f4": Layout(F4, False), "f4_slivers": Layout(F4, True)}  # by name


def key_of(layout: Layout) -> str:
    """The layout's name in LAYOUTS."""
    return next(key for key, value in LAYOUTS.items() if value == layout)


def name(layout: Layout, elem: Attribute) -> str:
    """The micro-kernel making U in `layout` for `elem`."""
    return f"winograd_weight_{key_of(layout)}_{dtypes.numpy_dtype(elem)}"


def transform(
    k: Kernel,
    bufs: tuple[Buf, Buf],
    layout: Layout,
    vt: VectorType,
    channels: tuple[DimV, DimV],
) -> None:
    """U (bufs[0], from its start) of the kernel w (bufs[1], [3, 3, C, K]), channels =
    (C, K), threads splitting the input channels. Row-major, in vectors `vt` of output
    channels (K at least a vector, the last vector shifted back); in slivers, in the
    matmul's vectors, the last one masked: its lanes past K, the slivers' padding, are
    zeros then."""
    u, w = bufs
    cin, cout = channels
    if layout.slivers:
        vt = VectorType(u.elem, [matmul_prepacked.sliver_lanes(u.elem)])
    lanes = vt.get_shape()[0]
    pair_stride = k.mul(cin, cout)  # between taps of w
    slots = layout.point_elems(k, u.elem, channels)  # between points of U
    ends = matmul_prepacked.packed_columns(k, u.elem, cout) if layout.slivers else cout
    with k.loop(cin, parallel=True) as c:
        with k.loop(k.div(k.add(ends, lanes - 1), lanes)) as j:
            o = k.mul(j, lanes) if layout.slivers else k.min(k.mul(j, lanes), k.sub(cout, lanes))
            load = _loader(k, (w, vt), k.sub(cout, o) if layout.slivers else None)
            at = k.add(k.mul(c, cout), o)  # of w[0, 0, c, o]

            def row(r: DimV, at: DimV = at) -> list[SSAValue]:
                start = k.add(at, k.mul(k.mul(r, 3), pair_stride))
                return [load(k.add(start, k.mul(s, pair_stride))) for s in range(3)]

            to = Slots(u, _u_at(k, (u, layout), (c, o), channels), slots)
            sandwich_into(k, layout.tf.g, row, (to, vt))


def _loader(k: Kernel, w: tuple[Buf, VectorType], left: DimV | None) -> Callable[[DimV], SSAValue]:
    """Loads of a vector of w's output channels; with `left` (the channels from the
    vector's first to K), the lanes past K zeros, not read."""
    buf, vt = w
    if left is None:
        return lambda start: mk.vload(k, buf, start, vt)
    lanes = vt.get_shape()[0]
    mask = mk.lane_mask(k, k.max(k.min(left, lanes), 0), vt)
    zero = mk.splat(k, const(k.b, 0.0, buf.elem), vt)
    return lambda start: mk.vload_masked(k, buf, start, mask, zero)


def _u_at(
    k: Kernel, u: tuple[Buf, Layout], at: tuple[DimV, DimV], channels: tuple[DimV, DimV]
) -> DimV:
    """Where U[0, c, o] is, at = (c, o): row-major, or in the sliver holding column o."""
    (buf, layout), (c, o), (cin, cout) = u, at, channels
    if not layout.slivers:
        return k.add(k.mul(c, cout), o)
    return matmul_prepacked.sliver_at(k, o, c, cin, buf.elem)


def _build(layout: Layout, elem: Attribute, k: Kernel, args: list[SSAValue]) -> None:
    """The body of `winograd_weight_*`: (u, w, n, k), row-major in vectors as narrow as
    the convs' narrowest tiles (whose output channels fill one)."""
    cout, cin = args[2:]
    size = k.mul(layout.tf.points, layout.point_elems(k, elem, (cin, cout)))
    u = library.param_buf(k, args[0], (size,), elem)
    w = library.param_buf(k, args[1], (3, 3, cin, cout), elem)
    lanes = heuristics.narrow_vector_bytes() // dtypes.byte_size(elem)
    transform(k, (u, w), layout, VectorType(elem, [lanes]), (cin, cout))


for _layout in LAYOUTS.values():
    for _elem in (Float32Type(), Float64Type()):
        library.register(
            library.MicroKernel(
                name(_layout, _elem),
                "ppii",
                functools.partial(_build, _layout, _elem),
                ("u", "w", "n", "k"),
            )
        )
