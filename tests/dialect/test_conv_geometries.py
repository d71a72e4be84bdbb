"""Compiled == interpreted for seeded random convolution geometries.

The register-tiled conv cuts its output into lines by where each position's window
leaves the input (`kernels/conv_lines.py`); these cases draw the rank, sizes, window,
strides, dilation, padding (pads wider than the window too) and channel counts (across
the 64-channel parts and partial vector blocks) at random, half of them with a bias and
relu epilogue, and run them all in one compiled function.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from conftest import emit, placeholder, random_array, run_both

from aotk.dialect.arithmetic import AddOp, MaximumOp
from aotk.dialect.conv import ConvOp
from aotk.dialect.elementwise import ConstantOp

CASES = 16


def _attrs(rng: np.random.Generator, rank: int) -> dict[str, Any]:
    ints = lambda lo, hi: tuple(int(v) for v in rng.integers(lo, hi, rank))  # noqa: E731
    attrs: dict[str, Any] = {"strides": ints(1, 4), "dilation": ints(1, 3)}
    attrs |= {"lhs_dilation": (1,) * rank, "groups": 1}
    if rng.integers(0, 2):
        return attrs | {"padding": "same", "pad_before": (0,) * rank, "pad_after": (0,) * rank}
    return attrs | {"padding": "explicit", "pad_before": ints(0, 4), "pad_after": ints(0, 4)}


def _case(rng: np.random.Generator, i: int) -> tuple[list[Any], Any, list[tuple[int, ...]]]:
    rank = int(rng.integers(1, 4))
    window = [int(v) for v in rng.integers(1, 5, rank)]
    attrs = _attrs(rng, rank)
    sizes = [int(v) for v in rng.integers(1, 10, rank)]
    for d in range(rank):  # the dilated window must fit the padded input
        extent = (window[d] - 1) * attrs["dilation"][d] + 1
        pads = attrs["pad_before"][d] + attrs["pad_after"][d]
        sizes[d] = max(sizes[d], extent - pads)
    cin, cout = int(rng.choice([1, 3, 8, 70])), int(rng.choice([8, 12, 20, 40]))
    x = placeholder((None, *sizes, cin), "float32", f"x{i}")
    w = placeholder((*window, cin, cout), "float32", f"w{i}")
    bias = placeholder((cout,), "float32", f"bias{i}")
    y = emit(ConvOp, x, w, **attrs)
    if rng.integers(0, 2):
        zero = emit(ConstantOp, value=0.0, dtype="float32")
        y = emit(MaximumOp, emit(AddOp, y, bias), zero)
    shapes = [(2, *sizes, cin), (*window, cin, cout), (cout,)]
    return [x, w, bias], y, shapes


def test_random_conv_geometries_compiled_match_interpreted():
    rng = np.random.default_rng(23)
    inputs, outputs, arrays, scales = [], [], [], []
    for i in range(CASES):
        xs, y, shapes = _case(rng, i)
        inputs += xs
        outputs.append(y)
        arrays += [random_array(rng, s, "float32") for s in shapes]
        scales.append(10.0 * float(np.prod(shapes[1][:-1])))
    run_both(inputs, outputs, [arrays], scales=scales)


def test_small_maps_tiled_across_the_images_compiled_match_interpreted():
    # a map whose interior along its last axis holds fewer than 4 positions: each tile
    # takes one position of 4 images (conv_tile.BATCH_ROWS); batches of 4, 9 (whole
    # tiles and a remainder), 3 (no whole tile); one 64-channel part and several
    rng = np.random.default_rng(29)
    geometries = [((2, 2), 70, 40, (1, 1)), ((3, 5), 8, 20, (1, 1)), ((4, 4), 12, 16, (2, 2))]
    inputs, outputs, shapes = [], [], []
    for i, (sizes, cin, cout, strides) in enumerate(geometries):
        x = placeholder((None, *sizes, cin), "float32", f"x{i}")
        w = placeholder((3, 3, cin, cout), "float32", f"w{i}")
        bias = placeholder((cout,), "float32", f"bias{i}")
        attrs = {"strides": strides, "dilation": (1, 1), "lhs_dilation": (1, 1), "groups": 1}
        y = emit(ConvOp, x, w, padding="same", pad_before=(0, 0), pad_after=(0, 0), **attrs)
        zero = emit(ConstantOp, value=0.0, dtype="float32")
        outputs += [y, emit(MaximumOp, emit(AddOp, y, bias), zero)]
        inputs += [x, w, bias]
        shapes.append((sizes, cin, cout))
    calls = [
        [
            random_array(rng, s, "float32")
            for sizes, cin, cout in shapes
            for s in ((batch, *sizes, cin), (3, 3, cin, cout), (cout,))
        ]
        for batch in (4, 9, 3)
    ]
    scales = [10.0 * 9 * cin for _, cin, _ in shapes for _ in range(2)]
    run_both(inputs, outputs, calls, scales=scales)
