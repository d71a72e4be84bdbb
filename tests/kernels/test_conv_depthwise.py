"""Depthwise convolutions' vector path (`kernels.conv_depthwise`) against the oracle:
padding, strides, dilation, a channel tail, infinities at the border."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import conv_attrs, emit, placeholder, random_array, run_both

from aotk import backend as K
from aotk.dialect.conv import ConvOp
from aotk.lowering import pipeline

CASES = {
    "same": {"padding": "same"},
    "strided_dilated": {
        "strides": (2, 1),
        "dilation": (1, 2),
        "pad_before": (2, 1),
        "pad_after": (0, 3),
    },
    "valid": {},
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_depthwise_matches_interpreted(name: str, dtype: str) -> None:
    """19 channels (whole vectors and a masked tail), a 3x2 window, and an infinity on
    the input's border, which taps in the padding must not turn into NaN."""
    rng = np.random.default_rng(4)
    x = placeholder((None, 6, 7, 19), dtype, "x")
    w = placeholder((3, 2, 1, 19), dtype, "w")
    y = emit(ConvOp, x, w, **conv_attrs(2, groups=19, **CASES[name]))
    calls = []
    for batch in (2, 1):
        xs = random_array(rng, (batch, 6, 7, 19), dtype)
        xs[0, 0, 0, 3] = np.inf
        xs[-1, 5, 6, 18] = -np.inf
        calls.append([xs, random_array(rng, (3, 2, 1, 19), dtype)])
    run_both([x, w], [y], calls, scales=[60.0])


@pytest.mark.parametrize(
    ("strides", "padding"), [((1, 1), "same"), ((2, 2), "same"), ((2, 1), "valid")]
)
def test_depthwise_gradients_match_interpreted(strides, padding) -> None:
    """The input gradient is itself a depthwise conv (of the cotangent dilated by the
    strides, the taps reversed); with the kernel's, against the oracle."""
    rng = np.random.default_rng(5)
    x = K.placeholder((None, 7, 6, 19))
    w = K.placeholder((3, 3, 19, 1))
    y = K.depthwise_conv2d(x, w, strides=strides, padding=padding)
    r = K.placeholder(K.int_shape(y)[1:])
    grads = K.gradients(K.sum(y * r), [x, w])
    calls = [
        [random_array(rng, s, "float32") for s in ((b, 7, 6, 19), (3, 3, 19, 1), K.int_shape(r))]
        for b in (2, 1)
    ]
    f = run_both([x, w, r], grads, calls, scales=[60.0, 600.0])
    graph = pipeline.lower(f.module.clone(), stop_after="graph")
    convs = [op for op in graph.walk() if isinstance(op, ConvOp)]
    assert all(op.attrs()["groups"] == 19 for op in convs)  # the input gradient among them
    assert len(convs) == 1 + (strides[0] * strides[1] if padding == "same" else 2)
