"""A pytest plugin that runs Keras's own backend test suite against aotk.

The suite compares `keras.backend.tensorflow_backend` (and, in some tests, the Theano and
CNTK backends) with Keras's NumPy reference. None of those engines is installed, so the
names point at aotk: TensorFlow's backend module is aotk itself; Theano's and CNTK's are
copies of its namespace (other module objects, so the suite's engine-specific paths, such
as Theano's flipped convolution kernels, are not taken for aotk), without Theano's sparse
module. Keras 2.2.4's NumPy reference calls `scipy.misc.logsumexp`, which SciPy moved to
`scipy.special`; the plugin gives the reference that one name back.

The suite's random tests draw unseeded and check a sample mean within 3 standard errors,
so on any engine about one run in 200 fails by chance. aotk draws an unseeded op's seed
from NumPy's global generator (as Keras's Theano backend does), so the plugin seeds that
generator from each test's name: every run draws the same numbers.
"""

from __future__ import annotations

import os
import sys
import types
import zlib

os.environ["KERAS_BACKEND"] = "aotk.backend"

import keras.backend  # noqa: F401  (Keras loads aotk as its backend)
import numpy as np
import scipy.special

import aotk.backend


def _copy_of_aotk(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update({k: v for k, v in vars(aotk.backend).items() if k[:2] != "__"})
    return module


sys.modules["keras.backend.tensorflow_backend"] = aotk.backend
sys.modules["keras.backend.theano_backend"] = _copy_of_aotk("aotk_as_theano")
sys.modules["keras.backend.theano_backend"].th_sparse_module = None  # type: ignore[attr-defined]
sys.modules["keras.backend.cntk_backend"] = _copy_of_aotk("aotk_as_cntk")
scipy.misc = types.SimpleNamespace(logsumexp=scipy.special.logsumexp)  # type: ignore[attr-defined]


def pytest_runtest_setup(item) -> None:
    """Seeds NumPy's global generator, from which unseeded random ops draw, per test."""
    np.random.seed(zlib.crc32(item.nodeid.encode()))
