"""Kernels wider than ctypes allows (1024 arguments) are called through a packed wrapper."""

from __future__ import annotations

import re

import numpy as np

from aotk import backend as K
from aotk import host_code
from aotk.codegen import packed_entry


def test_a_function_of_more_arguments_than_ctypes_takes_runs() -> None:
    """1030 weights, an input, two outputs: NASNetMobile's predict function has 1131."""
    weights = [K.variable(np.full(2, i, np.float32)) for i in range(1030)]
    x = K.placeholder((None, 2))
    f = K.function([x], [x * 2.0, K.concatenate(weights)])
    doubled, joined = f([np.array([[1, -1], [3, 0.5]], np.float32)])
    np.testing.assert_array_equal(doubled, [[2, -2], [6, 1]])
    np.testing.assert_array_equal(joined, np.repeat(np.arange(1030, dtype=np.float32), 2))


def test_the_wrapper_passes_pointers_and_dims_in_order(monkeypatch) -> None:
    """With the limit lowered, a small function goes through the wrapper: each argument
    (inputs, weights, outputs, workspace, dynamic dims) lands in its place."""
    monkeypatch.setattr(packed_entry, "CTYPES_MAX_ARGS", 3)
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")
    host_code.clear_cache()
    w = K.variable(np.array([10.0, 20.0, 30.0], np.float32))
    x, y = K.placeholder((None, 3)), K.placeholder((None, None))
    f = K.function([x, y], [x - w, K.sum(y, axis=1)])
    # the wrapper calls the kernel, not a copy of it
    wrapper = re.search(r"define void @main_packed\(.*?\n}", f.llvm_ir, re.S)
    assert wrapper is not None and "call void @main(" in wrapper.group(0)
    xv = np.arange(6, dtype=np.float32).reshape(2, 3)
    yv = np.arange(20, dtype=np.float32).reshape(4, 5)
    minus, sums = f([xv, yv])
    np.testing.assert_array_equal(minus, xv - [10, 20, 30])
    np.testing.assert_array_equal(sums, yv.sum(axis=1))
    host_code.clear_cache()
