"""`aotk export FILE.py:FUNCTION`, run as a subprocess: the files, their outputs, and errors."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import aotk
from aotk.tools.export_cmd import Progress

pytestmark = pytest.mark.aot

# The builder imports a sibling module: the script's directory must be on sys.path.
MODEL = """
import numpy as np
from aotk import backend as K
from model_sizes import HIDDEN

def build():
    rng = np.random.default_rng(0)
    x = K.placeholder(shape=(None, 6), name="features")
    w1 = K.variable(rng.standard_normal((6, HIDDEN)).astype(np.float32), name="w1")
    w2 = K.variable(rng.standard_normal((HIDDEN, 3)).astype(np.float32), name="w2")
    return K.function([x], [K.softmax(K.dot(K.relu(K.dot(x, w1)), w2))])

def build_single():
    x = K.placeholder(shape=(None, 2), name="x")
    return K.function([x], K.tanh(x) * 2.0)

def build_raises():
    raise ValueError("no training data in ./data")

def build_list():
    return [1, 2]

def build_exits():
    raise SystemExit("stop")

not_callable = 42
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "model.py").write_text(textwrap.dedent(MODEL))
    (tmp_path / "model_sizes.py").write_text("HIDDEN = 16\n")
    (tmp_path / "raises_on_import.py").write_text('raise RuntimeError("boom at import")\n')
    (tmp_path / "broken.py").write_text("def build(:\n    pass\n")
    (tmp_path / "notes.txt").write_text("not python\n")
    (tmp_path / "a_file").write_text("in the way\n")
    return tmp_path


def aotk_cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "aotk.tools.cli", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def _builder(path: Path, name: str):
    """The same builder the CLI ran, imported here (so the JIT function is built here)."""
    spec = importlib.util.spec_from_file_location(f"_test_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return getattr(module, name)


def test_export_writes_a_library_that_matches_the_jit_function(project):
    done = aotk_cli(project, "export", "model.py:build", "-o", "out", "--name", "mlp")
    assert done.returncode == 0, done.stderr
    out = project / "out"
    for name in ("libmlp.so", "libmlp.a", "mlp.h", "aotk_rt.h"):
        assert (out / name).is_file(), name
    assert not (out / "mlp.weights").exists()
    assert done.stdout.split() == [str(Path("out") / n) for n in ("libmlp.so", "libmlp.a", "mlp.h")]
    assert "Traceback" not in done.stderr
    steps = done.stderr.splitlines()
    assert len(steps) >= 3 and all(line.startswith("[") and " s] " in line for line in steps)
    assert "mlp_run(aotk_model *model, const float *features" in (out / "mlp.h").read_text()

    jit = _builder(project / "model.py", "build")()
    model = aotk.load(out / "libmlp.so")
    rng = np.random.default_rng(1)
    for n in (1, 5, 64):
        xs = rng.standard_normal((n, 6)).astype(np.float32)
        want = jit([xs])
        got = model([xs])
        assert len(got) == 1 and got[0].shape == (n, 3) and got[0].dtype == np.float32
        np.testing.assert_allclose(got[0], want[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(model.get_variable("w1"), jit.captures[0].storage)


def test_export_with_external_weights_a_target_cpu_and_the_default_name(project):
    argv = ["model.py:build_single", "-o", "dist", "--weights", "external"]
    done = aotk_cli(project, "export", *argv, "--target-cpu", "x86-64-v2")
    assert done.returncode == 0, done.stderr
    assert "for CPU x86-64-v2" in (project / "dist" / "build_single.h").read_text()
    out = project / "dist"
    names = ("libbuild_single.so", "libbuild_single.a", "build_single.h", "build_single.weights")
    for name in names:
        assert (out / name).is_file(), name
    assert done.stdout.split() == [str(Path("dist") / n) for n in names]
    jit = _builder(project / "model.py", "build_single")()
    model = aotk.load(out / "libbuild_single.so", weights=out / "build_single.weights")
    xs = np.linspace(-3, 3, 14, dtype=np.float32).reshape(7, 2)
    got = model([xs])
    assert isinstance(got, np.ndarray)  # built with one output tensor, not a list
    np.testing.assert_allclose(got, jit([xs]), rtol=1e-6, atol=1e-7)


def test_export_with_an_input_shape_fixes_its_dims(project):
    argv = ["model.py:build_single", "-o", "out", "--input-shape", "x=5,?"]
    done = aotk_cli(project, "export", *argv)
    assert done.returncode == 0, done.stderr
    assert "x                float32  [5, 2]" in (project / "out" / "build_single.h").read_text()
    model = aotk.load(project / "out" / "libbuild_single.so")
    xs = np.linspace(-3, 3, 10, dtype=np.float32).reshape(5, 2)
    np.testing.assert_allclose(model([xs]), np.tanh(xs) * 2.0, rtol=1e-6)
    with pytest.raises(ValueError, match=r"input 'x' expects shape \(5, 2\), got \(4, 2\)"):
        model([xs[:4]])


ERRORS = [
    (["missing.py:build"], "missing.py: no such file"),
    (["notes.txt:build"], "notes.txt: not a Python file"),
    (["model.py"], "expected FILE.py:FUNCTION, got 'model.py'"),
    (["model.py:"], "expected FILE.py:FUNCTION, got 'model.py:'"),
    ([":build"], "expected FILE.py:FUNCTION, got ':build'"),
    (["model.py:two words"], "'two words' in 'model.py:two words' is not a Python function name"),
    (["model.py:nothere"], "model.py defines no 'nothere'"),
    (["model.py:not_callable"], "model.py: 'not_callable' is an int, not a function"),
    (
        ["raises_on_import.py:build"],
        "importing raises_on_import.py failed: RuntimeError: boom at import",
    ),
    (["broken.py:build"], "importing broken.py failed: SyntaxError: invalid syntax (line 1)"),
    (
        ["model.py:build_raises"],
        "build_raises() in model.py raised ValueError: no training data in ./data",
    ),
    (["model.py:build_exits"], "build_exits() in model.py raised SystemExit: stop"),
    (
        ["model.py:build_list"],
        "build_list() in model.py returned a list, expected a compiled K.function",
    ),
    (
        ["model.py:build_single", "--name", "my-model"],
        "aotk.export: name must be a C identifier, got 'my-model'",
    ),
    (
        ["model.py:build_single", "--target-cpu", "madeup"],
        "aotk.export: give target_features for cpu 'madeup'",
    ),
    (
        ["model.py:build_single", "--target-cpu", "x86-64", "--target-features", "avx2"],
        "aotk.export: target_features must look like '+avx2,+fma,-avx512f', got 'avx2'",
    ),
    (
        ["model.py:build_single", "--input-shape", "x:5,2"],
        "--input-shape expects NAME=DIMS, DIMS sizes or ? separated by commas",
    ),
    (
        ["model.py:build_single", "--input-shape", "x=?,3"],
        "aotk.export: input_shapes['x'] gives dim 1 size 3, but the input is (None, 2)",
    ),
]


@pytest.mark.parametrize(("argv", "message"), ERRORS, ids=[m for _, m in ERRORS])
def test_errors_are_one_line_without_a_traceback(project, argv, message):
    out_dir = ["-o", "out"] if "-o" not in argv else []
    done = aotk_cli(project, "export", *argv, *out_dir)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == f"aotk: error: {done.stderr[len('aotk: error: ') :]}"
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert message in done.stderr
    assert not (project / "out").exists() or not any((project / "out").iterdir())


def test_an_output_path_that_is_a_file_fails_before_building(project):
    done = aotk_cli(project, "export", "model.py:build_raises", "-o", "a_file")
    assert done.returncode == 1
    assert done.stderr == "aotk: error: a_file: exists and is not a directory\n"
    assert (project / "a_file").read_text() == "in the way\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["export"], "the following arguments are required: FILE.py:FUNCTION, -o/--out"),
        (["export", "model.py:build", "-o", "o", "--weights", "cloud"], "invalid choice: 'cloud'"),
    ],
)
def test_usage_errors_are_one_line(project, argv, message):
    done = aotk_cli(project, *argv)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and message in done.stderr


class _Clock:
    def __init__(self) -> None:
        self.now = 10.0

    def __call__(self) -> float:
        self.now += 1.25
        return self.now


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_logs_steps_with_elapsed_seconds():
    stream = io.StringIO()
    progress = Progress(stream, _Clock())
    progress.step("lowering")
    progress.step("linking")
    progress.close()
    assert stream.getvalue() == "[  1.2 s] lowering\n[  2.5 s] linking\n"


def test_progress_on_a_terminal_rewrites_one_line():
    stream = _Terminal()
    progress = Progress(stream, _Clock())
    progress.step("lowering")
    progress.step("linking")
    progress.close()
    assert stream.getvalue() == "\r\033[K[  1.2 s] lowering\r\033[K[  2.5 s] linking\n"


def test_export_signs_with_a_key_file_and_passes_cflags(project):
    key = project / "signing.key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef\n")
    key.chmod(0o600)
    argv = ["model.py:build_single", "-o", "signed", "--signing-key-file", str(key)]
    done = aotk_cli(project, "export", *argv, "--cflag=-g", "--cflag=-DAOTK_TEST_FLAG=1")
    assert done.returncode == 0, done.stderr
    library = project / "signed" / "libbuild_single.so"
    assert (project / "signed" / "libbuild_single.so.sig").is_file()
    model = aotk.load(library, signing_key=b"0123456789abcdef0123456789abcdef")
    xs = np.linspace(-3, 3, 14, dtype=np.float32).reshape(7, 2)
    np.testing.assert_allclose(
        model([xs]), _builder(project / "model.py", "build_single")()([xs]), rtol=1e-6
    )
    with pytest.raises(ValueError, match="does not match its signature"):
        aotk.load(library, signing_key=b"another key, sixteen bytes at least")


def test_a_key_file_others_may_read_is_refused(project):
    key = project / "open.key"
    key.write_bytes(b"0123456789abcdef0123456789abcdef")
    key.chmod(0o644)
    done = aotk_cli(project, "export", "model.py:build_single", "-o", "x", "--signing-key-file",
                    str(key))  # fmt: skip
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == f"aotk: error: {key}: the signing key is readable by others (chmod 600 it)"
    )
    assert not (project / "x").exists()
