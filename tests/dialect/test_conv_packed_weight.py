"""`packed %u` on `aotk.conv_fused` and `aotk.conv_pool`: the kernel in Winograd's points
(`weight_packs`). Its form, what the verifier accepts, and the oracle, which reads the
kernel itself. The compiled code's values are checked in `test_weight_packs_conv`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from xdsl.dialects.builtin import Float32Type
from xdsl.parser import Parser
from xdsl.utils.exceptions import ParseError, VerifyException

from aotk import interp
from aotk.context import make_context
from aotk.kernels import matmul_prepacked

WINDOW = "strides [1, 1] dilation [1, 1] lhs_dilation [1, 1] pad_before [0, 0] pad_after [0, 0]"
X, W, B = "tensor<?x12x12x32xf32>", "tensor<3x3x32x48xf32>", "tensor<48xf32>"
U = "tensor<36x32x48xf32>"  # F(4 x 4, 3 x 3)'s 36 points for 32 + 48 channels


def _text(op: str, u: str = U, x: str = X, w: str = W, props: str = "") -> str:
    """A function of one conv with a packed kernel, relu(acc + b) as its epilogue."""
    result = "tensor<?x6x6x48xf32>" if op == "aotk.conv_pool" else "tensor<?x12x12x48xf32>"
    return f"""func.func @main(%x: {x}, %w: {w}, %u: {u}, %b: {B}) -> {result} {{
  %y = {op} %x, %w packed %u {props}{WINDOW} padding same groups 1 epilogue(%acc, %c = %b)
    : ({x}, {w}, {u}, {B}) -> {result} {{
    %s = "aotk.add"(%acc, %c) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    %zero = "aotk.constant"() <{{value = 0.0 : f64, dtype = f32}}> : () -> tensor<f32>
    %r = "aotk.maximum"(%s, %zero) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    aotk.yield %r : tensor<f32>
  }}
  func.return %y : {result}
}}"""


POOL = "pool_window [2, 2] pool_mode max "


def _parse(text: str) -> Any:
    return Parser(make_context(), text).parse_module()


@pytest.mark.parametrize("op, props", [("aotk.conv_fused", ""), ("aotk.conv_pool", POOL)])
def test_the_form_round_trips(op: str, props: str) -> None:
    module = _parse(_text(op, props=props))
    module.verify()
    printed = str(module)
    assert f"{op} %x, %w packed %u " in printed and "operandSegmentSizes" not in printed
    assert str(_parse(printed)) == printed
    (conv,) = [o for o in next(iter(module.ops)).body.block.ops if o.name == op]
    assert conv.packed is not None and [v.name_hint for v in conv.extras] == ["b"]


@pytest.mark.parametrize("op, props", [("aotk.conv_fused", ""), ("aotk.conv_pool", POOL)])
def test_the_oracle_reads_the_kernel_not_the_packed_copy(
    rng: np.random.Generator, op: str, props: str
) -> None:
    """A NaN copy changes nothing: the interpreter's result is the same conv without it."""
    packed = _parse(_text(op, props=props))
    plain = _parse(_text(op, props=props).replace(" packed %u", "").replace(f"{U}, {B})", f"{B})"))
    x = rng.standard_normal((2, 12, 12, 32)).astype(np.float32)
    w = rng.standard_normal((3, 3, 32, 48)).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    u = np.full((36, 32, 48), np.nan, np.float32)
    (got,) = interp.run_module(packed, [x, w, u, b])
    (want,) = interp.run_module(plain, [x, w, u, b])
    assert np.isfinite(got).all() and (got > 0).any()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"u": "tensor<16x32x48xf32>"},
         r"packed must be tensor<36x32x48xf32> for this conv, got tensor<16x32x48xf32>"),
        ({"u": "tensor<36x32x48xf64>"},
         r"packed must be tensor<36x32x48xf32> for this conv, got tensor<36x32x48xf64>"),
        ({"x": "tensor<?x12x12x3xf32>", "w": "tensor<3x3x3x48xf32>"},
         "packed is given, but this conv does not take Winograd's path"),
        ({"w": "tensor<5x5x32x48xf32>"},
         "packed is given, but this conv does not take Winograd's path"),
    ],
)  # fmt: skip
def test_a_packed_operand_the_conv_would_not_read_is_rejected(
    kwargs: dict[str, str], message: str
) -> None:
    module = _parse(_text("aotk.conv_fused", **kwargs))
    with pytest.raises(VerifyException, match=message):
        module.verify()


def test_a_conv_by_matmuls_takes_u_in_slivers() -> None:
    """400 channels in and out: the products are matmuls, which read each point's U in
    the prepacked matmul's slivers; a row-major U is refused, naming the sliver shape."""
    width = matmul_prepacked.sliver_width(Float32Type())
    text = _text("aotk.conv_fused")
    for old, new in (("x32x", "x400x"), ("x48x", "x400x"), ("<48x", "<400x")):
        text = text.replace(old, new)
    want = f"tensor<36x{-(-400 // width)}x400x{width}xf32>"
    _parse(text.replace("tensor<36x400x400xf32>", want)).verify()
    with pytest.raises(VerifyException, match=f"packed must be {want} for this conv"):
        _parse(text).verify()


def test_operands_and_types_must_agree() -> None:
    text = _text("aotk.conv_fused").replace(f"{U}, {B})", f"{B})")
    with pytest.raises(ParseError, match="4 operands and 1 result, but the type lists 3 and 1"):
        _parse(text)
