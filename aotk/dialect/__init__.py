"""The aotk tensor dialect: IRDL op classes and the registry of their rules."""

from __future__ import annotations

from xdsl.ir import Dialect

from aotk.dialect import (
    along_axis,
    arithmetic,
    batch_matmul,
    compare,
    conv,
    conv_backprop,
    conv_fused,
    conv_pool,
    ctc,
    ctc_decode,
    ctc_grad,
    data,
    debug,
    elementwise,
    fused,
    gather,
    gather_grad,
    identity,
    linalg,
    logsumexp,
    matmul_update,
    pool,
    pool_grad,
    random,
    reduce,
    scan,
    shape,
    shape_query,
    softmax,
    sparse,
    unary,
    unslice,
    upsample,
    views,
)
from aotk.dialect.registry import REGISTRY, Kind, OpDef, lookup, register

STRUCTURAL_OPS = [fused.YieldOp]  # a terminator: part of its parent op, no rules of its own

ATTRIBUTES = [
    conv.ConvPaddingAttr,
    conv_backprop.WrtAttr,
    pool.PoolPaddingAttr,
    pool.PoolModeAttr,
]

AOTK = Dialect("aotk", [*REGISTRY, *STRUCTURAL_OPS], ATTRIBUTES)

__all__ = [
    "AOTK",
    "REGISTRY",
    "STRUCTURAL_OPS",
    "Kind",
    "OpDef",
    "along_axis",
    "arithmetic",
    "batch_matmul",
    "compare",
    "conv",
    "conv_backprop",
    "conv_fused",
    "conv_pool",
    "ctc",
    "ctc_decode",
    "ctc_grad",
    "data",
    "debug",
    "elementwise",
    "fused",
    "gather",
    "gather_grad",
    "identity",
    "linalg",
    "logsumexp",
    "lookup",
    "matmul_update",
    "pool",
    "pool_grad",
    "random",
    "reduce",
    "register",
    "scan",
    "shape",
    "shape_query",
    "softmax",
    "sparse",
    "unary",
    "unslice",
    "upsample",
    "views",
]
