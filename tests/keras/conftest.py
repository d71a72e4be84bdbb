"""Real Keras 2 on aotk: KERAS_BACKEND is set before anything imports Keras."""

from __future__ import annotations

import os

os.environ["KERAS_BACKEND"] = "aotk.backend"
