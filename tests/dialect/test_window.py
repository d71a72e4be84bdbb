"""`kernels.window.Window`: padding and output sizes against hand-computed values, its
argument checks, and the enum properties of the window ops."""

from __future__ import annotations

import pytest
from xdsl.builder import Builder
from xdsl.ir import Block
from xdsl.rewriter import InsertPoint

from aotk.dialect.base import decode_attr
from aotk.dialect.conv import ConvOp, ConvPaddingAttr
from aotk.dialect.pool import PoolMode, PoolOp
from aotk.kernels.dim_arith import STATIC
from aotk.kernels.kernel import Kernel
from aotk.kernels.window import ConvPadding, PoolPadding, Window, same_pads


def _conv(window=(3, 3), **kw) -> Window:
    n = len(window)
    attrs = {
        "strides": (1,) * n,
        "dilation": (1,) * n,
        "lhs_dilation": (1,) * n,
        "pad_before": (0,) * n,
        "pad_after": (0,) * n,
        "padding": "explicit",
        "groups": 1,
    }
    return Window.of_conv(window, **{**attrs, **kw})


@pytest.mark.parametrize(
    ("size", "stride", "extent", "pads"),
    [
        (7, 2, 3, (1, 1)),  # 4 outputs span 3 * 2 + 3 = 9: two pads
        (8, 2, 3, (0, 1)),  # 4 outputs span 9: the odd pad goes after
        (5, 1, 4, (1, 2)),
        (6, 3, 2, (0, 0)),  # 2 outputs span 5 < 6: no pads
        (0, 2, 3, (0, 1)),  # no outputs: 3 - 2 = 1 pad
        (None, 2, 3, (None, None)),
    ],
)
def test_same_pads(size, stride, extent, pads):
    assert same_pads(STATIC, size, stride, extent) == pads


def test_conv_output_sizes():
    win = _conv(strides=(2, 1), dilation=(1, 2), pad_before=(1, 0), pad_after=(0, 2))
    assert win.extent(1) == 5
    assert win.out_dims(STATIC, [9, 8]) == [4, 6]  # (9 + 1 - 3) // 2 + 1, (8 + 2 - 5) + 1
    assert win.out_dims(STATIC, [None, 8]) == [None, 6]
    same = _conv(strides=(2, 2), padding="same")
    assert same.pads(STATIC, 7, 0) == (1, 1)
    assert same.out_dims(STATIC, [7, 8]) == [4, 4]


def test_input_dilation():
    win = _conv((3,), lhs_dilation=(2,), pad_before=(2,), pad_after=(3,))
    assert win.dilated(STATIC, 4, 0) == 7
    assert win.dilated(STATIC, 0, 0) == 0
    assert win.out_dims(STATIC, [4]) == [10]  # 7 + 5 - 3 + 1


def test_pool_output_sizes():
    same = Window.of_pool(window=(3, 3), strides=(2, 2), padding="same")
    assert same.out_dims(STATIC, [5, 7]) == [3, 4]
    assert same.pads(STATIC, 5, 0) == (1, 1)
    valid = Window.of_pool(window=(3,), strides=(2,), padding=PoolPadding.VALID)
    assert valid.out_dims(STATIC, [9]) == [4]
    assert valid.pads(STATIC, 9, 0) == (0, 0)


def test_a_kernel_folds_known_sizes_to_the_same_ints():
    k = Kernel(Builder(InsertPoint.at_end(Block())))
    win = _conv(strides=(2, 1), dilation=(1, 2), pad_before=(1, 0), pad_after=(0, 2))
    assert win.out_dims(k, [9, 8]) == [4, 6]
    same = Window.of_pool(window=(3, 3), strides=(2, 2), padding="same")
    assert same.out_dims(k, [5, 7]) == [3, 4]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"strides": (1,)}, r"strides must be 2 ints >= 1, got \(1,\)"),
        ({"dilation": (0, 1)}, r"dilation must be 2 ints >= 1, got \(0, 1\)"),
        ({"pad_after": (0, -1)}, r"pad_after must be 2 ints >= 0, got \(0, -1\)"),
        ({"padding": "valid"}, "padding must be 'explicit' or 'same', got 'valid'"),
        ({"groups": 0}, "groups must be an int >= 1, got 0"),
        (
            {"padding": "same", "lhs_dilation": (2, 1)},
            r"'same' padding needs lhs_dilation 1, got \(2, 1\)",
        ),
    ],
)
def test_conv_arguments_are_checked_by_name(kw, message):
    with pytest.raises(ValueError, match=message):
        _conv(**kw)


def test_pool_arguments_are_checked_by_name():
    with pytest.raises(ValueError, match="padding must be 'valid' or 'same', got 'explicit'"):
        Window.of_pool(window=(2,), strides=(1,), padding="explicit")
    with pytest.raises(ValueError, match=r"window must be 1 ints >= 1, got \(0,\)"):
        Window.of_pool(window=(0,), strides=(1,), padding="valid")


def test_check_fits():
    valid = Window.of_pool(window=(6, 1), strides=(1, 1), padding="valid")
    with pytest.raises(ValueError, match=r"axis 0 of size 5 \(padded \(0, 0\)\) .* window 6$"):
        valid.check_fits([5, 5])
    valid.check_fits([6, None])
    dilated = _conv((2, 2), dilation=(5, 1))
    with pytest.raises(ValueError, match="window 2 dilated by 5"):
        dilated.check_fits([5, 5])
    _conv((3, 3), padding="same").check_fits([0, 1])  # TF: an empty axis stays empty
    with pytest.raises(ValueError, match="axis 1 of size 0"):
        _conv((3, 3), lhs_dilation=(1, 2)).check_fits([3, 0])


def test_enum_properties_are_str_enum_members():
    typed = ConvOp.typed_attrs({"padding": "same", "groups": 1})
    assert typed["padding"] is ConvPadding.SAME and typed["padding"] == "same"
    assert decode_attr(ConvPaddingAttr(ConvPadding.EXPLICIT)) is ConvPadding.EXPLICIT
    assert PoolOp.typed_attrs({"mode": "avg"})["mode"] is PoolMode.AVG
    with pytest.raises(ValueError, match="mode must be 'max' or 'avg', got 'min'"):
        PoolOp.typed_attrs({"mode": "min"})
