"""Helpers of the export tests: small models, exporting them, building C programs."""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aotk import backend as K

C_DIR = Path(__file__).resolve().parent / "c"


def c_compiler() -> str:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    return cc


def build_c(source: Path, lib_dir: Path, lib: str, out: Path, extra: tuple[str, ...] = ()) -> Path:
    """Compile a C test program against lib<lib>.so in `lib_dir`."""
    cmd = [c_compiler(), "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", *extra, str(source)]
    cmd += [f"-I{lib_dir}", f"-L{lib_dir}", f"-l{lib}", f"-Wl,-rpath,{lib_dir}", "-lm", "-lpthread"]
    subprocess.run([*cmd, "-o", str(out)], check=True, capture_output=True, text=True)
    return out


def skip_without_sanitizers(tmp: Path, flags: tuple[str, ...]) -> None:
    """Skip the test unless the C compiler builds, and this machine runs, with `flags`."""
    probe = tmp / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    exe = tmp / "probe"
    if subprocess.run([c_compiler(), *flags, str(probe), "-o", str(exe)]).returncode:
        pytest.skip(f"the C compiler cannot build with {flags[0]} here")
    if subprocess.run([str(exe)], capture_output=True).returncode:
        pytest.skip(f"{flags[0]} programs do not run on this machine")


def linear_model(rng: np.random.Generator, n_in: int, n_out: int, activation: Any = K.tanh) -> Any:
    """x, m: float32 [?, n_in] (tied on dim 0) -> activation((x * m) @ W + b)."""
    x = K.placeholder(shape=(None, n_in), name="x")
    m = K.placeholder(shape=(None, n_in), name="m")
    W = K.variable(rng.standard_normal((n_in, n_out)).astype(np.float32), name="W")
    b = K.variable(rng.standard_normal(n_out).astype(np.float32), name="b")
    return K.function([x, m], [activation(K.dot(x * m, W) + b)])


def mlp(rng: np.random.Generator, sizes: tuple[int, ...]) -> Any:
    x = K.placeholder(shape=(None, sizes[0]), name="x")
    h = x
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        W = K.variable((rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32), name=f"W{i}")
        h = K.dot(h, W)
        h = K.tanh(h) if i < len(sizes) - 2 else K.softmax(h)
    return K.function([x], h)
