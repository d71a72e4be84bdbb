"""Exported libraries at run time: CPU checks, threads, sanitizers, dynamic-dim rules."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from export_helpers import C_DIR, build_c, mlp, skip_without_sanitizers

import aotk
from aotk import backend as K
from aotk.aot import build, glue
from aotk.aot.cgen import CHECKABLE_FEATURES, CPUID_FEATURES, X86_64_BASELINE
from aotk.codegen import llvm_ir
from aotk.dialect.debug import format_tensor

pytestmark = pytest.mark.aot


def _missing_feature() -> str | None:
    host = llvm_ir.host_features().split(",")
    return next((f for f in CHECKABLE_FEATURES if f"-{f}" in host), None)


def test_library_for_missing_cpu_features_refuses_to_load(tmp_path: Path) -> None:
    feature = _missing_feature()
    if feature is None:
        pytest.skip("this CPU has every feature the runtime can check")
    f = mlp(np.random.default_rng(0), (4, 2))
    exported = aotk.export(
        f, tmp_path, "far", target_cpu="x86-64-v2", target_features=f"+{feature}"
    )
    assert feature in exported.header.read_text()
    with pytest.raises(ValueError, match=f"this CPU lacks '{feature}'.*status 15"):
        aotk.load(exported.library)


def test_portable_build_runs_and_matches(tmp_path: Path) -> None:
    f = mlp(np.random.default_rng(1), (9, 17, 3))
    g = aotk.load(aotk.export(f, tmp_path, "v2", target_cpu="x86-64-v2").library)
    x = np.random.default_rng(2).standard_normal((11, 9)).astype(np.float32)
    np.testing.assert_allclose(g([x]), f([x]), rtol=1e-6, atol=1e-7)


def test_a_loaded_model_runs_on_as_many_threads_as_the_process(tmp_path: Path) -> None:
    """aotk.load's default is the count `aotk.set_num_threads` gave; n_threads overrides
    it. The pool sizes a model's values do not depend on."""
    f = mlp(np.random.default_rng(1), (9, 17, 3))
    library = aotk.export(f, tmp_path, "threads").library
    x = np.random.default_rng(2).standard_normal((11, 9)).astype(np.float32)
    before = aotk.get_num_threads()
    try:
        for n in (1, 3):
            aotk.set_num_threads(n)
            g = aotk.load(library)
            assert g.threads == n
            np.testing.assert_array_equal(g([x]), f([x]))
        assert aotk.load(library, n_threads=2).threads == 2
    finally:
        aotk.set_num_threads(before)


def test_bad_target_options_are_clear_errors(tmp_path: Path) -> None:
    f = mlp(np.random.default_rng(0), (4, 2))
    with pytest.raises(ValueError, match="give target_features for cpu 'znver9'"):
        aotk.export(f, tmp_path, "t", target_cpu="znver9")
    with pytest.raises(ValueError, match=r"must look like '\+avx2"):
        aotk.export(f, tmp_path, "t", target_features="avx2")
    with pytest.raises(ValueError, match="name must be a C identifier"):
        aotk.export(f, tmp_path, "3d-model")
    with pytest.raises(TypeError, match=r"must be a compiled K\.function"):
        aotk.export(lambda x: x, tmp_path, "t")
    with pytest.raises(ValueError, match="unknown CPU feature 'foo'"):
        aotk.export(f, tmp_path, "t", target_features="+sse2,+foo")
    with pytest.raises(ValueError, match="could not check when it loads that a CPU has 'sha'"):
        aotk.export(f, tmp_path, "t", target_cpu="x86-64-v3", target_features="+sha")
    assert not any(tmp_path.iterdir())  # nothing written half-way


def test_every_feature_the_code_may_use_is_checked_when_it_loads(tmp_path: Path) -> None:
    """A level's features that __builtin_cpu_supports cannot name are read from CPUID;
    the host's own features that no check covers are switched off for an export."""
    level = build.X86_LEVELS["x86-64-v3"]
    check = glue._cpu_check(SimpleNamespace(features=list(level)))  # type: ignore[arg-type]
    for feature in level:
        assert f'return "{feature}"' in check
    for feature in ("movbe", "xsave", "f16c", "lzcnt", "cx16", "sahf"):
        assert "cpuid_bit(" in check and f'return "{feature}"' in check
    f = mlp(np.random.default_rng(0), (4, 2))
    v3 = aotk.export(f, tmp_path / "v3", "v3", target_cpu="x86-64-v3")
    np.testing.assert_allclose(
        aotk.load(v3.library)([np.ones((3, 4), np.float32)]),
        f([np.ones((3, 4), np.float32)]),
        rtol=1e-6,
    )
    _, features, needed = build.resolve_target(None, None, "test")
    checkable = {*CHECKABLE_FEATURES, *CPUID_FEATURES, *X86_64_BASELINE}
    assert set(needed) <= checkable
    assert all(f[1:] in checkable for f in features.split(",") if f.startswith("+"))


@pytest.fixture(scope="module")
def concurrent_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("conc")
    f = mlp(np.random.default_rng(3), (16, 64, 8))
    lib = aotk.export(f, root, "conc", target_cpu="x86-64-v3")
    return build_c(C_DIR / "concurrent.c", lib.library.parent, "conc", root / "concurrent")


@pytest.mark.parametrize("threads", [1, 2])
def test_four_threads_get_the_sequential_results(concurrent_program: Path, threads: int) -> None:
    done = subprocess.run([str(concurrent_program), str(threads)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": 0 mismatches, status 0") == 4 and "all equal" in done.stdout


@pytest.mark.slow
def test_concurrent_runs_under_address_and_ub_sanitizers(tmp_path: Path) -> None:
    flags = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g")
    skip_without_sanitizers(tmp_path, flags)
    f = mlp(np.random.default_rng(4), (16, 24, 8))
    lib = aotk.export(f, tmp_path / "lib", "conc", target_cpu="x86-64-v3", cflags=flags)
    exe = build_c(C_DIR / "concurrent.c", lib.library.parent, "conc", tmp_path / "c", flags)
    done = subprocess.run([str(exe), "2"], capture_output=True, text=True)
    assert done.returncode == 0 and "all equal" in done.stdout, done.stdout + done.stderr[-3000:]
    assert "ERROR: AddressSanitizer" not in done.stderr, done.stderr[-3000:]
    assert "runtime error" not in done.stderr, done.stderr[-3000:]


def test_tied_and_minimum_dims_are_checked(tmp_path: Path) -> None:
    x = K.placeholder(shape=(None, None, 2), name="img")
    k = K.variable(np.ones((3, 2, 4), np.float32), name="k")
    y = K.conv1d(x, k, padding="valid")
    z = K.placeholder(shape=(None, 1, 4), name="z")
    f = K.function([x, z], [y + z])
    g = aotk.load(aotk.export(f, tmp_path, "conv").library)
    header = (tmp_path / "conv.h").read_text()
    assert "img dim 1: 3..2147483647" in header
    assert "z dim 0: 0..2147483647, equal to img dim 0" in header
    xv = np.random.default_rng(5).standard_normal((2, 7, 2)).astype(np.float32)
    zv = np.ones((2, 1, 4), np.float32)
    np.testing.assert_allclose(g([xv, zv]), f([xv, zv]), rtol=1e-6)
    with pytest.raises(ValueError, match=r"input 'img' dim 1 is 2, outside \[3, "):
        g([xv[:, :2], zv])
    with pytest.raises(ValueError, match="input 'z' dim 0 is 3 but must equal input 'img' dim 0"):
        g([xv, np.ones((3, 1, 4), np.float32)])


def test_a_dim_tied_through_a_later_input_is_found(tmp_path: Path) -> None:
    """t's batch dim meets x's only where w (a later input) scales their rows: moved
    alone with x's, it still mismatches w's, so the tie is found with w's in the set."""
    rng = np.random.default_rng(6)
    x = K.placeholder(shape=(None, 4), name="x")
    t = K.placeholder(shape=(None, 3), name="t")
    w = K.placeholder(shape=(None,), name="w")
    W = K.variable(rng.standard_normal((4, 3)).astype(np.float32), name="W")
    f = K.function([x, t, w], [K.sum(K.square(K.dot(x, W) - t), axis=-1) * w])
    g = aotk.load(aotk.export(f, tmp_path, "weighted").library)
    header = (tmp_path / "weighted.h").read_text()
    assert "t dim 0: 0..2147483647, equal to x dim 0" in header
    assert "w dim 0: 0..2147483647, equal to x dim 0" in header
    xv, tv = rng.standard_normal((5, 4)), rng.standard_normal((5, 3))
    args = [xv.astype(np.float32), tv.astype(np.float32), np.arange(5, dtype=np.float32)]
    want = np.sum(np.square(xv @ K.get_value(W) - tv), axis=-1) * np.arange(5)
    (got,) = g(args)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(ValueError, match="input 'w' dim 0 is 4 but must equal input 'x' dim 0"):
        g([*args[:2], args[2][:4]])


def test_a_first_dim_that_only_broadcasts_is_refused(tmp_path: Path) -> None:
    """y's batch dim may be 1 or x's 4, nothing else: it cannot vary, and the library
    must not take it as free (it did, and a batch of 5 read past y's rows' products)."""
    x = K.placeholder(shape=(4, 3), name="x")
    y = K.placeholder(shape=(None, 3), name="y")
    f = K.function([x, y], [x * y])
    with pytest.raises(ValueError, match="dynamic dim 0 of input 'y' is tied to the others"):
        aotk.export(f, tmp_path, "broadcast")


def test_input_shapes_fix_dims_and_the_dims_tied_to_them_must_be_given_too(
    tmp_path: Path,
) -> None:
    x = K.placeholder(shape=(None, 3), name="x")
    y = K.placeholder(shape=(None, 3), name="y")
    f = K.function([x, y], [x * y + 1.0])
    with pytest.raises(ValueError, match=r"dim 0 of input 'y' is tied.*static size"):
        aotk.export(f, tmp_path / "x_only", "fixed", input_shapes={"x": (4, 3)})
    exported = aotk.export(f, tmp_path, "fixed", input_shapes={"x": (4, None), "y": (4, 3)})
    header = exported.header.read_text()
    assert "x                float32  [4, 3]" in header and "dim 0:" not in header
    assert "const float *x, const float *y, float *out0" in header
    g = aotk.load(exported.library)
    xv, yv = np.full((4, 3), 2.0, np.float32), np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(g([xv, yv])[0], xv * yv + 1.0)
    with pytest.raises(ValueError, match=r"input 'y' expects shape \(4, 3\), got \(5, 3\)"):
        g([xv, np.ones((5, 3), np.float32)])


def test_a_keras_training_step_trains_from_c_like_keras(tmp_path: Path) -> None:
    """A C program trains through the typed entry point (no class-dim argument for the
    targets) and gets Keras's losses; targets of another batch are refused."""
    import keras
    from keras import layers

    model = keras.models.Sequential(
        [
            layers.Dense(8, activation="relu", input_shape=(4,), name="hidden"),
            layers.Dense(3, activation="softmax", name="out"),
        ]
    )
    model.compile(keras.optimizers.SGD(lr=0.1), "categorical_crossentropy")
    lib = aotk.export(model, tmp_path / "lib", "kstep", step="train")
    exe = build_c(C_DIR / "keras_step.c", lib.library.parent, "kstep", tmp_path / "kstep")
    done = subprocess.run([str(exe)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = np.arange(8)[:, None]
    x = ((7 * rows + 3 * np.arange(4)) % 5 - 2).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[np.arange(8) % 3]
    want = [model.train_on_batch(x, y) for _ in range(4)]
    got = [float(line.split()[1]) for line in done.stdout.splitlines() if line.startswith("loss")]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert "ok   targets of another batch" in done.stdout


@pytest.mark.aot
def test_exported_print_tensor_prints_the_c_layout_to_c_stdout(tmp_path: Path, capfd) -> None:
    x = K.placeholder(shape=(None, 2), name="x")
    flags = K.cast(K.greater(x, 0.0), "bool")
    fn = K.function([x], [K.print_tensor(x, "x=") * 2.0, K.print_tensor(flags, "flags=")])
    loaded = aotk.load(aotk.export(fn, tmp_path, "printing").library)
    value = np.array([[1.0, 0.5], [-2.0, 1e-7]], np.float32)
    capfd.readouterr()
    doubled, _ = loaded([value])
    np.testing.assert_array_equal(doubled, 2.0 * value)
    lines = capfd.readouterr().out
    assert lines == format_tensor(value, "x=") + format_tensor(value > 0, "flags=")
    assert lines.splitlines()[0] == "x=[[1 0.5][-2 1e-07]]"
    loaded([np.zeros((0, 2), np.float32)])
    assert capfd.readouterr().out == "x=[]\nflags=[]\n"


def test_dims_whose_sizes_overflow_are_refused_by_the_c_api(tmp_path: Path) -> None:
    x = K.placeholder(shape=(None, None), name="x")
    f = K.function([x], [K.softmax(K.dot(K.transpose(x), x))])
    lib = aotk.export(f, tmp_path / "lib", "big")
    assert "AOTK_ERR_SIZE = 19" in (lib.library.parent / "aotk_rt.h").read_text()
    exe = build_c(C_DIR / "size_overflow.c", lib.library.parent, "big", tmp_path / "size_overflow")
    done = subprocess.run([str(exe)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.count("ok  ") == 9, done.stdout


def test_the_jit_refuses_dims_whose_workspace_overflows() -> None:
    x = K.placeholder(shape=(None, None), name="x")
    f = K.function([x], [K.softmax(K.dot(K.transpose(x), x))])
    assert f._ws_size(2, 3) > 0
    # the plan's sizes are checked, not wrapped: 2**62 bytes, and 2**64 wrapping to 0
    assert f._ws_size(1, 2**30) == -1
    assert f._ws_size(1, 2**32) == -1
    plan = f._caller
    with pytest.raises(ValueError, match=r"size overflows: the workspace for dynamic dims \[1, "):
        plan._workspace_bytes([1, 2**30])
