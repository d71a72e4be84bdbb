"""`aotk.conv_pool`: a 2-D convolution, an elementwise epilogue, then max or average pooling.

    %y = aotk.conv_pool %x, %w pool_window [2, 2] pool_mode max strides [1, 1] ...
           groups 1 epilogue(%acc, %b = %bias) : (tensor<?x32x32x32xf32>,
           tensor<3x3x32x64xf32>, tensor<64xf32>) -> tensor<?x16x16x64xf32> {
      %s = "aotk.add"(%acc, %b) : ...
      aotk.yield %s : tensor<f32>
    }

y = pool(epilogue(conv(x, w))): the conv and body as `aotk.conv_fused`'s, then windows
`pool_window` wide with strides equal to them and no padding (Keras' MaxPooling2D and
AveragePooling2D defaults). Only `aotk-conv-pool` builds it, after autodiff: the kernel
pools the conv's rows while they are in cache (`kernels.conv_pool`), so the conv's
full-size output never goes to memory; a 3 x 3 stride-1 conv pooled 2 x 2 computes each
window as one Winograd tile instead (`kernels.conv_winograd`). It takes what the register
tiles compute: float32 or float64, no groups, no input dilation, and output channels of
at least 32 bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects.builtin import DenseArrayBase
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, prop_def

from aotk import dtypes
from aotk.dialect.base import Shape, dtype_of, elem_of, shape_of, tensor
from aotk.dialect.conv import conv_shape, infer_conv, np_conv
from aotk.dialect.conv_fused import EpilogueConvOp, epilogue_of, operand_types
from aotk.dialect.pool import PoolModeAttr, np_pool, pool_shape
from aotk.dialect.registry import BodyLowering, Kind, OpDef, register
from aotk.kernels import conv_pool, conv_tile, conv_winograd, heuristics
from aotk.kernels.conv_geometry import geometry
from aotk.kernels.dim_arith import STATIC
from aotk.kernels.kernel import Buf, DimV, Kernel
from aotk.kernels.window import Window

POOL_PROPS = ("pool_window", "pool_mode")


def split_props(attrs: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """An op's properties as the conv's (`aotk.conv`'s rules take them) and the pool's
    (`aotk.pool`'s, mode aside)."""
    conv = {name: v for name, v in attrs.items() if name not in POOL_PROPS}
    window = attrs["pool_window"]
    return conv, {"window": window, "strides": window, "padding": "valid"}


@irdl_op_definition
class ConvPoolOp(EpilogueConvOp):
    """`aotk.conv_fused`, pooled over windows that neither overlap nor pad."""

    name = "aotk.conv_pool"
    pool_window = prop_def(DenseArrayBase)
    pool_mode = prop_def(PoolModeAttr)

    def conv_attrs(self) -> dict[str, Any]:
        return split_props(self.attrs())[0]

    def pool_attrs(self) -> dict[str, Any]:
        """The pooling as `aotk.pool`'s properties."""
        return split_props(self.attrs())[1]

    def pooling(self) -> Any:
        return self.pool_attrs()["window"]

    def inferred(self) -> Attribute:
        conv = infer_conv(self.x.type, self.kernel.type, **self.conv_attrs())
        check_tiled(conv, self.kernel.type, **self.conv_attrs())
        return pooled_type(conv, self.pool_attrs())


def check_tiled(conv: Attribute, kernel: Attribute, **attrs: Any) -> None:
    """Raise unless the register tiles compute this conv (result type `conv`)."""
    ks, elem = shape_of(kernel), elem_of(conv)
    if len(ks) != 4:
        raise ValueError(f"expected a 2-D convolution, got a kernel of rank {len(ks)}")
    if dtypes.byte_size(elem) not in (4, 8):
        raise TypeError(f"expected float32 or float64, got {dtype_of(conv)}")
    if attrs["groups"] != 1 or any(v != 1 for v in attrs["lhs_dilation"]):
        raise ValueError("expected groups 1 and no input dilation")
    channels = shape_of(conv)[-1]
    assert channels is not None  # the kernel's shape is static
    if conv_tile.tile_shape(dtypes.byte_size(elem), channels)[2] == 0:  # no vector to tile
        least = heuristics.narrow_vector_bytes()
        raise ValueError(f"expected output channels of at least {least} bytes, got {channels}")


def pooled_type(conv: Attribute, pool: dict[str, Any]) -> Attribute:
    """The conv's result type `conv` pooled as `pool` says (`split_props`)."""
    win = Window.of_pool(**pool)
    if win.rank != 2:
        raise ValueError(f"pool_window must be 2 ints >= 1, got {list(pool['window'])}")
    win.check_fits(shape_of(conv)[1:-1])
    return tensor(elem_of(conv), pool_shape(STATIC, [shape_of(conv)], **pool))


def _infer(op: ConvPoolOp, shapes: list[Shape], body_shapes: Any) -> list[Shape]:
    x, w = operand_types(op, shapes)
    conv = infer_conv(x, w, **op.conv_attrs())
    return [shape_of(pooled_type(conv, op.pool_attrs()))]


def _numpy(op: ConvPoolOp, inputs: list[np.ndarray], run_body: Any) -> list[np.ndarray]:
    """The conv's oracle, the body on whole arrays, then the pool's oracle."""
    conv = np_conv(inputs[0], inputs[1], **op.conv_attrs())
    extras = [np.broadcast_to(v, conv.shape) for v in op.epilogue_inputs(inputs)]
    (value,) = run_body([conv, *extras])
    value = np.ascontiguousarray(np.broadcast_to(value, conv.shape))
    return [np_pool(value, mode=op.attrs()["pool_mode"], **op.pool_attrs())]


def _pooled_dims(k: Kernel, ins: list[Buf], **attrs: Any) -> list[DimV]:
    """The result's dims from the operands' (x and the kernel first)."""
    conv, pool = split_props(attrs)
    return pool_shape(k, [conv_shape(k, [ins[0].dims, ins[1].dims], **conv)], **pool)


def _scratch(k: Kernel, ins: list[Buf], result_type: Attribute, **attrs: Any) -> DimV:
    """The bands of `kernels.conv_pool` (at least one element: `_lower` takes a buffer),
    or the scratch of `kernels.conv_winograd` if larger (ins: x, the kernel, and U when
    the op is given it)."""
    n_out = ins[1].dims[-1]
    assert isinstance(n_out, int)  # the kernel's shape is static
    conv, elem, window = split_props(attrs)[0], elem_of(result_type), attrs["pool_window"]
    out = (_pooled_dims(k, ins, **attrs), elem)
    bands = k.max(conv_pool.band_elems(k, out, n_out, window), 1)
    # Winograd's, and the bands for a call of too few tiles for it
    shape = (conv, window, ins[0].dims[1:-1])
    winograd = conv_winograd.scratch_elems(k, elem, ins[1].dims, shape, len(ins) > 2)
    return k.max(bands, winograd)


def _lower(low: BodyLowering, op: ConvPoolOp, targets: dict[SSAValue, Buf]) -> None:
    ins, k = [low.bufs[v] for v in op.operands], low.k
    extras = op.epilogue_inputs(ins)
    (out,) = low.bind_results(op, _pooled_dims(k, ins, **op.attrs()), targets)
    scratch = low.scratch(op, ins[: len(ins) - len(extras)])["scratch"]
    bufs = (out, ins[0], ins[1], extras)
    packed = ins[2] if op.packed is not None else None
    low.emit_loops(op, [out, *ins, scratch], lambda: _emit(k, op, bufs, (scratch, packed)))


def _emit(
    k: Kernel, op: ConvPoolOp, bufs: tuple[Buf, Buf, Buf, list[Buf]], given: tuple[Buf, Buf | None]
) -> None:
    """The op's code on bufs = (out, x, the kernel, the extras), given = (the scratch,
    U or None)."""
    out, x, w, extras = bufs
    scratch, packed = given
    mode, window = str(op.attrs()["pool_mode"]), op.attrs()["pool_window"]
    g = geometry(k, Window.of_conv(w.dims[:-2], **op.conv_attrs()), x.dims[1:-1])
    epilogue = epilogue_of(op, extras)

    def direct() -> None:
        conv_pool.emit(k, (out, x, w), g, (conv_pool.Pooling(window, mode), scratch), epilogue)

    if conv_winograd.takes(out.elem, w.dims, op.conv_attrs(), window, x.dims[1:-1]):
        conv_winograd.emit(k, (out, x, w), g, (mode, scratch), epilogue, direct, packed)
    else:
        direct()


register(
    OpDef(
        ir=ConvPoolOp,
        kind=Kind.REGION,
        infer=_infer,
        numpy=_numpy,
        lower=_lower,
        scratch=_scratch,
    )
)
