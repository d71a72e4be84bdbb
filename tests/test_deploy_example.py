"""examples/deploy: train in Python, export, classify from C; both report one accuracy."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.aot]

DEPLOY = Path(__file__).resolve().parent.parent / "examples" / "deploy"
ACCURACY = re.compile(r"^accuracy: (\d\.\d{4}) \((\d+)/(\d+)\)$")


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    if shutil.which(os.environ.get("CC", "cc")) is None:
        pytest.skip("needs a C compiler")
    out = tmp_path_factory.mktemp("deploy") / "build"
    done = subprocess.run(
        ["bash", str(DEPLOY / "run.sh"), str(out)],
        env={**os.environ, "PYTHON": sys.executable},
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout


def test_c_and_python_report_the_same_accuracy_well_above_chance(deployed):
    out, log = deployed
    python_line = (out / "python_accuracy.txt").read_text().strip()
    c_lines = [line.removeprefix("C      ") for line in log.splitlines() if line.startswith("C ")]
    assert c_lines == [python_line, python_line]  # shared and static library
    match = ACCURACY.match(python_line)
    assert match is not None, python_line
    accuracy, correct, total = float(match[1]), int(match[2]), int(match[3])
    assert total == 1000 and correct / total == pytest.approx(accuracy, abs=5e-5)
    assert accuracy > 0.85  # four classes: chance is 0.25
    assert "OK: the exported C model and aotk in Python agree" in log


def test_training_loss_falls(deployed):
    _, log = deployed
    losses = [float(m[1]) for m in re.finditer(r"^epoch +\d+: loss (\S+)$", log, re.M)]
    assert len(losses) >= 5 and losses[-1] < 0.3 * losses[0]


def test_the_static_build_needs_no_aotk_library_at_run_time(deployed, tmp_path):
    out, _ = deployed
    lonely = tmp_path / "classify-static"
    shutil.copy(out / "classify-static", lonely)
    done = _classify(lonely, out / "test_set.bin")
    assert done.returncode == 0 and done.stdout == (out / "python_accuracy.txt").read_text()


def test_test_set_file_matches_its_documented_format(deployed):
    out, _ = deployed
    data = (out / "test_set.bin").read_bytes()
    assert data[:4] == b"ATS1"
    n, features, classes = struct.unpack_from("<3i", data, 4)
    assert (n, features, classes) == (1000, 16, 4)
    assert len(data) == 16 + 4 * n * features + 4 * n
    labels = np.frombuffer(data, "<i4", offset=16 + 4 * n * features)
    assert set(labels.tolist()) == {0, 1, 2, 3}


def _classify(program: Path, *args: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(program), *map(str, args)], capture_output=True, text=True, check=False
    )


def _test_set(n: int, features: int, classes: int, labels: list[int]) -> bytes:
    head = b"ATS1" + struct.pack("<3i", n, features, classes)
    return head + np.zeros((n, features), "<f4").tobytes() + np.array(labels, "<i4").tobytes()


def test_classify_rejects_bad_input_with_one_clear_line(deployed, tmp_path):
    out, _ = deployed
    good = (out / "test_set.bin").read_bytes()
    cases = {
        "missing.bin": (None, "cannot open {path}: No such file or directory"),
        "short.bin": (good[:10], "{path}: file too short for a test set header (16 bytes)"),
        "cut.bin": (good[:5000], "{path}: file too short: the features are incomplete"),
        "nolabels.bin": (good[:-8], "{path}: file too short: the labels are incomplete"),
        "magic.bin": (b"XXXX" + good[4:], "{path}: not a test set (bad magic)"),
        "trailing.bin": (good + b"\0", "{path}: unexpected bytes after the labels"),
        "label.bin": (_test_set(2, 16, 4, [0, 7]), "{path}: label 7 of sample 1 is not in [0, 4)"),
        "header.bin": (
            b"ATS1" + struct.pack("<3i", -2, 16, 4),
            "{path}: implausible header: n=-2 features=16 classes=4",
        ),
        "features.bin": (
            _test_set(3, 20, 4, [0, 1, 2]),
            "input 'features' dim 1: expected 16, got 20",
        ),
        "classes.bin": (
            _test_set(3, 16, 3, [0, 1, 2]),
            "the model gives 4 values per sample, the test set has 3 classes",
        ),
    }
    for name, (content, message) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        done = _classify(out / "classify", path)
        assert done.returncode == 1, name
        assert done.stdout == "", name
        assert done.stderr.startswith("classify: ") and done.stderr.count("\n") == 1, name
        assert message.format(path=path) in done.stderr, name


def test_classify_reports_aotk_errors(deployed, tmp_path):
    out, _ = deployed
    done = _classify(out / "classify", out / "test_set.bin", tmp_path / "none.weights")
    assert done.returncode == 1
    assert done.stderr.startswith("classify: mlp_create failed: ")
    assert "none.weights" in done.stderr and done.stderr.count("\n") == 1
    usage = _classify(out / "classify")
    assert usage.returncode == 1 and "usage:" in usage.stderr
