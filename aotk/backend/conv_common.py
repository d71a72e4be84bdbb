"""Helpers shared by the convolution, pooling and locally connected K functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from aotk.backend.shape_ops import permute_dimensions
from aotk.backend.tensors import as_tensor
from aotk.dialect import trace
from aotk.dialect.conv import ConvOp
from aotk.dialect.trace import KTensor

PADDINGS = ("valid", "same")


def ints(value: Any, n: int, name: str, where: str) -> tuple[int, ...]:
    """`value` as n ints >= 1 (one int stands for all n)."""
    values = (value,) * n if isinstance(value, int | np.integer) else value
    try:
        out = tuple(int(v) for v in values)
        ok = len(out) == n and all(v >= 1 and v == f for v, f in zip(out, values, strict=True))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{where}: {name} must be {n} ints >= 1, got {value!r}")
    return out


def padding_mode(
    padding: Any, where: str, allowed: Sequence[str] = PADDINGS, name: str = "padding"
) -> str:
    if padding not in allowed:
        options = " or ".join(repr(p) for p in allowed)
        raise ValueError(f"{where}: {name} must be {options}, got {padding!r}")
    return str(padding)


def input_tensor(x: Any, rank: int, where: str, name: str = "x") -> KTensor:
    t = as_tensor(x, where=where)
    if t.ndim != rank + 2:
        raise ValueError(
            f"{where}: {name} must have rank {rank + 2} (batch, {rank} spatial axes, channels), "
            f"got shape {t.shape}"
        )
    return t


def kernel_tensor(kernel: Any, rank: int, where: str, name: str = "kernel") -> KTensor:
    w = as_tensor(kernel, where=where)
    if w.ndim != rank + 2 or None in w.shape:
        raise ValueError(
            f"{where}: {name} must have a static shape of rank {rank + 2}, got {w.shape}"
        )
    return w


def to_last(x: KTensor, fmt: str) -> KTensor:
    if fmt == "channels_last":
        return x
    return permute_dimensions(x, (0, *range(2, x.ndim), 1))


def from_last(y: KTensor, fmt: str) -> KTensor:
    if fmt == "channels_last":
        return y
    return permute_dimensions(y, (0, y.ndim - 1, *range(1, y.ndim - 1)))


def check_channels(x: KTensor, expected: int, what: str, where: str) -> None:
    if x.shape[-1] is not None and x.shape[-1] != expected:
        raise ValueError(f"{where}: x has {x.shape[-1]} channels but {what} expects {expected}")


def emit_conv(
    x: KTensor,
    w: KTensor,
    where: str,
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
    padding: str,
    **attrs: Any,
) -> KTensor:
    """aotk.conv on channels_last x; `padding` is "valid", "same" or "explicit"."""
    rank = x.ndim - 2
    zeros = (0,) * rank
    return trace.emit(
        ConvOp,
        x,
        w,
        where=where,
        strides=strides,
        dilation=dilation,
        lhs_dilation=attrs.get("lhs_dilation", (1,) * rank),
        pad_before=attrs.get("pad_before", zeros),
        pad_after=attrs.get("pad_after", zeros),
        padding="same" if padding == "same" else "explicit",
        groups=attrs.get("groups", 1),
    )
