"""examples/keras: train a Keras model on aotk, export it, classify from C, same accuracy."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "keras"


@pytest.mark.slow
@pytest.mark.aot
def test_keras_digits_model_classifies_from_c_as_keras_does(tmp_path):
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("needs a C compiler")
    done = subprocess.run(
        ["bash", str(EXAMPLE / "run.sh"), str(tmp_path / "build")],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.findall(
        r"^classify(?:-static)?: C accuracy: (\S+) .*, Keras accuracy: (\S+) ", done.stdout, re.M
    )
    assert len(found) == 2, done.stdout
    for c_accuracy, keras_accuracy in found:
        assert c_accuracy == keras_accuracy
        assert float(c_accuracy) > 0.9  # ten classes: chance is 0.1
