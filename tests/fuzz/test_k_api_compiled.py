"""The K API's results on odd arguments, compiled, equal the interpreter's.

Each function of `test_k_api_misuse` is called with its odd arguments; every distinct
result it traces (a tensor, or the tensors of a list) is compiled as a K.function of the
odd placeholders and run on seeded values, with the unknown dims 2, then 0, against the
interpreter. Random ops are compared by shape and dtype. The first RESULTS of each
function are compiled (13 s on two workers); `AOTK_FUZZ_COMPILE=n pytest tests/fuzz`
takes n, `AOTK_FUZZ_COMPILE=all` all of them (about 6,800 graphs, 70 s). Its first full
run found float16 chains computed in float32 (`tests/dialect/test_float16_rounding.py`),
which the first 10 a function also find.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from conftest import assert_close
from test_k_api_misuse import FUZZED, calls, odd_values

from aotk import backend as K
from aotk import interp
from aotk.dialect import trace
from aotk.dialect.trace import KTensor

SETTING = os.environ.get("AOTK_FUZZ_COMPILE", "10")
RESULTS = 10**9 if SETTING == "all" else int(SETTING)
RANDOM = {"random_normal", "random_uniform", "random_binomial", "truncated_normal", "dropout"}
RANDOM |= {"in_train_phase", "in_test_phase"}  # their default phase may draw a dropout


def _tensors(out: Any) -> list[Any]:
    if isinstance(out, list | tuple):
        return [t for item in out for t in _tensors(item)]
    return [out] if isinstance(out, KTensor) else []


def _feed(placeholder: Any, unknown: int, rng: np.random.Generator) -> np.ndarray:
    shape = [unknown if d is None else d for d in K.int_shape(placeholder)]
    dtype = K.dtype(placeholder)
    if dtype.startswith("int"):
        return rng.integers(-3, 4, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _compare(name: str, placeholders: list[Any], outputs: list[Any]) -> None:
    phase = trace.graph().learning_phase
    inputs = placeholders + ([phase] if phase is not None else [])
    try:
        f = K.function(inputs, outputs)
    except ValueError:
        return  # a fresh placeholder (`K.placeholder`'s result) is no input
    rng = np.random.default_rng(0)
    for unknown in (2, 0):
        values = [_feed(p, unknown, rng) for p in placeholders]
        values += [np.asarray(unknown == 2)] if phase is not None else []  # both phases
        try:
            got = f(values)
        except ValueError:
            continue  # the values do not fit the graph's dims (a check in the call)
        with np.errstate(all="ignore"):
            want = interp.run_module(f.module, [*values, *(c.storage for c in f.captures)])
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            if name in RANDOM:
                assert (g.shape, g.dtype) == (w.shape, w.dtype), f"{name} output {i}"
            else:
                assert_close(g, w, msg=f"{name} output {i}, unknown dims {unknown}")


def _huge(t: Any) -> bool:
    """A result of a size 2**40 asks (`K.arange(2**40)`): NumPy cannot hold it, compiled
    or interpreted, so it is only traced (`test_k_api_misuse`)."""
    return int(np.prod([d or 1 for d in K.int_shape(t)], dtype=object)) > 1 << 26


@pytest.mark.parametrize("name", FUZZED)
def test_compiled_results_equal_the_interpreters(name: str) -> None:
    fn = getattr(K, name)
    values = odd_values()
    placeholders = [v for v in values if isinstance(v, KTensor) and K.is_placeholder(v)]
    seen: set[str] = set()
    for args, kwargs in calls(fn, values):
        try:
            outputs = _tensors(fn(*args, **kwargs))
        except (ValueError, TypeError, MemoryError):  # MemoryError: a variable of 2**40
            continue
        key = repr([(K.int_shape(t), K.dtype(t)) for t in outputs]) + repr((args, kwargs))
        if not outputs or key in seen or any(_huge(t) for t in outputs):
            continue
        seen.add(key)
        _compare(name, placeholders, outputs)
        if len(seen) == RESULTS:
            return
