"""Keras's own backend test suites, of Keras 2.3.1 and 2.2.4, run against aotk.

Each suite runs in a subprocess (Keras 2.2.4 first on PYTHONPATH for its suite) with
`keras_suite_plugin`, from the copies `fetch.sh` installed. A failure outside the
explained ones (docs/keras.md) is a regression.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
KERAS = Path(sys.prefix) / "aotk-keras"

BILINEAR = {f"test_resize_images_bilinear[{f}]" for f in ("channels_first", "channels_last")}
# tests that cannot pass on any backend but Theano/TF, or whose reference is unstable
EXPLAINED = {
    "2.3.1": BILINEAR | {"test_in_top_k"},
    "2.2.4": BILINEAR | {"test_set_floatx"},
}
MIN_PASSED = {"2.3.1": 141, "2.2.4": 120}


def keras_env(version: str) -> dict[str, str]:
    """The environment of a subprocess running Keras `version` on aotk."""
    paths = [str(HERE)]
    if version == "2.2.4":
        paths.insert(0, str(KERAS / "keras-2.2.4"))
    return dict(os.environ, KERAS_BACKEND="aotk.backend", PYTHONPATH=os.pathsep.join(paths))


def require(path: Path) -> None:
    assert path.exists(), (
        f"{path} is missing: run tests/keras/fetch.sh (the README's test command does)"
    )


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2.3.1", "2.2.4"])
def test_keras_backend_suite_passes_on_aotk(version):
    suite = KERAS / f"suite-{version}"
    require(suite / "backend_test.py")
    command = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider"]
    run = subprocess.run(
        [*command, "-p", "keras_suite_plugin", "backend_test.py"],
        cwd=suite,
        env=keras_env(version),
        capture_output=True,
        text=True,
        timeout=1800,
    )
    failed = set(re.findall(r"^FAILED backend_test\.py::TestBackend::(\S+)", run.stdout, re.M))
    passed = re.search(r"(\d+) passed", run.stdout)
    assert failed <= EXPLAINED[version], run.stdout[-4000:]
    assert passed is not None and int(passed.group(1)) >= MIN_PASSED[version], run.stdout[-4000:]
