"""Keras 2.2.4 (next to the 2.3.1 of the test extra) trains, saves and loads on aotk."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_backend_suite import HERE, KERAS, keras_env, require


@pytest.mark.slow
def test_keras_224_program_trains_saves_and_loads(tmp_path):
    require(KERAS / "keras-2.2.4" / "keras")
    run = subprocess.run(
        [sys.executable, str(HERE / "program_224.py"), str(tmp_path / "model.h5")],
        env=keras_env("2.2.4"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["version"] == "2.2.4"
    assert result["uses_learning_phase"] is True
    assert result["loss"][-1] < 0.7 * result["loss"][0]
    assert result["acc"] > 0.7  # chance: 0.5 (the middle class)
    assert result["same_after_load"] is True
    assert result["dropout_in_fit"] > 0.0  # half the units dropped, the rest doubled
    assert result["dropout_in_predict"] == 0.0
