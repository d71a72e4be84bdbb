"""K's convolutions against the NumPy references of conv_reference.py, and the errors of
every function of the family (pooling and local convolutions: test_conv_ops_pool_local.py).

Each test compiles one K.function with many outputs (compilation dominates the run time)
and calls it twice; placeholders with a None batch are called with two batch sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from conv_reference import (
    RNG_SEED,
    batches,
    cf,
    check,
    fn,
    ref_conv,
    ref_conv_transpose,
    uniform,
)

from aotk import backend as K

CONV1D_CASES = [
    # (strides, padding, dilation_rate, data_format)
    (1, "valid", 1, "channels_last"),
    (2, "same", 1, "channels_first"),
    (1, "causal", 2, "channels_last"),
    (2, "causal", 1, "channels_first"),
    (2, "valid", 2, "channels_last"),
]


def test_conv1d_against_numpy():
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, 11, 5))
    xf = K.placeholder((None, 5, 11))
    w = K.placeholder((3, 5, 7))
    outs = []
    for strides, padding, dil, fmt in CONV1D_CASES:
        src = x if fmt == "channels_last" else xf
        outs.append(K.conv1d(src, w, strides, padding, fmt, dil))
    f = fn([x, xf, w], outs)
    wv = uniform(rng, (3, 5, 7))
    for xv in batches(rng, (None, 11, 5)):
        got = f(xv, cf(xv), wv)
        for (strides, padding, dil, fmt), g in zip(CONV1D_CASES, got, strict=True):
            want = ref_conv(xv, wv, (strides,), padding, (dil,))
            want = want if fmt == "channels_last" else cf(want)
            check(g, want, "float32", 15, f"conv1d {strides} {padding} {dil} {fmt}")


CONV2D_CASES = [
    # (kernel, strides, padding, dilation_rate, data_format)
    ((3, 3), (1, 1), "valid", (1, 1), "channels_last"),
    ((3, 3), (1, 1), "same", (1, 1), "channels_last"),
    ((3, 2), (2, 2), "same", (1, 1), "channels_first"),
    ((3, 3), (2, 3), "same", (2, 1), "channels_first"),
    ((1, 1), (1, 1), "valid", (1, 1), "channels_last"),
    ((4, 4), (3, 3), "same", (1, 1), "channels_last"),
]


def test_conv2d_against_numpy():
    """20 output channels: register tiles of two vectors, the last block shifted back to
    overlap the first, and the row order on the border positions."""
    channels_out = 20
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, 9, 10, 4))
    xf = K.placeholder((None, 4, 9, 10))
    kernels = {kw: K.placeholder((*kw, 4, channels_out)) for kw, *_ in CONV2D_CASES}
    outs = []
    for kw, strides, padding, dil, fmt in CONV2D_CASES:
        src = x if fmt == "channels_last" else xf
        outs.append(K.conv2d(src, kernels[kw], strides, padding, fmt, dil))
    f = fn([x, xf, *kernels.values()], outs)
    wvs = {kw: uniform(rng, (*kw, 4, channels_out)) for kw in kernels}
    for xv in batches(rng, (None, 9, 10, 4)):
        got = f(xv, cf(xv), *wvs.values())
        for (kw, strides, padding, dil, fmt), g in zip(CONV2D_CASES, got, strict=True):
            want = ref_conv(xv, wvs[kw], strides, padding, dil)
            want = want if fmt == "channels_last" else cf(want)
            check(g, want, "float32", 64, f"conv2d {kw} {strides} {padding} {dil} {fmt}")


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv2d_with_two_channel_blocks_against_numpy(padding):
    """70 input channels: two channel blocks (64 + 6), the second adding to the first's
    output; with 'same', the first and last rows take banded tiles and the first and last
    columns one-position tiles, whose channels are split over several accumulator sets
    (64 = 16 x 4, then 6 = 4 + a remainder of 2)."""
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, 8, 13, 70))
    w = K.placeholder((3, 3, 70, 20))
    f = fn([x, w], [K.conv2d(x, w, (1, 1), padding, "channels_last")])
    wv = uniform(rng, (3, 3, 70, 20))
    for xv in batches(rng, (None, 8, 13, 70)):
        [got] = f(xv, wv)
        check(got, ref_conv(xv, wv, (1, 1), padding, (1, 1)), "float32", 630, f"conv2d {padding}")


@pytest.mark.parametrize("height", [3, 6, 11])
def test_conv2d_same_columns_of_any_height(height):
    """'same' 3x3 on H x 12 images: the first and last columns take tiles of 5 positions
    down the H - 2 interior rows, whatever is left over (1, 4 or 9 rows) included."""
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, height, 12, 8))
    w = K.placeholder((3, 3, 8, 16))
    f = fn([x, w], [K.conv2d(x, w, (1, 1), "same", "channels_last")])
    wv = uniform(rng, (3, 3, 8, 16))
    for xv in batches(rng, (None, height, 12, 8)):
        [got] = f(xv, wv)
        check(got, ref_conv(xv, wv, (1, 1), "same", (1, 1)), "float32", 72, f"H={height}")


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_conv2d_dtypes(dtype):
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, 7, 6, 3), dtype=dtype)
    w = K.placeholder((3, 3, 3, 10), dtype=dtype)
    y1 = K.conv2d(x, w, (1, 1), "same", "channels_last")
    y2 = K.conv2d(x, w, (2, 2), "valid", "channels_last", (1, 1))
    f = fn([x, w], [y1, y2])
    wv = uniform(rng, (3, 3, 3, 10), dtype)
    for xv in batches(rng, (None, 7, 6, 3), dtype=dtype):
        g1, g2 = f(xv, wv)
        assert g1.dtype == np.dtype(dtype)
        check(g1, ref_conv(xv, wv, (1, 1), "same", (1, 1)), dtype, 27)
        check(g2, ref_conv(xv, wv, (2, 2), "valid", (1, 1)), dtype, 27)


def test_conv2d_dynamic_spatial_dims():
    """One compiled function serves several image sizes, 'same' padding included."""
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, None, None, 3))
    w = K.placeholder((3, 3, 3, 8))
    cases = [((2, 2), "same", (1, 1)), ((1, 1), "same", (2, 2)), ((1, 2), "valid", (1, 1))]
    f = fn([x, w], [K.conv2d(x, w, s, p, "channels_last", d) for s, p, d in cases])
    wv = uniform(rng, (3, 3, 3, 8))
    for shape in [(2, 7, 9, 3), (1, 12, 5, 3)]:
        xv = uniform(rng, shape)
        for (s, p, d), g in zip(cases, f(xv, wv), strict=True):
            check(g, ref_conv(xv, wv, s, p, d), "float32", 27, f"{shape} {s} {p} {d}")


def test_conv3d_against_numpy():
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, 5, 6, 4, 2))
    xf = K.placeholder((None, 2, 5, 6, 4))
    w = K.placeholder((2, 3, 2, 2, 9))
    cases = [
        ((1, 1, 1), "valid", (1, 1, 1), "channels_last"),
        ((2, 1, 2), "same", (1, 1, 1), "channels_first"),
        ((1, 1, 1), "same", (2, 1, 1), "channels_last"),
    ]
    outs = [K.conv3d(x if f == "channels_last" else xf, w, s, p, f, d) for s, p, d, f in cases]
    run = fn([x, xf, w], outs)
    wv = uniform(rng, (2, 3, 2, 2, 9))
    for xv in batches(rng, (None, 5, 6, 4, 2)):
        for (s, p, d, fmt), g in zip(cases, run(xv, cf(xv), wv), strict=True):
            want = ref_conv(xv, wv, s, p, d)
            check(g, want if fmt == "channels_last" else cf(want), "float32", 24)


def test_depthwise_conv2d():
    rng = np.random.default_rng(RNG_SEED)
    x = K.placeholder((None, 8, 7, 3))
    xf = K.placeholder((None, 3, 8, 7))
    dw1, dw2 = K.placeholder((3, 3, 3, 1)), K.placeholder((2, 3, 3, 2))
    outs = [
        K.depthwise_conv2d(x, dw1, (1, 1), "same"),
        K.depthwise_conv2d(xf, dw2, (2, 1), "valid", "channels_first"),
        K.depthwise_conv2d(x, dw2, (1, 1), "same", "channels_last", (2, 2)),
    ]
    f = fn([x, xf, dw1, dw2], outs)
    d1, d2 = uniform(rng, (3, 3, 3, 1)), uniform(rng, (2, 3, 3, 2))
    for xv in batches(rng, (None, 8, 7, 3)):
        wants = [
            ref_conv(xv, d1, (1, 1), "same", (1, 1), True),
            cf(ref_conv(xv, d2, (2, 1), "valid", (1, 1), True)),
            ref_conv(xv, d2, (1, 1), "same", (2, 2), True),
        ]
        for i, (g, want) in enumerate(zip(f(xv, cf(xv), d1, d2), wants, strict=True)):
            check(g, want, "float32", 9, f"output {i}")


def ref_separable(x, depthwise, pointwise, strides, padding, dilation):
    ones = (1,) * len(strides)
    mid = ref_conv(x, depthwise, strides, padding, dilation, True)
    return ref_conv(mid, pointwise, ones, "valid", ones)


def test_separable_conv1d_and_conv2d():
    rng = np.random.default_rng(RNG_SEED)
    x, xf = K.placeholder((None, 8, 7, 3)), K.placeholder((None, 3, 8, 7))
    dw, pw = K.placeholder((2, 3, 3, 2)), K.placeholder((1, 1, 6, 5))
    x1, x1f = K.placeholder((None, 9, 3)), K.placeholder((None, 3, 9))
    dw1, pw1 = K.placeholder((3, 3, 2)), K.placeholder((1, 6, 4))
    outs = [
        K.separable_conv2d(x, dw, pw, (1, 1), "same", "channels_last"),
        K.separable_conv2d(xf, dw, pw, (2, 2), "valid", "channels_first"),
        K.separable_conv1d(x1, dw1, pw1, 1, "same", "channels_last", 2),
        K.separable_conv1d(x1f, dw1, pw1, 2, "valid", "channels_first"),
    ]
    f = fn([x, xf, x1, x1f, dw, pw, dw1, pw1], outs)
    ws = [uniform(rng, s) for s in [(2, 3, 3, 2), (1, 1, 6, 5), (3, 3, 2), (1, 6, 4)]]
    for xv, xv1 in zip(batches(rng, (None, 8, 7, 3)), batches(rng, (None, 9, 3)), strict=True):
        d2, p2, d1, p1 = ws
        wants = [
            ref_separable(xv, d2, p2, (1, 1), "same", (1, 1)),
            cf(ref_separable(xv, d2, p2, (2, 2), "valid", (1, 1))),
            ref_separable(xv1, d1, p1, (1,), "same", (2,)),
            cf(ref_separable(xv1, d1, p1, (2,), "valid", (1,))),
        ]
        got = f(xv, cf(xv), xv1, cf(xv1), *ws)
        for i, (g, want) in enumerate(zip(got, wants, strict=True)):
            check(g, want, "float32", 60, f"output {i}")


TRANSPOSE_CASES = [
    # (input spatial, output spatial, strides, padding, dilation_rate, data_format)
    ((4, 5), (9, 11), (2, 2), "valid", (1, 1), "channels_last"),
    ((4, 5), (10, 12), (2, 2), "valid", (1, 1), "channels_first"),
    ((4, 5), (7, 10), (2, 2), "same", (1, 1), "channels_first"),
    ((4, 5), (4, 5), (1, 1), "same", (2, 2), "channels_last"),
    ((4, 5), (12, 5), (3, 1), "same", (1, 1), "channels_first"),
]


def test_conv2d_transpose_against_numpy():
    rng = np.random.default_rng(RNG_SEED)
    w = K.placeholder((3, 3, 6, 2))  # (rows, cols, out_channels, in_channels)
    xs, outs = [], []
    for size, out, s, p, d, fmt in TRANSPOSE_CASES:
        shape = (None, *size, 2) if fmt == "channels_last" else (None, 2, *size)
        x = K.placeholder(shape)
        full = (None, *out, 6) if fmt == "channels_last" else (None, 6, *out)
        xs.append(x)
        outs.append(K.conv2d_transpose(x, w, full, s, p, fmt, d))
    f = fn([w, *xs], outs)
    wv = uniform(rng, (3, 3, 6, 2))
    for batch in (2, 3):
        values = [uniform(rng, (batch, *case[0], 2)) for case in TRANSPOSE_CASES]
        feed = [
            v if c[5] == "channels_last" else cf(v)
            for v, c in zip(values, TRANSPOSE_CASES, strict=True)
        ]
        for v, case, g in zip(values, TRANSPOSE_CASES, f(wv, *feed), strict=True):
            size, out, s, p, d, fmt = case
            want = ref_conv_transpose(v, wv, out, s, p, d)
            check(g, want if fmt == "channels_last" else cf(want), "float32", 18, str(case))


def test_conv3d_transpose_and_deconv2d():
    rng = np.random.default_rng(RNG_SEED)
    x3 = K.placeholder((None, 3, 2, 4, 2))
    w3 = K.placeholder((2, 3, 2, 5, 2))
    x2 = K.placeholder((2, 3, 4, 4))  # channels_first, the Keras 1 default 'th'
    x2l = K.placeholder((2, 4, 4, 3))
    w2 = K.placeholder((3, 3, 2, 3))
    outs = [
        K.conv3d_transpose(x3, w3, (None, 6, 4, 8, 5), (2, 2, 2), "same"),
        K.conv3d_transpose(
            K.permute_dimensions(x3, (0, 4, 1, 2, 3)),
            w3,
            (2, 5, 4, 5, 9),
            (1, 2, 2),
            "valid",
            "channels_first",
        ),
        K.deconv2d(x2, w2, (2, 2, 9, 9), (2, 2)),
        K.deconv2d(x2l, w2, (None, 8, 8, 2), (2, 2), "same", "tf"),
    ]
    f = fn([x3, w3, x2, x2l, w2], outs)
    w3v, w2v = uniform(rng, (2, 3, 2, 5, 2)), uniform(rng, (3, 3, 2, 3))
    x3v, x2v = uniform(rng, (2, 3, 2, 4, 2)), uniform(rng, (2, 4, 4, 3))
    got = f(x3v, w3v, cf(x2v), x2v, w2v)
    wants = [
        ref_conv_transpose(x3v, w3v, (6, 4, 8), (2, 2, 2), "same", (1, 1, 1)),
        cf(ref_conv_transpose(x3v, w3v, (4, 5, 9), (1, 2, 2), "valid", (1, 1, 1))),
        cf(ref_conv_transpose(x2v, w2v, (9, 9), (2, 2), "valid", (1, 1))),
        ref_conv_transpose(x2v, w2v, (8, 8), (2, 2), "same", (1, 1)),
    ]
    for i, (g, want) in enumerate(zip(got, wants, strict=True)):
        check(g, want, "float32", 24, f"output {i}")


P = K.placeholder
ERROR_CASES = [
    # (call on x (None, 8, 8, 3) and kernel (3, 3, 3, 4), error, message pattern)
    (
        lambda x, w: K.conv2d(x, w, data_format="NHWC"),
        ValueError,
        r"K.conv2d: .*data_format 'NHWC'",
    ),
    (lambda x, w: K.conv2d(x, w, padding="full"), ValueError, r"K.conv2d: padding .*'full'"),
    (lambda x, w: K.conv2d(x, w, padding="causal"), ValueError, r"K.conv2d: padding .*'causal'"),
    (lambda x, w: K.conv2d(x, w, strides=(0, 1)), ValueError, r"K.conv2d: strides .*\(0, 1\)"),
    (lambda x, w: K.conv2d(x, w, strides=(1, 1, 1)), ValueError, r"K.conv2d: strides must be 2"),
    (lambda x, w: K.conv2d(x, w, dilation_rate=0), ValueError, r"K.conv2d: dilation_rate"),
    (lambda x, w: K.conv2d(x, P((3, 3, 4))), ValueError, r"K.conv2d: kernel .*rank 4"),
    (lambda x, w: K.conv2d(x, P((3, 3, 5, 4))), ValueError, r"3 channels .*expects 5"),
    (lambda x, w: K.conv2d(P((8, 8, 3)), w), ValueError, r"K.conv2d: x must have rank 4"),
    (lambda x, w: K.conv2d(x, P((3, 3, 3, 4), dtype="float64")), TypeError, "dtypes"),
    (
        lambda x, w: K.conv2d(P((1, 4, 4, 3), dtype="int32"), P((3, 3, 3, 4), dtype="int32")),
        TypeError,
        "float",
    ),
    (lambda x, w: K.conv2d(P((1, 2, 8, 3)), w), ValueError, "smaller than the window"),
    (
        lambda x, w: K.conv1d(P((1, 8, 3)), P((3, 3, 2)), padding="full"),
        ValueError,
        r"K.conv1d: padding must be 'valid' or 'same' or 'causal'",
    ),
    (lambda x, w: K.conv3d(x, w), ValueError, "K.conv3d: x must have rank 5"),
    (lambda x, w: K.depthwise_conv2d(x, P((3, 3, 4, 1))), ValueError, "depthwise_kernel"),
    (
        lambda x, w: K.separable_conv2d(x, P((3, 3, 3, 2)), P((1, 1, 5, 4))),
        ValueError,
        "pointwise_kernel must have shape",
    ),
    (
        lambda x, w: K.conv2d_transpose(x, P((3, 3, 4, 3)), (None, 11, 11, 4)),
        ValueError,
        r"K.conv2d_transpose: output_shape .* does not fit",
    ),
    (
        lambda x, w: K.conv2d_transpose(x, P((3, 3, 4, 3)), (None, 10, 10, 5)),
        ValueError,
        "output_shape has 5 channels",
    ),
    (
        lambda x, w: K.conv2d_transpose(x, P((3, 3, 4, 3)), (None, 10, 10)),
        ValueError,
        "output_shape must be 4 dims",
    ),
    (
        lambda x, w: K.conv2d_transpose(x, P((3, 3, 4, 2)), (None, 10, 10, 4)),
        ValueError,
        "3 channels",
    ),
    (
        lambda x, w: K.conv2d_transpose(x, w, K.placeholder((4,), dtype="int32")),
        ValueError,
        r"output_shape must be 4 dims .* got <KTensor",
    ),
    (
        lambda x, w: K.deconv2d(x, w, (None, 10, 10, 4), dim_ordering="xy"),
        ValueError,
        "K.deconv2d: dim_ordering",
    ),
    (
        lambda x, w: K.deconv2d(x, w, (None, 10, 10, 4), border_mode="full", dim_ordering="tf"),
        ValueError,
        "K.deconv2d: border_mode must be",
    ),
    (lambda x, w: K.pool2d(x, (2, 2), pool_mode="sum"), ValueError, r"K.pool2d: pool_mode .*'sum'"),
    (lambda x, w: K.pool2d(x, (2, 2), padding="causal"), ValueError, "K.pool2d: padding"),
    (lambda x, w: K.pool2d(x, (2,)), ValueError, "K.pool2d: pool_size must be 2 ints"),
    (lambda x, w: K.pool2d(x, (2, 2), data_format="th"), ValueError, "K.pool2d: .*data_format"),
    (lambda x, w: K.pool3d(x, (2, 2, 2)), ValueError, "K.pool3d: x must have rank 5"),
    (
        lambda x, w: K.pool2d(P((1, 4, 4, 3), dtype="int32"), (2, 2), pool_mode="avg"),
        TypeError,
        "avg pooling needs a float",
    ),
    (
        lambda x, w: K.local_conv1d(P((None, 9, 3)), P((4, 5, 5)), (2,), (2,)),
        ValueError,
        r"K.local_conv1d: kernel shape \(4, 5, 5\) should be \(4, 6, filters\)",
    ),
    (
        lambda x, w: K.local_conv1d(P((None, 6, 3)), P((4, 6, 5)), (2,), (2,)),
        ValueError,
        "need 8 steps",
    ),
    (
        lambda x, w: K.local_conv2d(x, P((4, 27, 2)), (3, 3), (1, 1), (2, 3)),
        ValueError,
        "K.local_conv2d: kernel shape",
    ),
]


@pytest.mark.parametrize(("call", "error", "pattern"), ERROR_CASES)
def test_errors_name_the_function_and_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call(K.placeholder((None, 8, 8, 3)), K.placeholder((3, 3, 3, 4)))


def test_dynamic_batch_errors_are_reported_at_call_time():
    x = K.placeholder((None, None, 6, 3))
    w = K.placeholder((3, 3, 3, 4))
    f = fn([x, w], [K.conv2d(x, w)])
    with pytest.raises(ValueError, match="smaller than the window"):
        f(np.zeros((1, 2, 6, 3), "float32"), np.zeros((3, 3, 3, 4), "float32"))
