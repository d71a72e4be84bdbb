"""aotk.export / aotk.load: the exported library computes what the JIT function does."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from export_helpers import C_DIR, build_c, linear_model, mlp, skip_without_sanitizers

import aotk
from aotk import backend as K

pytestmark = pytest.mark.aot


@pytest.fixture(scope="module")
def exported_mlp(tmp_path_factory: pytest.TempPathFactory):
    rng = np.random.default_rng(1)
    # 48 wide: a whole packed sliver of AVX2 tiles (2 x 8) and of AVX-512 ones (3 x 16)
    f = mlp(rng, (12, 48, 16, 5))
    out = tmp_path_factory.mktemp("mlp")
    return f, aotk.export(f, out, "mlp"), out


@pytest.mark.parametrize("batch", [0, 1, 7, 64])
def test_loaded_library_matches_jit(exported_mlp, batch: int) -> None:
    f, exported, _ = exported_mlp
    g = aotk.load(exported.library)
    x = np.random.default_rng(batch).standard_normal((batch, 12)).astype(np.float32)
    want, got = f([x]), g([x])
    assert f._packs  # the JIT and the library read packed copies of the weights
    assert got.shape == (batch, 5) and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_exported_files_and_header(exported_mlp) -> None:
    _, exported, out = exported_mlp
    assert {p.name for p in out.iterdir()} == {"libmlp.so", "libmlp.a", "mlp.h", "aotk_rt.h"}
    header = exported.header.read_text()
    assert "0  x                float32  [?, 12]" in header
    assert "0  out0             float32  [?, 5]" in header
    assert "W0                       float32  [12, 48]" in header
    assert "aotk_status mlp_run(aotk_model *model, const float *x, int64_t x_dim0, " in header
    assert "may run from several threads at once" in header


def test_the_library_links_its_own_hidden_copy_of_each_micro_kernel(exported_mlp) -> None:
    """Two exported models in one process must not share (or clash on) a micro-kernel."""
    _, exported, _ = exported_mlp
    lib = ctypes.CDLL(str(exported.library))
    # the dense layers' kernel, on packed weights, and the packer the runtime calls
    for kernel in ("aotk_uk_matmul_float32_prepacked", "aotk_uk_pack_rhs_float32"):
        symbol = f"aotk_mlp_{kernel}"
        assert symbol.encode() in exported.library.read_bytes()
        assert symbol.encode() in exported.static_library.read_bytes()
        assert not hasattr(lib, symbol) and not hasattr(lib, kernel)


def test_a_failing_c_compile_is_reported_and_writes_nothing(tmp_path: Path) -> None:
    """The runtime's sources compile at once, on every CPU; the first failing one, in
    source order, is the error, and the output directory stays empty."""
    f = mlp(np.random.default_rng(2), (4, 3))
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match=r"aotk\.export: compiling aotk_rt\.c failed: .*"):
        aotk.export(f, out, "bad", cflags=["-fno-such-option-anywhere"])
    assert list(out.iterdir()) == []


def test_a_library_compiled_in_parts_renames_each_part_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large model's code is optimized and emitted in parts on several cores, its
    entry points in a quick part of their own; each part declares the functions of the
    others under the library's prefix, hidden, so the C linker joins them."""
    from aotk.codegen import llvm_split

    monkeypatch.setattr(llvm_split, "parts_for", lambda text: 2)
    monkeypatch.setattr(llvm_split, "_parts", lambda chars: 2)
    monkeypatch.setattr(llvm_split, "QUICK_GLUE_CHARS", 0)
    exported_parts: list[list[bool]] = []
    compile_parts = llvm_split.compile_parts

    def spy(pieces: list[llvm_split.Piece], *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("prefix") and not pieces[0].optimized:  # the export's model code
            exported_parts.append([p.quick for p in pieces])
        return compile_parts(pieces, *args, **kwargs)

    monkeypatch.setattr(llvm_split, "compile_parts", spy)
    f = mlp(np.random.default_rng(2), (12, 48, 16, 5))
    exported = aotk.export(f, tmp_path, "parts")
    assert exported_parts == [[True, False, False]]
    x = np.random.default_rng(3).standard_normal((9, 12)).astype(np.float32)
    np.testing.assert_array_equal(aotk.load(exported.library)([x]), f([x]))
    lib = ctypes.CDLL(str(exported.library))
    for name in ("main", "main_workspace_size"):
        assert f"aotk_parts_{name}".encode() in exported.static_library.read_bytes()
        assert not hasattr(lib, f"aotk_parts_{name}") and not hasattr(lib, name)


def test_a_recurrent_model_links_the_prepacked_matmul_and_predicts_like_jit(tmp_path: Path) -> None:
    """A scan packs its recurrent weight once per call (`pack_rhs`) and multiplies by the
    packed copy at each step (`matmul_prepacked`): the library has its own copies of both,
    and gives the JIT's values for any batch."""
    rng = np.random.default_rng(3)
    x = K.placeholder(shape=(None, 6, 5), name="x")
    w = K.variable((rng.standard_normal((5, 20)) * 0.3).astype(np.float32), name="w")
    u = K.variable((rng.standard_normal((20, 20)) * 0.3).astype(np.float32), name="u")

    def step(x_t: Any, states: list[Any]) -> tuple[Any, list[Any]]:
        h = K.tanh(K.dot(x_t, w) + K.dot(states[0], u))
        return h, [h]

    last, _, _ = K.rnn(step, x, [K.zeros_like(K.dot(x[:, 0], w))])
    f = K.function([x], [last])
    exported = aotk.export(f, tmp_path, "rnn")
    for kernel in ("pack_rhs_float32", "matmul_float32_prepacked"):
        assert f"aotk_rnn_aotk_uk_{kernel}".encode() in exported.library.read_bytes()
    g = aotk.load(exported.library)
    for batch in (1, 9):
        xs = rng.standard_normal((batch, 6, 5)).astype(np.float32)
        np.testing.assert_array_equal(g([xs])[0], f([xs])[0])


def test_random_samples_come_from_the_librarys_own_micro_kernels(tmp_path: Path) -> None:
    """Dropout and a truncated normal draw the JIT's numbers, from the same state, call
    after call: the library links the sampling micro-kernels and keeps its state."""
    x = K.placeholder((None, 13))
    outs = [K.dropout(x, 0.5), K.truncated_normal(K.shape(x), stddev=2.0)]
    f = K.function([x], outs)
    exported = aotk.export(f, tmp_path, "noisy")
    for kernel in ("random_uniform_float32", "random_truncated_normal_float32"):
        assert f"aotk_noisy_aotk_uk_{kernel}".encode() in exported.library.read_bytes()
    g = aotk.load(exported.library)
    xs = np.ones((7, 13), np.float32)
    first = g([xs])
    for got, want in zip(first, f([xs]), strict=True):
        np.testing.assert_array_equal(got, want)
    second = g([xs])
    for got, want, before in zip(second, f([xs]), first, strict=True):
        np.testing.assert_array_equal(got, want)
        assert not np.array_equal(got, before)


def test_set_variable_packs_the_weight_again(tmp_path: Path) -> None:
    """The library reads a packed copy of a weight it does not write, made when the model
    is created and again by aotk_model_set_variable; a row or two read the weight."""
    rng = np.random.default_rng(3)
    x = K.placeholder((None, 12))
    w = K.variable(rng.standard_normal((12, 64)).astype(np.float32), name="w")
    f = K.function([x], [K.dot(x, w)])
    assert [(p.kdim, p.n) for p in f._packs] == [(12, 64)]
    g = aotk.load(aotk.export(f, tmp_path, "dense").library)
    xs = rng.standard_normal((9, 12)).astype(np.float32)
    np.testing.assert_allclose(g([xs])[0], xs @ K.get_value(w), rtol=1e-5, atol=1e-5)
    for value in (rng.standard_normal((12, 64)), np.zeros((12, 64))):
        g.set_variable("w", value.astype(np.float32))
        for rows in (xs, xs[:1]):
            np.testing.assert_allclose(g([rows])[0], rows @ value, rtol=1e-5, atol=1e-5)


def test_embedded_weights_are_one_hidden_read_only_aligned_symbol(tmp_path: Path) -> None:
    """The assembler includes the weights file as it is (`build.weights_source`): the
    symbol holds exactly its bytes, 64-byte aligned, local to the library."""
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    f = mlp(np.random.default_rng(2), (6, 4))
    external = aotk.export(f, tmp_path / "ext", "m", weights="external").weights
    embedded = aotk.export(f, tmp_path / "emb", "m")
    listed = subprocess.run([nm, "-S", str(embedded.library)], capture_output=True, text=True)
    symbols = {line.split()[-1]: line.split()[:-1] for line in listed.stdout.splitlines()}
    address, size, kind = symbols["aotk_m_weights"]
    assert external is not None and int(size, 16) == external.stat().st_size
    assert int(address, 16) % 64 == 0 and kind == "r"
    assert symbols["aotk_m_weights_size"][2] == "r"
    x = np.linspace(-1, 1, 18, dtype=np.float32).reshape(3, 6)
    np.testing.assert_array_equal(aotk.load(embedded.library)([x]), f([x]))


def test_exports_are_byte_identical(tmp_path: Path) -> None:
    f = mlp(np.random.default_rng(2), (6, 4))
    a = aotk.export(f, tmp_path / "a", "m", weights="external")
    aotk.export(f, tmp_path / "b", "m", weights="external")
    for name in ("libm.so", "libm.a", "m.h", "m.weights"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert a.weights is not None and a.weights.stat().st_size % 64 == 0


def test_external_weights_are_needed_and_used(tmp_path: Path) -> None:
    f = mlp(np.random.default_rng(3), (6, 4))
    exported = aotk.export(f, tmp_path, "ext", weights="external")
    with pytest.raises(
        ValueError, match=r"exported with external weights; set options\.weights_path"
    ):
        aotk.load(exported.library)
    g = aotk.load(exported.library, weights=exported.weights)
    x = np.ones((3, 6), np.float32)
    np.testing.assert_array_equal(g([x]), f([x]))


def test_training_step_updates_weights_inside_the_model(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    x = K.placeholder(shape=(None, 5), dtype="float64", name="x")
    t = K.placeholder(shape=(None, 3), dtype="float64", name="t")
    W = K.variable(rng.standard_normal((5, 3)) * 0.1, dtype="float64", name="W")
    loss = K.mean(K.categorical_crossentropy(t, K.softmax(K.dot(x, W))))
    (g,) = K.gradients(loss, [W])
    step = K.function([x, t], [loss], updates=[K.update_sub(W, 0.5 * g)])
    exported = aotk.export(step, tmp_path, "train")
    assert "run one at a time" in exported.header.read_text()
    native = aotk.load(exported.library)
    xs = rng.standard_normal((8, 5))
    ts = np.eye(3)[rng.integers(0, 3, 8)]
    losses = []
    for _ in range(5):
        want = step([xs, ts])
        losses.append(native([xs, ts]))
        np.testing.assert_allclose(losses[-1], want, rtol=1e-12)
    np.testing.assert_allclose(native.get_variable("W"), K.get_value(W), rtol=1e-12)
    assert losses[-1][0] < losses[0][0]
    native.set_variable("W", np.zeros((5, 3)))
    np.testing.assert_allclose(native([xs, ts])[0], np.log(3.0), rtol=1e-12)


def test_static_library_links_into_a_c_program(tmp_path: Path, exported_mlp) -> None:
    f, exported, out = exported_mlp
    source = tmp_path / "main.c"
    source.write_text(
        '#include <stdio.h>\n#include "mlp.h"\n'
        "int main(void) {\n"
        "  aotk_model *m; float x[2 * 12], y[2 * 5];\n"
        "  for (int i = 0; i < 24; i++) x[i] = (float)i / 24.0f;\n"
        "  if (mlp_create(&m, NULL) || mlp_run(m, x, 2, y, 10)) {\n"
        "    puts(aotk_last_error()); return 1;\n  }\n"
        '  for (int i = 0; i < 10; i++) printf("%.9g\\n", y[i]);\n'
        "  aotk_model_destroy(m);\n  return 0;\n}\n"
    )
    exe = tmp_path / "main"
    cc = build_c.__globals__["c_compiler"]()
    subprocess.run(
        [cc, "-std=c99", str(source), f"-I{out}", str(exported.static_library), "-lm",
         "-lpthread", "-o", str(exe)],
        check=True,
    )  # fmt: skip
    printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    x = (np.arange(24, dtype=np.float32) / 24).reshape(2, 12)
    np.testing.assert_allclose(np.array(printed.split(), np.float32).reshape(2, 5), f([x]))


@pytest.fixture(scope="module")
def error_paths(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """The error-path program built against model 'errs', and its weights-file arguments.

    The model is built for x86-64-v3 (AVX2), a portable target valgrind can run: it
    reports no AVX-512, so a host build would (rightly) refuse to load under it."""
    return _build_error_paths(tmp_path_factory.mktemp("errs"), ())


def _build_error_paths(root: Path, flags: tuple[str, ...]) -> tuple[Path, list[str]]:
    """error_paths.c and model 'errs', both compiled with `flags`, in `root`."""
    f = linear_model(np.random.default_rng(5), 4, 3)
    v3 = {"target_cpu": "x86-64-v3", "max_dim": 64, "cflags": flags}
    lib = aotk.export(f, root / "lib", "errs", **v3)
    ext = aotk.export(f, root / "ext", "errs", weights="external", **v3).weights
    assert ext is not None
    data = bytearray(ext.read_bytes())
    data[100] ^= 0xFF
    (root / "corrupt.weights").write_bytes(data)
    (root / "truncated.weights").write_bytes(ext.read_bytes()[:-8])
    other = mlp(np.random.default_rng(6), (4, 3))
    other_w = aotk.export(other, root / "other", "other", weights="external").weights
    exe = build_c(C_DIR / "error_paths.c", lib.library.parent, "errs", root / "error_paths", flags)
    args = [str(ext), str(root / "corrupt.weights"), str(root / "truncated.weights"), str(other_w)]
    return exe, args


def test_every_c_error_path_returns_its_status(error_paths) -> None:
    exe, args = error_paths
    done = subprocess.run([str(exe), *args], capture_output=True, text=True)
    assert "FAIL" not in done.stdout, done.stdout
    assert done.stdout.count("ok  ") == 64 and "0 failures" in done.stdout, done.stdout
    assert "ok   API version: status 0" in done.stdout  # the library is the header's version
    assert done.returncode == 0


@pytest.mark.slow
def test_error_paths_are_clean_under_valgrind(error_paths) -> None:
    import shutil

    valgrind = shutil.which("valgrind")
    if valgrind is None:
        pytest.skip("valgrind is not installed")
    exe, args = error_paths
    cmd = [valgrind, "--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite"]
    done = subprocess.run([*cmd, str(exe), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "ERROR SUMMARY: 0 errors" in done.stderr


@pytest.mark.slow
def test_error_paths_are_clean_under_address_and_ub_sanitizers(tmp_path: Path) -> None:
    """The runtime and glue compiled with ASan and UBSan (the kernels are LLVM's, not
    instrumented), every error path run: no report, no leak, every status as documented."""
    flags = ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g")
    skip_without_sanitizers(tmp_path, flags)
    exe, args = _build_error_paths(tmp_path, flags)
    done = subprocess.run([str(exe), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert done.stdout.count("ok  ") == 64 and "0 failures" in done.stdout, done.stdout
    assert "Sanitizer" not in done.stderr and "runtime error" not in done.stderr, done.stderr


def test_a_loaded_library_pickles_with_its_code_and_weights(tmp_path: Path, exported_mlp) -> None:
    import pickle

    f, _, _ = exported_mlp
    ext = aotk.export(f, tmp_path, "mlp_ext", weights="external")
    for g in (aotk.load(exported_mlp[1].library), aotk.load(ext.library, weights=ext.weights)):
        copy = pickle.loads(pickle.dumps(g))
        assert copy.path != g.path and not copy.path.exists()  # a private copy, cleaned up
        copy = pickle.loads(pickle.dumps(copy))
        x = np.random.default_rng(9).standard_normal((4, 12)).astype(np.float32)
        np.testing.assert_array_equal(copy([x]), f([x]))


@pytest.mark.parametrize(
    ("cut", "message"),
    [
        (lambda n: 40, "not an ELF file"),
        (lambda n: n // 2, "past the end of the file"),
        (lambda n: n - 64, "past the end of the file"),
    ],
    ids=["header", "half", "tail"],
)
def test_a_truncated_library_is_refused_before_the_loader_maps_it(
    tmp_path: Path, exported_mlp, cut, message
) -> None:
    """The dynamic loader would die with SIGBUS touching pages past the end."""
    _, exported, _ = exported_mlp
    good = exported.library.read_bytes()
    bad = tmp_path / "libmlp.so"
    bad.write_bytes(good[: cut(len(good))])
    with pytest.raises(ValueError, match=f"not a loadable aotk model library: .*{message}"):
        aotk.load(bad)


def test_a_shared_library_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    from aotk.codegen import native_runtime

    cc = native_runtime.compiler()
    assert cc is not None
    other = tmp_path / "libmlp.so"
    other.write_bytes(native_runtime.build(cc).read_bytes())  # a sound ELF library
    with pytest.raises(ValueError, match="no mlp_info_json entry point"):
        aotk.load(other)


def test_weights_of_another_model_with_the_same_layout_are_refused(tmp_path: Path) -> None:
    """Same variable names, dtypes and shapes, another graph: not interchangeable."""
    x = K.placeholder(shape=(None, 3), name="x")
    w = K.variable(np.ones((3, 2), np.float32), name="w")
    relu = aotk.export(
        K.function([x], [K.relu(K.dot(x, w))]), tmp_path / "a", "m", weights="external"
    )
    tanh = aotk.export(
        K.function([x], [K.tanh(K.dot(x, w))]), tmp_path / "b", "m", weights="external"
    )
    with pytest.raises(ValueError, match="another model or layout, not the weights of model 'm'"):
        aotk.load(relu.library, weights=tanh.weights)
    g = aotk.load(relu.library, weights=relu.weights)
    np.testing.assert_array_equal(g([np.ones((1, 3), np.float32)])[0], [[3.0, 3.0]])
