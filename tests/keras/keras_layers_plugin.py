"""A pytest plugin that runs Keras 2.3.1's own layer, activation and loss tests on aotk.

Keras's conftest clears the session after each test on TensorFlow and CNTK only; on aotk
it is cleared too, so that a test that fixes the learning phase (normalization_test's
`K.set_learning_phase(1)`) does not change the ones after it. Unseeded draws are seeded
from each test's name, as in `keras_suite_plugin`.
"""

from __future__ import annotations

import os
import zlib

os.environ["KERAS_BACKEND"] = "aotk.backend"

import keras.backend  # noqa: F401  (Keras loads aotk as its backend)
import numpy as np

import aotk.backend


def pytest_runtest_setup(item) -> None:
    np.random.seed(zlib.crc32(item.nodeid.encode()))


def pytest_runtest_teardown(item) -> None:
    aotk.backend.clear_session()
