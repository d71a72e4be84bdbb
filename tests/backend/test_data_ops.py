"""Keras shape and data-movement functions against NumPy expectations written here.

Each test compiles one K.function whose outputs cover many cases, and calls it with two
sets of sizes for its None dims. Expectations come from NumPy (or the reference's NumPy
implementation, or plain loops), never from aotk's interpreter. Also covers the shape
functions of `shape_ops.py` (reshape, dot, `x[...]`, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from conftest import assert_close, random_array

from aotk import backend as K


def check(
    inputs: Sequence[Any],
    outputs: Sequence[Any],
    expect: Callable[..., Sequence[Any]],
    calls: Sequence[Sequence[np.ndarray]],
) -> None:
    """Compile once; for every argument list compare each output with `expect(*arrays)`."""
    f = K.function(list(inputs), list(outputs))
    for arrays in calls:
        got = f(list(arrays))
        want = expect(*arrays)
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            assert_close(g, np.asarray(w), msg=f"output {i} on {[a.shape for a in arrays]}")


def arrays(rng: np.random.Generator, shapes: Sequence[tuple[int, ...]], dtypes: Sequence[str]):
    return [random_array(rng, s, d, "small") for s, d in zip(shapes, dtypes, strict=True)]


def test_repeat_repeat_elements_and_tile(rng):
    x = K.placeholder((None, 2, None))
    xi = K.placeholder((None, 2, None), dtype="int8")
    xb = K.placeholder((None, 2, None), dtype="bool")
    m = K.placeholder((None, 3), dtype="float64")
    v = K.placeholder((None,), dtype="uint8")
    outs = [
        K.repeat_elements(x, 3, 1),
        K.repeat_elements(x, 2, 0),
        K.repeat_elements(x, 2, -1),
        K.repeat_elements(x, 1, 1),
        K.repeat_elements(x, 0, 1),
        K.tile(x, (2, 1, 3)),
        K.tile(x, [1, 2, 1]),
        K.repeat_elements(xi, 2, 2),
        K.tile(xi, (1, 2, 2)),
        K.repeat_elements(xb, 3, 0),
        K.tile(xb, (2, 2, 1)),
        K.repeat(m, 4),
        K.repeat(m, 1),
        K.tile(v, 3),
    ]

    def expect(a, ai, ab, am, av):
        return [
            np.repeat(a, 3, 1),
            np.repeat(a, 2, 0),
            np.repeat(a, 2, 2),
            a,
            np.repeat(a, 0, 1),
            np.tile(a, (2, 1, 3)),
            np.tile(a, (1, 2, 1)),
            np.repeat(ai, 2, 2),
            np.tile(ai, (1, 2, 2)),
            np.repeat(ab, 3, 0),
            np.tile(ab, (2, 2, 1)),
            np.stack([am] * 4, axis=1),
            am[:, None, :],
            np.concatenate([av, av, av]),
        ]

    dts = ["float32", "int8", "bool", "float64", "uint8"]
    calls = [
        arrays(rng, [(3, 2, 4)] * 3 + [(2, 3), (5,)], dts),
        arrays(rng, [(1, 2, 1)] * 3 + [(0, 3), (1,)], dts),
    ]
    check([x, xi, xb, m, v], outs, expect, calls)
    assert K.int_shape(outs[0]) == (None, 6, None)
    assert K.int_shape(outs[5]) == (None, 2, None)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: K.repeat(x, 2), ValueError, r"K.repeat: expected a 2D tensor"),
        (lambda x: K.repeat(x[0], -1), ValueError, r"K.repeat: n must be an int >= 0, got -1"),
        (lambda x: K.repeat_elements(x, 2, 3), ValueError, r"K.repeat_elements: axis 3"),
        (lambda x: K.repeat_elements(x, 1.5, 0), TypeError, r"K.repeat_elements: rep must"),
        (lambda x: K.tile(x, K.shape(x) * 2), TypeError, r"K.tile: n must be ints, or a tensor"),
        (lambda x: K.tile(x, (1, -2, 1)), ValueError, r"K.tile: n\[1\] must be an int >= 0"),
    ],
)
def test_repeat_and_tile_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(K.placeholder((None, 2, 3)))


def test_tile_pads_a_short_n_and_a_long_n_adds_axes_as_numpy():
    value = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    x = K.variable(value)
    for n in (2, (2, 1), (2, 1, 2), (1, 1, 1, 2), K.constant([2, 2], dtype="int32")):
        reps = (2, 2) if K.is_tensor(n) else n
        np.testing.assert_array_equal(K.eval(K.tile(x, n)), np.tile(value, reps))


def test_stack(rng):
    a, b, c = (K.placeholder((None, 3), name=n) for n in "abc")
    i, j = K.placeholder((None, 2), dtype="int32"), K.placeholder((None, 2), dtype="int32")
    t = K.placeholder((2, None, 3), dtype="bool")
    outs = [
        K.stack([a, b, c]),
        K.stack([a, b], axis=1),
        K.stack((a, c), axis=-1),
        K.stack([b]),
        K.stack([i, j], axis=2),
        K.stack(t, axis=1),
        K.stack(t),
    ]

    def expect(a, b, c, i, j, t):
        return [
            np.array([a, b, c]),
            np.concatenate([a[:, None], b[:, None]], axis=1),
            np.concatenate([a[..., None], c[..., None]], axis=-1),
            b[None],
            np.concatenate([i[..., None], j[..., None]], axis=2),
            np.transpose(t, (1, 0, 2)),
            t,
        ]

    dts = ["float32"] * 3 + ["int32", "int32", "bool"]
    calls = [
        arrays(rng, [(2, 3)] * 3 + [(4, 2)] * 2 + [(2, 5, 3)], dts),
        arrays(rng, [(1, 3)] * 3 + [(0, 2)] * 2 + [(2, 1, 3)], dts),
    ]
    check([a, b, c, i, j, t], outs, expect, calls)
    # the way Keras users call it in the notes: a single tensor stacks its slices
    ones = K.ones((3, 3, 3))
    np.testing.assert_array_equal(K.eval(K.stack(ones, axis=0)), np.ones((3, 3, 3), "float32"))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda a, b: K.stack([a, K.transpose(b)]), ValueError, r"K.stack: x\[1\] has shape"),
        (lambda a, b: K.stack([a, K.cast(b, "int32")]), TypeError, r"K.stack: x\[1\] has dtype"),
        (lambda a, b: K.stack([]), ValueError, r"K.stack: expected a non-empty list"),
        (lambda a, b: K.stack([a, b], axis=3), ValueError, r"K.stack: axis 3"),
        (lambda a, b: K.reverse(a, [0, -2]), ValueError, r"K.reverse: axes \(0, -2\) repeat"),
        (lambda a, b: K.reverse(a, 2), ValueError, r"K.reverse: axis 2"),
        (lambda a, b: K.reverse(a, "x"), TypeError, r"K.reverse: axes must be an int or"),
    ],
)
def test_stack_and_reverse_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(K.placeholder((2, 3)), K.placeholder((2, 3)))


def test_reverse(rng):
    x = K.placeholder((None, 3, None))
    xi = K.placeholder((None, 3, None), dtype="int16")
    xb = K.placeholder((None, 3, None), dtype="bool")
    outs = [
        K.reverse(x, 0),
        K.reverse(x, [0, 2]),
        K.reverse(x, -1),
        K.reverse(x, (1,)),
        K.reverse(x, []),
        K.reverse(xi, (2, 1, 0)),
        K.reverse(xb, 1),
    ]

    def expect(a, ai, ab):
        return [
            a[::-1],
            a[::-1, :, ::-1],
            a[..., ::-1],
            a[:, ::-1],
            a,
            ai[::-1, ::-1, ::-1],
            ab[:, ::-1],
        ]

    dts = ["float32", "int16", "bool"]
    calls = [arrays(rng, [(2, 3, 4)] * 3, dts), arrays(rng, [(5, 3, 1)] * 3, dts)]
    check([x, xi, xb], outs, expect, calls)


def test_slice(rng):
    x = K.placeholder((4, 5, 6))
    xi = K.placeholder((4, 5, 6), dtype="int32")
    y = K.placeholder((None, 6))
    outs = [
        K.slice(x, (1, 0, 2), (2, 5, 3)),
        K.slice(x, [0, 0, 0], [-1, 2, -1]),
        K.slice(x, (3, 4, 5), (5, 5, 5)),  # clamped at the end, as NumPy slicing is
        K.slice(x, (-2, 0, 1), (1, 1, 0)),
        K.slice(xi, (0, 1, 2), (4, 3, 2)),
        K.slice(y, (0, 1), (-1, 4)),
        K.slice(y, (1, 0), (2, -1)),  # a dynamic axis, clamped when it is short
        K.slice(y, (-2, 2), (-1, 1)),
    ]

    def expect(a, ai, b):
        return [
            a[1:3, 0:5, 2:5],
            a[:, 0:2, :],
            a[3:, 4:, 5:],
            a[-2:-1, 0:1, 1:1],
            ai[:, 1:4, 2:4],
            b[:, 1:5],
            b[1:3],
            b[-2:, 2:3],
        ]

    dts = ["float32", "int32", "float32"]
    calls = [arrays(rng, [(4, 5, 6), (4, 5, 6), (3, 6)], dts)]
    calls.append(arrays(rng, [(4, 5, 6), (4, 5, 6), (1, 6)], dts))
    check([x, xi, y], outs, expect, calls)


@pytest.mark.parametrize(
    ("start", "size", "error", "message"),
    [
        ((0,), (-1,), ValueError, r"K.slice: start must be a list of 2 ints"),
        ((0, 1), (-1, -2), ValueError, r"K.slice: size\[1\] must be an int >= -1, got -2"),
        ((0, 1.0), (-1, 2), TypeError, r"K.slice: start\[1\] must be an int"),
        ("tensor", (1, 1), TypeError, r"K.slice: start must be a list"),
    ],
)
def test_slice_errors(start, size, error, message):
    if start == "tensor":
        start = K.constant([0, 1], dtype="int32")
    with pytest.raises(error, match=message):
        K.slice(K.placeholder((None, 6)), start, size)


def _np_gather(ref: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The documented policy: negative indices count from the end, others out of range
    give zeros."""
    n = ref.shape[0]
    out = np.zeros(idx.shape + ref.shape[1:], ref.dtype)
    for pos in np.ndindex(*idx.shape):
        i = int(idx[pos])
        if -n <= i < n:
            out[pos] = ref[i]
    return out


def test_gather(rng):
    ref = K.placeholder((None, 4))
    refi = K.placeholder((None, 2, 2), dtype="int8")
    refb = K.placeholder((None,), dtype="bool")
    i = K.placeholder((None,), dtype="int32")
    j = K.placeholder((2, None), dtype="int64")
    u = K.placeholder((None,), dtype="uint8")
    outs = [
        K.gather(ref, i),
        K.gather(ref, j),
        K.gather(ref, [0, -1, 2]),
        K.gather(refi, u),
        K.gather(refb, i),
        K.gather(ref, np.array([[1, 0], [0, 1]], np.int16)),
    ]

    def expect(r, ri, rb, ia, ja, ua):
        return [
            _np_gather(r, ia),
            _np_gather(r, ja),
            np.stack([r[0], r[-1], r[2]]),
            _np_gather(ri, ua),
            _np_gather(rb, ia),
            np.array([[r[1], r[0]], [r[0], r[1]]]),
        ]

    def call(n: int, m: int) -> list[np.ndarray]:
        r, ri, rb = arrays(rng, [(n, 4), (n, 2, 2), (n,)], ["float32", "int8", "bool"])
        ia = rng.integers(-n - 2, n + 2, m).astype(np.int32)
        ja = rng.integers(-n - 2, n + 2, (2, m)).astype(np.int64)
        ua = rng.integers(0, 255, m).astype(np.uint8)
        ua[: min(n, m)] = np.arange(min(n, m))  # some in range
        return [r, ri, rb, ia, ja, ua]

    check([ref, refi, refb, i, j, u], outs, expect, [call(3, 7), call(5, 2)])
    assert K.int_shape(outs[1]) == (2, None, 4)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: K.gather(K.placeholder((3, 2)), [0.5, 1.0]), TypeError, r"K.gather: indices"),
        (lambda: K.gather(K.placeholder((3, 2)), K.placeholder((2,))), TypeError, r"integer"),
        (lambda: K.gather(K.placeholder(()), [0]), ValueError, r"K.gather: reference must"),
        (lambda: K.one_hot(K.placeholder((3,)), 4), TypeError, r"K.one_hot: indices must"),
        (lambda: K.one_hot(K.placeholder((3,), dtype="int32"), -1), ValueError, r"num_classes"),
        (lambda: K.one_hot(K.placeholder((3,), dtype="int32"), 2.0), TypeError, r"num_classes"),
    ],
)
def test_gather_and_one_hot_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_one_hot(rng):
    i = K.placeholder((None,), dtype="int32")
    j = K.placeholder((None, 2), dtype="int64")
    u = K.placeholder((3,), dtype="uint8")
    outs = [K.one_hot(i, 4), K.one_hot(j, 3), K.one_hot(u, 300), K.one_hot(i, 0)]

    def rows(idx: np.ndarray, n: int) -> np.ndarray:
        out = np.zeros((*idx.shape, n), "float32")
        for pos in np.ndindex(*idx.shape):
            if 0 <= idx[pos] < n:  # TensorFlow gives all-zero rows out of range
                out[(*pos, idx[pos])] = 1.0
        return out

    def expect(ia, ja, ua):
        return [rows(ia, 4), rows(ja, 3), rows(ua, 300), np.zeros((len(ia), 0), "float32")]

    calls = [
        [
            np.array([0, 3, -1, 4, 2], np.int32),
            rng.integers(-1, 4, (3, 2)),
            np.array([0, 255, 7], np.uint8),
        ],
        [np.array([1], np.int32), np.zeros((0, 2), np.int64), np.array([254, 1, 2], np.uint8)],
    ]
    check([i, j, u], outs, expect, calls)
    assert outs[0].dtype == K.floatx()


def test_arange():
    outs = [
        K.arange(5),
        K.arange(2, 9),
        K.arange(2, 9, 3),
        K.arange(10, 0, -3),
        K.arange(-3),
        K.arange(4, 4),
        K.arange(0, 1, 0.25, dtype="float32"),
        K.arange(3, dtype="int64"),
        K.arange(1.5, 4),
        K.arange(0, 5, 2, dtype="uint8"),
        K.arange(0, -1, -0.5, dtype="float64"),
        K.arange(np.int64(3), stop=np.float32(4.5), step=0.5, dtype="float16"),
    ]
    want = [
        np.array([0, 1, 2, 3, 4], "int32"),
        np.array([2, 3, 4, 5, 6, 7, 8], "int32"),
        np.array([2, 5, 8], "int32"),
        np.array([10, 7, 4, 1], "int32"),
        np.array([], "int32"),
        np.array([], "int32"),
        np.array([0.0, 0.25, 0.5, 0.75], "float32"),
        np.array([0, 1, 2], "int64"),
        np.array([1, 2, 3], "int32"),  # 1.5, 2.5, 3.5 truncated
        np.array([0, 2, 4], "uint8"),
        np.array([0.0, -0.5], "float64"),
        np.array([3.0, 3.5, 4.0], "float16"),
    ]
    check([], outs, lambda: want, [[]])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"start": 0, "stop": 3, "step": 0}, ValueError, r"K.arange: step must not be 0"),
        (
            {"start": K.placeholder(())},
            TypeError,
            r"K.arange: start must be a number or a scalar tensor known while tracing",
        ),
        ({"start": "3"}, TypeError, r"K.arange: start must be a number"),
        ({"start": 3, "dtype": "bool"}, TypeError, r"K.arange: dtype bool: a range needs a"),
        ({"start": 3, "dtype": "complex64"}, TypeError, r"K.arange: dtype"),
    ],
)
def test_arange_errors(kwargs, error, message):
    with pytest.raises(error, match=message):
        K.arange(**kwargs)


def test_padding_both_data_formats(rng):
    t = K.placeholder((None, None, 2))
    ti = K.placeholder((None, 3, 2), dtype="int32")
    x = K.placeholder((None, 3, 4, 2))
    xd = K.placeholder((None, None, None, 1), dtype="float64")
    v = K.placeholder((None, 2, 3, 2, 2))
    outs = [
        K.temporal_padding(t),
        K.temporal_padding(t, (0, 3)),
        K.temporal_padding(ti, [2, 0]),
        K.spatial_2d_padding(x),
        K.spatial_2d_padding(x, ((0, 2), (1, 0)), "channels_last"),
        K.spatial_2d_padding(x, ((0, 2), (1, 0)), "channels_first"),
        K.spatial_2d_padding(xd, ((1, 0), (0, 2)), data_format=None),
        K.spatial_3d_padding(v),
        K.spatial_3d_padding(v, ((1, 0), (0, 2), (3, 1)), "channels_last"),
        K.spatial_3d_padding(v, ((1, 0), (0, 2), (3, 1)), "channels_first"),
        K.spatial_3d_padding(v, ((0, 0), (0, 0), (0, 0))),
    ]

    def expect(at, ati, ax, axd, av):
        z = (0, 0)
        return [
            np.pad(at, (z, (1, 1), z)),
            np.pad(at, (z, (0, 3), z)),
            np.pad(ati, (z, (2, 0), z)),
            np.pad(ax, (z, (1, 1), (1, 1), z)),
            np.pad(ax, (z, (0, 2), (1, 0), z)),
            np.pad(ax, (z, z, (0, 2), (1, 0))),
            np.pad(axd, (z, (1, 0), (0, 2), z)),
            np.pad(av, (z, (1, 1), (1, 1), (1, 1), z)),
            np.pad(av, (z, (1, 0), (0, 2), (3, 1), z)),
            np.pad(av, (z, z, (1, 0), (0, 2), (3, 1))),
            av,
        ]

    dts = ["float32", "int32", "float32", "float64", "float32"]
    shapes = [[(2, 4, 2), (2, 3, 2), (2, 3, 4, 2), (2, 3, 5, 1), (2, 2, 3, 2, 2)]]
    shapes.append([(1, 0, 2), (3, 3, 2), (1, 3, 4, 2), (1, 1, 1, 1), (3, 2, 3, 2, 2)])
    check([t, ti, x, xd, v], outs, expect, [arrays(rng, s, dts) for s in shapes])
    assert K.int_shape(outs[5]) == (None, 3, 6, 3)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda x: K.temporal_padding(x), ValueError, r"K.temporal_padding: expected a 3D"),
        (lambda x: K.spatial_2d_padding(x, data_format="nhwc"), ValueError, r"data_format"),
        (lambda x: K.spatial_2d_padding(x, ((1, 1),)), ValueError, r"must be 2 pairs of ints"),
        (lambda x: K.spatial_2d_padding(x, ((1, 1), (1, -1))), ValueError, r"padding\[1\]\[1\]"),
        (lambda x: K.spatial_2d_padding(x, ((1, 1), 1)), ValueError, r"padding\[1\] must be"),
        (lambda x: K.spatial_3d_padding(x), ValueError, r"K.spatial_3d_padding: expected a 5D"),
        (lambda x: K.resize_images(x, 2, 2, "channels_last", "bicubic"), ValueError, "bilinear"),
        (lambda x: K.resize_images(x, 0, 2, "channels_last"), ValueError, r"height_factor"),
        (lambda x: K.resize_images(x, 2, 2.0, "channels_last"), TypeError, r"width_factor"),
        (lambda x: K.resize_images(x, 2, 2, "NCHW"), ValueError, r"unknown data_format 'NCHW'"),
        (lambda x: K.resize_volumes(x, 2, 2, 2, "channels_last"), ValueError, r"expected a 5D"),
    ],
)
def test_padding_and_resize_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(K.placeholder((None, 3, 4, 2)))


def _tf_bilinear(a: np.ndarray, fh: int, fw: int) -> np.ndarray:
    """TensorFlow 1's resize_bilinear (align_corners=False) on NHWC, pixel by pixel."""
    n, h, w, c = a.shape
    out = np.zeros((n, h * fh, w * fw, c), np.float64)
    for y in range(h * fh):
        sy = y * (h / (h * fh))
        y0, y1, ly = int(np.floor(sy)), min(int(np.floor(sy)) + 1, h - 1), sy - np.floor(sy)
        for x in range(w * fw):
            sx = x * (w / (w * fw))
            x0, x1, lx = int(np.floor(sx)), min(int(np.floor(sx)) + 1, w - 1), sx - np.floor(sx)
            top = a[:, y0, x0] + (a[:, y0, x1] - a[:, y0, x0]) * lx
            bottom = a[:, y1, x0] + (a[:, y1, x1] - a[:, y1, x0]) * lx
            out[:, y, x] = top + (bottom - top) * ly
    return out.astype(a.dtype)


def _nearest(a: np.ndarray, factors: dict[int, int]) -> np.ndarray:
    for axis, f in factors.items():
        a = np.repeat(a, f, axis=axis)
    return a


def test_resize_images_and_volumes(rng):
    x = K.placeholder((None, 3, 4, 2))
    x64 = K.placeholder((None, 2, 3, 2), dtype="float64")
    xi = K.placeholder((None, 2, 3, 2), dtype="int32")
    xd = K.placeholder((None, None, None, 1))
    v = K.placeholder((None, 2, 3, 2, 2), dtype="int8")
    nchw = K.permute_dimensions(x, (0, 3, 1, 2))
    outs = [
        K.resize_images(x, 2, 3, "channels_last"),
        K.resize_images(x, 2, 2, "channels_first"),
        K.resize_images(x, 2, 3, "channels_last", interpolation="bilinear"),
        K.resize_images(nchw, 3, 2, "channels_first", "bilinear"),
        K.resize_images(x64, 1, 4, "channels_last", "bilinear"),
        K.resize_images(xi, 2, 1, "channels_last"),
        K.resize_images(xd, 3, 2, "channels_last", "bilinear"),
        K.resize_images(xd, 1, 1, "channels_last", "bilinear"),
        K.resize_volumes(v, 2, 1, 3, "channels_last"),
        K.resize_volumes(v, 1, 2, 2, "channels_first"),
    ]

    def expect(a, a64, ai, ad, av):
        to_nchw = (0, 3, 1, 2)
        return [
            _nearest(a, {1: 2, 2: 3}),
            _nearest(a, {2: 2, 3: 2}),
            _tf_bilinear(a, 2, 3),
            np.transpose(_tf_bilinear(a, 3, 2), to_nchw),
            _tf_bilinear(a64, 1, 4),
            _nearest(ai, {1: 2}),
            _tf_bilinear(ad, 3, 2),
            ad,
            _nearest(av, {1: 2, 3: 3}),
            _nearest(av, {3: 2, 4: 2}),
        ]

    dts = ["float32", "float64", "int32", "float32", "int8"]
    shapes = [[(2, 3, 4, 2), (1, 2, 3, 2), (2, 2, 3, 2), (1, 2, 3, 1), (1, 2, 3, 2, 2)]]
    shapes.append([(1, 3, 4, 2), (3, 2, 3, 2), (1, 2, 3, 2), (2, 1, 4, 1), (2, 2, 3, 2, 2)])
    check([x, x64, xi, xd, v], outs, expect, [arrays(rng, s, dts) for s in shapes])
    assert K.int_shape(outs[1]) == (None, 3, 8, 4)
    assert K.int_shape(outs[6]) == (None, None, None, 1)


def _np_in_top_k(p: np.ndarray, t: np.ndarray, k: int) -> np.ndarray:
    """TensorFlow's InTopK: ties at the boundary are in; a bad target or a non-finite
    score anywhere in the row gives False."""
    out = []
    for row, target in zip(p, t, strict=True):
        if not 0 <= target < len(row) or not np.all(np.isfinite(row)):
            out.append(False)
            continue
        out.append(int(np.sum(row > row[target])) < k)
    return np.array(out, bool)


def test_in_top_k(rng):
    p = K.placeholder((None, None))
    t = K.placeholder((None,), dtype="int32")
    p64 = K.placeholder((None, 4), dtype="float64")
    t64 = K.placeholder((None,), dtype="int64")
    ks = (1, 2, 3, 0, 10)
    outs = [K.in_top_k(p, t, k) for k in ks] + [K.in_top_k(p64, t64, 2)]

    def expect(ap, at, ap64, at64):
        return [_np_in_top_k(ap, at, k) for k in ks] + [_np_in_top_k(ap64, at64, 2)]

    ties = np.array(
        [
            [1, 3, 3, 0],
            [1, 3, 3, 0],
            [2, 2, 2, 2],
            [0, np.nan, 1, 2],
            [0, 1, np.inf, 2],
            [5, 1, 2, 3],
            [5, 1, 2, 3],
            [1, 2, 3, 4],
        ],
        np.float32,
    )
    targets = np.array([1, 2, 3, 0, 0, -1, 4, 0], np.int32)
    p2 = rng.integers(0, 3, (6, 5)).astype(np.float32)  # few values: many ties
    t2 = rng.integers(-1, 6, 6).astype(np.int32)
    a64 = rng.standard_normal((3, 4))
    calls = [
        [ties, targets, a64, np.array([3, 0, 2])],
        [p2, t2, a64[:0], np.zeros(0, np.int64)],
    ]
    check([p, t, p64, t64], outs, expect, calls)
    f = K.function([p, t], [outs[1]])
    np.testing.assert_array_equal(
        f([ties, targets])[0], [True, True, True, False, False, False, False, False]
    )


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p, t: K.in_top_k(p[0], t, 1), ValueError, r"K.in_top_k: expected predictions"),
        (lambda p, t: K.in_top_k(K.cast(p, "int32"), t, 1), TypeError, r"must be a float"),
        (lambda p, t: K.in_top_k(p, K.cast(t, "float32"), 1), TypeError, r"targets must be"),
        (lambda p, t: K.in_top_k(p, t, 1.0), TypeError, r"K.in_top_k: k must be a Python int"),
        (lambda p, t: K.in_top_k(p, t[:2], 1), ValueError, r"K.in_top_k: batch sizes differ"),
    ],
)
def test_in_top_k_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(K.placeholder((3, 5)), K.placeholder((3,), dtype="int32"))


def _ref_batch_dot(x: np.ndarray, y: np.ndarray, axes: Any = None) -> np.ndarray:
    """The Numpy implementation of the Keras reference, verbatim in substance."""
    if isinstance(axes, int):
        axes = [axes, axes]
    elif isinstance(axes, tuple):
        axes = list(axes)
    if axes is None:
        axes = [x.ndim - 1, y.ndim - 1] if y.ndim == 2 else [x.ndim - 1, y.ndim - 2]
    axes = [
        axes[0] + x.ndim if axes[0] < 0 else axes[0],
        axes[1] + y.ndim if axes[1] < 0 else axes[1],
    ]
    result = [np.tensordot(xi, yi, [axes[0] - 1, axes[1] - 1]) for xi, yi in zip(x, y, strict=True)]
    out = np.array(result, dtype=x.dtype).reshape(len(x), *np.shape(result[0]) if result else ())
    return np.expand_dims(out, -1) if out.ndim == 1 else out


BATCH_DOT_CASES = [  # x shape, y shape (after the batch axis), axes, dtype
    ((2,), (2,), 1, "float32"),
    ((20, 1), (30, 20), (1, 2), "float32"),
    ((3, 4), (4, 5), None, "float32"),
    ((3, 4), (4,), None, "float64"),
    ((3, 4), (5, 4), 2, "int32"),
    ((3, 4), (3, 5), [1, 1], "float64"),
    ((3, 4), (4, 5), (-1, -2), "int32"),
    ((2, 3, 4), (4, 5), (3, 1), "float32"),
    ((2, 3, 4), (5, 2), (1, 2), "int32"),
    ((4,), (4, 5), (1, 1), "int32"),
    ((4,), (2, 4, 5), (1, 2), "float64"),
]


def test_batch_dot_every_axes_form(rng):
    xs, ys, outs = [], [], []
    for i, (sx, sy, axes, dt) in enumerate(BATCH_DOT_CASES):
        xs.append(K.placeholder((None, *sx), dtype=dt, name=f"x{i}"))
        ys.append(K.placeholder((None, *sy), dtype=dt, name=f"y{i}"))
        outs.append(K.batch_dot(xs[-1], ys[-1], axes=axes))
    # attention scores: every dim but the features dynamic
    q, kk = K.placeholder((None, None, 8)), K.placeholder((None, None, 8))
    outs.append(K.batch_dot(q, kk, axes=(2, 2)))

    def expect(*a):
        n = len(BATCH_DOT_CASES)
        pairs = zip(a[:n], a[n : 2 * n], BATCH_DOT_CASES, strict=True)
        return [_ref_batch_dot(x, y, c[2]) for x, y, c in pairs] + [_ref_batch_dot(*a[-2:], (2, 2))]

    def call(b: int, t: int, s: int) -> list[np.ndarray]:
        x = [random_array(rng, (b, *c[0]), c[3], "small") for c in BATCH_DOT_CASES]
        y = [random_array(rng, (b, *c[1]), c[3], "small") for c in BATCH_DOT_CASES]
        return x + y + arrays(rng, [(b, t, 8), (b, s, 8)], ["float32"] * 2)

    check(xs + ys + [q, kk], outs, expect, [call(3, 4, 5), call(1, 1, 0)])
    assert K.int_shape(outs[0]) == (None, 1)
    assert K.int_shape(outs[1]) == (None, 1, 30)
    assert K.int_shape(outs[-1]) == (None, None, None)


def test_batch_dot_reference_examples():
    x = K.variable([[1, 2], [3, 4]])
    y = K.variable([[5, 6], [7, 8]])
    np.testing.assert_array_equal(K.eval(K.batch_dot(x, y, axes=1)), [[17], [53]])
    xb, yb = K.ones(shape=(32, 20, 1)), K.ones(shape=(32, 30, 20))
    assert K.int_shape(K.batch_dot(xb, yb, axes=(1, 2))) == (32, 1, 30)
    shape = K.int_shape(K.batch_dot(K.placeholder((100, 20)), K.placeholder((100, 30, 20)), (1, 2)))
    assert shape == (100, 30)


@pytest.mark.parametrize(
    ("sx", "sy", "axes", "message"),
    [
        (
            (None, 3, 4),
            (None, 3, 4),
            (0, 1),
            r"K.batch_dot: axes \(0, 1\) include the batch axis 0",
        ),
        ((None, 3, 4), (None, 3, 4), (-3, 1), r"include the batch axis 0"),
        ((None, 3, 4), (None, 4, 5), 0, r"include the batch axis 0"),
        ((None,), (None, 3), None, r"K.batch_dot: x and y must have rank >= 2"),
        ((None, 3, 4), (None, 4, 5), ((1, 2), (1, 2)), r"multiple target dimensions"),
        ((None, 3, 4), (None, 4, 5), (1, 2, 3), r"axes must be None, an int or a pair"),
        ((None, 3, 4), (None, 4, 5), (3, 1), r"out of range"),
        ((2, 3, 4), (5, 4, 5), None, r"K.batch_dot: batch sizes differ"),
        ((None, 3, 4), (None, 5, 6), None, r"x.shape\[2\] != y.shape\[1\] \(4 != 5\)"),
    ],
)
def test_batch_dot_errors(sx, sy, axes, message):
    with pytest.raises(ValueError, match=message):
        K.batch_dot(K.placeholder(sx), K.placeholder(sy), axes=axes)


@pytest.mark.parametrize(("dx", "dy"), [("float32", "float64"), ("bool", "bool")])
def test_batch_dot_dtype_errors(dx, dy):
    with pytest.raises(TypeError, match=rf"K.batch_dot: .* got {dx} and {dy}"):
        K.batch_dot(K.placeholder((None, 3), dtype=dx), K.placeholder((None, 3), dtype=dy))


def test_batch_dot_checks_dynamic_batch_sizes_at_call_time():
    x, y = K.placeholder((None, 3, 4)), K.placeholder((None, 4, 2))
    f = K.function([x, y], [K.batch_dot(x, y)])
    with pytest.raises(ValueError, match="batch sizes differ"):
        f([np.zeros((2, 3, 4), np.float32), np.zeros((3, 4, 2), np.float32)])


def test_reshapes_permutes_and_squeezes(rng):
    x = K.placeholder((None, 3, None))
    m = K.placeholder((None, None))
    s = K.placeholder((None, 1, None), dtype="int64")
    c = K.placeholder((None, 2, None))
    b = K.placeholder((None, 3, 4), dtype="bool")
    outs = [
        K.reshape(x, (-1,)),
        K.reshape(b, (-1, 12)),
        K.reshape(b, (None, 2, 6)),
        K.permute_dimensions(x, (2, 0, 1)),
        K.transpose(x),
        K.transpose(m),
        K.flatten(x),
        K.batch_flatten(x),
        K.batch_flatten(b),
        K.expand_dims(m),
        K.expand_dims(m, 0),
        K.expand_dims(m, 1),
        K.squeeze(s, 1),
        K.squeeze(K.expand_dims(m), -1),
        K.concatenate([x, c], axis=1),
        K.concatenate([x, x], axis=-1),
        K.concatenate([x, K.reverse(x, 0)], axis=0),
        K.concatenate([m]),
    ]

    def expect(a, am, as_, ac, ab):
        return [
            a.reshape(-1),
            ab.reshape(-1, 12),
            ab.reshape(-1, 2, 6),
            np.transpose(a, (2, 0, 1)),
            a.T,
            am.T,
            a.reshape(-1),
            a.reshape(len(a), -1),
            ab.reshape(len(ab), 12),
            am[:, :, None],
            am[None],
            am[:, None],
            as_[:, 0],
            am,
            np.concatenate([a, ac], axis=1),
            np.concatenate([a, a], axis=2),
            np.concatenate([a, a[::-1]], axis=0),
            am,
        ]

    dts = ["float32", "float32", "int64", "float32", "bool"]
    shapes = [[(2, 3, 4), (2, 5), (2, 1, 3), (2, 2, 4), (2, 3, 4)]]
    shapes.append([(1, 3, 1), (3, 0), (4, 1, 2), (1, 2, 1), (5, 3, 4)])
    check([x, m, s, c, b], outs, expect, [arrays(rng, sh, dts) for sh in shapes])
    assert [K.int_shape(o) for o in outs[7:13]] == [
        (None, None),
        (None, 12),
        (None, None, 1),
        (1, None, None),
        (None, 1, None),
        (None, None),
    ]


def test_dot_including_theano_nd_cases(rng):
    a = K.placeholder((2, 3))
    b3 = K.placeholder((None, 28, 3))
    d = K.placeholder((None, None, 3), dtype="float64")
    x3 = K.placeholder((2, 3, 4))
    v = K.placeholder((None, 3))
    w = np.arange(12, dtype="float32").reshape(3, 4) / 7
    y3 = (np.arange(60, dtype="float32").reshape(4, 3, 5) - 30) / 11
    z3 = (np.arange(120, dtype="float32").reshape(5, 4, 6) - 50) / 13
    vec = np.array([0.5, -1.0, 2.0], "float32")
    outs = [
        K.dot(a, w),
        K.dot(b3, w),
        K.dot(a, y3),
        K.dot(x3, z3),
        K.dot(v, vec),
        K.dot(d, K.constant(vec, dtype="float64")),
        K.dot(d, K.variable(w, dtype="float64")),
    ]

    def expect(aa, ab, ad, ax, av):
        return [
            aa @ w,
            ab @ w,
            np.einsum("ij,kjl->ikl", aa, y3),
            np.einsum("abj,cjd->abcd", ax, z3),
            av @ vec,
            ad @ vec.astype("float64"),
            ad @ w.astype("float64"),
        ]

    dts = ["float32", "float32", "float64", "float32", "float32"]
    shapes = [[(2, 3), (2, 28, 3), (2, 4, 3), (2, 3, 4), (5, 3)]]
    shapes.append([(2, 3), (1, 28, 3), (3, 1, 3), (2, 3, 4), (0, 3)])
    check([a, b3, d, x3, v], outs, expect, [arrays(rng, s, dts) for s in shapes])
    assert K.int_shape(outs[2]) == (2, 4, 5)  # the reference's Theano example
    assert K.int_shape(outs[1]) == (None, 28, 4)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda x: K.dot(x, K.placeholder((3, 2))), r"K.dot: .*contracted dims differ"),
        (lambda x: K.dot(x, K.placeholder(())), r"K.dot: expected tensors of rank >= 1"),
        (lambda x: K.expand_dims(x, 4), r"K.expand_dims: axis 4 is out of range"),
        (lambda x: K.squeeze(x, 1), r"K.squeeze: axis 1 .* has size 3, not 1"),
        (lambda x: K.permute_dimensions(x, (0, 0, 1)), r"K.permute_dimensions: perm"),
        (lambda x: K.reshape(x, (5, -1)), r"K.reshape: cannot reshape"),
        (lambda x: K.concatenate([x, K.transpose(x)]), r"K.concatenate: shapes"),
        (lambda x: K.batch_flatten(K.sum(x)), r"K.batch_flatten: expected a tensor of rank"),
        (lambda x: x[:, 5], r"K: index 5 is out of bounds for axis 1 of size 3"),
    ],
)
def test_shape_function_errors(call, message):
    with pytest.raises((ValueError, IndexError), match=message):
        call(K.placeholder((2, 3, 4)))


def test_getitem_slicing(rng):
    x = K.placeholder((2, 3, 4))
    y = K.placeholder((None, 4, None), dtype="int32")
    outs = [
        x[..., 1],
        x[:, ::-1, 1:3],
        x[-1],
        x[0, :, -2:],
        x[1:, 2, ::2],
        y[:, 1],
        y[..., 0],
        y[:, -3:-1],
        y[1:, :, -1],
        y[-2:],
        y[::-2, 1:, ::-1],
    ]

    def expect(a, b):
        return [
            a[..., 1],
            a[:, ::-1, 1:3],
            a[-1],
            a[0, :, -2:],
            a[1:, 2, ::2],
            b[:, 1],
            b[..., 0],
            b[:, -3:-1],
            b[1:, :, -1],
            b[-2:],
            b[::-2, 1:, ::-1],
        ]

    calls = [arrays(rng, [(2, 3, 4), (3, 4, 2)], ["float32", "int32"])]
    calls.append(arrays(rng, [(2, 3, 4), (1, 4, 5)], ["float32", "int32"]))
    check([x, y], outs, expect, calls)


def test_iterating_a_tensor_needs_its_first_axis_known(rng):
    """A tensor iterates as its slices along axis 0, like an array; with that axis
    unknown (or none) it is a TypeError, not Python's fallback loop over x[0], x[1], ...
    which never meets an IndexError there."""
    x = K.placeholder((2, 3))
    parts = list(x)
    assert [p.shape for p in parts] == [(3,), (3,)]
    a = rng.normal(size=(2, 3)).astype("float32")
    got = K.function([x], parts)([a])
    np.testing.assert_array_equal(got[0], a[0])
    np.testing.assert_array_equal(got[1], a[1])
    for unknown in (K.placeholder((None, 3)), K.constant(1.0)):
        with pytest.raises(TypeError, match="not known at trace time"):
            iter(unknown)
