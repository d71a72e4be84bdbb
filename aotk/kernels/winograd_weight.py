"""U = G g G^T, a 3 x 3 conv kernel in Winograd's points, made in a conv's call or once.

U holds, for each point xi, input channel c and output channel o, (G g G^T)[xi] of the
kernel g = w[:, :, c, o]: points x C x K values, row-major, the layout the Winograd
convs' products read (`conv_winograd`). A conv makes it at the start of every call, in
its scratch; a K.function's conv on a weight it does not write reads it from a copy made
once (`aotk.weight_packs`) by the micro-kernel `winograd_weight_f4_<dtype>(u, w, n,
k)`, for a kernel of k input and n output channels. At batch 1 that was most of a
conv's time: 14 x 14 x 256 channels 2.2 ms a call, 0.9 without it.
"""

from __future__ import annotations

import functools

from xdsl.dialects.builtin import Float32Type, Float64Type, VectorType
from xdsl.ir import Attribute, SSAValue

from aotk import dtypes
from aotk.kernels import heuristics, library
from aotk.kernels import matmul_microkernel as mk
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.winograd_tile import F4, Slots, Transform, sandwich_into

TRANSFORMS = {"f4": F4}  # the convs' transforms (`conv_winograd.plan_for`), by name


def transform(
    k: Kernel, bufs: tuple[Buf, Buf], tf: Transform, vt: VectorType, channels: tuple[DimV, DimV]
) -> None:
    """U (bufs[0], from its start) of the kernel w (bufs[1], [3, 3, C, K]), channels =
    (C, K), in vectors `vt` of output channels (K at least a vector), threads splitting
    the input channels."""
    u, w = bufs
    cin, cout = channels
    lanes = vt.get_shape()[0]
    pair_stride = k.mul(cin, cout)  # between taps of w, and between points of U
    with k.loop(cin, parallel=True) as c:
        with k.loop(k.div(k.add(cout, lanes - 1), lanes)) as j:
            o = k.min(k.mul(j, lanes), k.sub(cout, lanes))  # the last vector shifted back
            at = k.add(k.mul(c, cout), o)  # of w[0, 0, c, o] and U[0, c, o]

            def row(r: DimV, at: DimV = at) -> list[SSAValue]:
                start = k.add(at, k.mul(k.mul(r, 3), pair_stride))
                return [mk.vload(k, w, k.add(start, k.mul(s, pair_stride)), vt) for s in range(3)]

            sandwich_into(k, tf.g, row, (Slots(u, at, pair_stride), vt))


def key_of(points: int) -> str:
    """The key in TRANSFORMS of the transform of `points` points."""
    return next(key for key, tf in TRANSFORMS.items() if tf.points == points)


def name(tf: Transform, elem: Attribute) -> str:
    """The micro-kernel making U for `tf` in `elem`."""
    short = next(key for key, value in TRANSFORMS.items() if value == tf)
    return f"winograd_weight_{short}_{dtypes.numpy_dtype(elem)}"


def _build(tf: Transform, elem: Attribute, k: Kernel, args: list[SSAValue]) -> None:
    """The body of `winograd_weight_*`: (u, w, n, k), vectors as narrow as the convs'
    narrowest tiles (whose output channels fill one)."""
    cout, cin = args[2:]
    u = library.param_buf(k, args[0], (tf.points, cin, cout), elem)
    w = library.param_buf(k, args[1], (3, 3, cin, cout), elem)
    lanes = heuristics.narrow_vector_bytes() // dtypes.byte_size(elem)
    transform(k, (u, w), tf, VectorType(elem, [lanes]), (cin, cout))


for _tf in TRANSFORMS.values():
    for _elem in (Float32Type(), Float64Type()):
        library.register(
            library.MicroKernel(
                name(_tf, _elem),
                "ppii",
                functools.partial(_build, _tf, _elem),
                ("u", "w", "n", "k"),
            )
        )
