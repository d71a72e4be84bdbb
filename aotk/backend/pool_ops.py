"""Max and average pooling of the Keras API over 2 and 3 spatial dims (`aotk.pool`)."""

from __future__ import annotations

from typing import Any

from aotk.backend import conv_common as cc
from aotk.backend.config import check_data_format
from aotk.dialect import trace
from aotk.dialect.pool import PoolMode, PoolOp
from aotk.dialect.trace import KTensor


def _pool(x: Any, pool_size: Any, args: tuple[Any, ...], rank: int, where: str) -> KTensor:
    strides, padding, data_format, pool_mode = args
    fmt = check_data_format(data_format, where)
    t = cc.to_last(cc.input_tensor(x, rank, where), fmt)
    window = cc.ints(pool_size, rank, "pool_size", where)
    st = cc.ints(strides, rank, "strides", where)
    mode = cc.padding_mode(padding, where)
    if pool_mode not in tuple(PoolMode):
        raise ValueError(f"{where}: pool_mode must be 'max' or 'avg', got {pool_mode!r}")
    y = trace.emit(
        PoolOp, t, where=where, window=window, strides=st, padding=mode, mode=str(pool_mode)
    )
    return cc.from_last(y, fmt)


def pool2d(
    x: Any,
    pool_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    pool_mode: str = "max",
) -> KTensor:
    """2D max or average pooling; 'same' averages count only the input elements."""
    return _pool(x, pool_size, (strides, padding, data_format, pool_mode), 2, "K.pool2d")


def pool3d(
    x: Any,
    pool_size: Any,
    strides: Any = (1, 1, 1),
    padding: str = "valid",
    data_format: str | None = None,
    pool_mode: str = "max",
) -> KTensor:
    """3D max or average pooling; 'same' averages count only the input elements."""
    return _pool(x, pool_size, (strides, padding, data_format, pool_mode), 3, "K.pool3d")


__all__ = ["pool2d", "pool3d"]
