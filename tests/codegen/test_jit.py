"""JIT lifetime: compiled modules can be dropped and compiled again safely."""

from __future__ import annotations

import gc

import numpy as np

from aotk import backend as K
from aotk import host_code


def test_compile_after_dropping_compiled_modules():
    # Regression: a cached target machine was freed with the first MCJIT engine that
    # owned it, so the next compilation crashed.
    for scale in range(4):
        x = K.placeholder(shape=(3,))
        f = K.function([x], [K.exp(x) * float(scale)])
        np.testing.assert_allclose(f([np.ones(3)])[0], np.full(3, np.e * scale), rtol=1e-6)
        del f
        host_code.clear_cache()
        gc.collect()
