"""An export for another CPU: tiled for that CPU's vector registers, not the host's, and
using only the features the library checks when it loads."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_close
from export_helpers import mlp

import aotk
from aotk import backend as K
from aotk.aot import build
from aotk.codegen import jit, llvm_split
from aotk.kernels import heuristics

pytestmark = pytest.mark.aot


def _exported_ir(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The LLVM IR texts an export hands to LLVM (the model's and each micro-kernel's),
    whole or in parts."""
    texts: list[str] = []
    generate, compile_parts = jit.generate_from_ir, llvm_split.compile_parts

    def recording(text: str, *args: Any, **kwargs: Any) -> jit.NativeCode:
        texts.append(text)
        return generate(text, *args, **kwargs)

    def recording_parts(pieces: list[llvm_split.Piece], *args: Any, **kwargs: Any) -> Any:
        texts.extend(p.text for p in pieces)
        return compile_parts(pieces, *args, **kwargs)

    monkeypatch.setattr(jit, "generate_from_ir", recording)
    monkeypatch.setattr(llvm_split, "compile_parts", recording_parts)
    return texts


def _float_lanes(texts: list[str]) -> set[int]:
    return {int(n) for text in texts for n in re.findall(r"<(\d+) x float>", text)}


def _cnn() -> Any:
    x = K.placeholder((None, 12, 12, 8))
    w = K.variable(np.random.default_rng(3).standard_normal((3, 3, 8, 16)).astype(np.float32))
    y = K.relu(K.conv2d(x, w, padding="same"))
    return K.function([x], [K.softmax(K.reshape(y, (-1, 12 * 12 * 16)))])


@pytest.mark.parametrize("cpu, widest", [("x86-64-v2", 4), ("x86-64-v3", 8), ("x86-64-v4", 16)])
def test_an_export_is_tiled_for_its_targets_registers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu: str, widest: int
) -> None:
    """SSE has 16 registers of 4 floats, AVX2 16 of 8, AVX-512 32 of 16: the matmul's
    register tiles, the conv's and the row reductions' vectors follow the target. Tiled
    for an AVX-512 host, an AVX2 library's vectors were split in two and its tiles
    spilled."""
    rng = np.random.default_rng(0)
    # the MLP's weights are packed once: 40 x 20 is narrower than an AVX-512 sliver (48
    # floats), not than an AVX2 one (16)
    functions = [mlp(rng, (40, 20, 96, 7)), _cnn()]
    texts = _exported_ir(monkeypatch)
    exported = [
        aotk.export(f, tmp_path / str(i), f"m{i}", target_cpu=cpu) for i, f in enumerate(functions)
    ]
    assert len(texts) >= 4  # two models, and the micro-kernels they call
    assert max(_float_lanes(texts)) == widest
    if not build.runs_here(cpu):
        return  # the code cannot run here
    inputs = [rng.standard_normal((5, 40)), rng.standard_normal((3, 12, 12, 8))]
    for f, e, x in zip(functions, exported, inputs, strict=True):
        x = x.astype(np.float32)
        got, want = np.asarray(aotk.load(e.library)([x])), np.asarray(f([x]))
        assert_close(got, want, msg=cpu)  # another tiling sums in another order


def test_tiling_for_a_target_leaves_other_threads_tiling_for_the_host() -> None:
    """An export pins the tiles on its own thread: a JIT compile elsewhere meanwhile
    still tiles for the host."""
    host = heuristics.vector_shape()
    other = "avx2" if heuristics.host_isa() == "avx512" else "avx512"
    seen: list[tuple[int, int]] = []
    with heuristics.tiled_for(other):
        assert heuristics.vector_shape() == heuristics.VECTOR_SHAPES[other] != host
        thread = threading.Thread(target=lambda: seen.append(heuristics.vector_shape()))
        thread.start()
        thread.join()
    assert seen == [host] and heuristics.vector_shape() == host


def _kernel_families() -> tuple[Any, list[np.ndarray]]:
    """One function through every kernel family whose vectors follow the tiling: matmul
    (float32 and float64), conv tiles (wide and narrow channels, with an epilogue and a
    max pool), depthwise conv, row reductions, arg max, and the gradients of a pool and
    of a conv's weights; with its inputs. Every value is positive: tilings sum in their
    own orders, and without cancellation each sum is then within the dtype's tolerance."""
    rng = np.random.default_rng(5)

    def positive(*shape: int, dtype: str = "float32") -> np.ndarray:
        return rng.uniform(0.0, 0.25, shape).astype(dtype)

    x = K.placeholder((2, 10, 10, 8))
    m = K.placeholder((33, 70), dtype="float64")
    w_wide, w_narrow = K.variable(positive(3, 3, 8, 24)), K.variable(positive(3, 3, 8, 4))
    w_depth, w_dense = (
        K.variable(positive(3, 3, 8, 1)),
        K.variable(positive(70, 40, dtype="float64"), dtype="float64"),
    )
    wide = K.pool2d(K.relu(K.conv2d(x, w_wide, padding="same")), (2, 2))
    narrow = K.conv2d(x, w_narrow)
    depth = K.depthwise_conv2d(x, w_depth, padding="same")
    rows = K.reshape(wide, (2, -1))
    loss = K.sum(K.square(K.pool2d(x, (2, 2), pool_mode="avg"))) + K.sum(K.tanh(narrow))
    outputs = [wide, narrow, depth, K.softmax(rows), K.logsumexp(rows, axis=1)]
    outputs += [K.argmax(rows, axis=-1), K.dot(m, w_dense), *K.gradients(loss, [x, w_narrow])]
    return K.function([x, m], outputs), [positive(2, 10, 10, 8), positive(33, 70, dtype="float64")]


@pytest.mark.parametrize("cpu", ["x86-64-v2", "x86-64-v3"])
def test_every_kernel_family_tiled_for_a_target_matches_the_jit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu: str
) -> None:
    if not build.runs_here(cpu):
        pytest.skip(f"this CPU cannot run {cpu} code")
    f, inputs = _kernel_families()
    texts = _exported_ir(monkeypatch)
    exported = aotk.load(aotk.export(f, tmp_path, "k", target_cpu=cpu).library)
    assert max(_float_lanes(texts)) == {"x86-64-v2": 4, "x86-64-v3": 8}[cpu]
    for i, (got, want) in enumerate(zip(exported(inputs), f(inputs), strict=True)):
        assert_close(got, want, msg=f"{cpu} output {i}")


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_a_named_cpu_uses_only_the_features_given(tmp_path: Path) -> None:
    """skylake-avx512 has AVX-512, but with '+avx2,+fma' the library checks only those
    when it loads: its code must not use AVX-512's zmm or mask registers."""
    f = mlp(np.random.default_rng(1), (64, 256, 10))

    def avx512_registers(features: str) -> int:
        out = tmp_path / features.replace(",", "")
        library = aotk.export(f, out, "s", target_cpu="skylake-avx512", target_features=features)
        return len(re.findall(r"%zmm\d|%k[1-7]", _disassembly(library.library)))

    assert avx512_registers("+avx2,+fma") == 0
    assert avx512_registers("+avx512f,+avx512vl,+avx2,+fma") > 0


def _disassembly(library: Path) -> str:
    return subprocess.run(
        ["objdump", "-d", str(library)], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.skipif(shutil.which("objdump") is None, reason="needs objdump")
def test_sums_use_fma_only_where_the_target_has_it(tmp_path: Path) -> None:
    """A matmul's and a conv's multiply-adds are fused with FMA (x86-64-v3) and a multiply
    and an add without (x86-64-v2), where the exact fma had been a libm call per element
    (87x slower at 1024^3)."""
    rng = np.random.default_rng(2)
    x, image = K.placeholder((None, 64)), K.placeholder((None, 8, 8, 8))
    w = K.variable(rng.standard_normal((64, 96)).astype(np.float32))
    kernel = K.variable(rng.standard_normal((3, 3, 8, 16)).astype(np.float32))
    f = K.function([x, image], [K.relu(K.dot(x, w)), K.conv2d(image, kernel)])
    for cpu, fused in [("x86-64-v2", False), ("x86-64-v3", True)]:
        text = _disassembly(aotk.export(f, tmp_path / cpu, "d", target_cpu=cpu).library)
        assert not re.search(r"call.*<fmaf?@plt>", text), cpu
        assert ("vfmadd" in text) == fused, cpu


@pytest.mark.parametrize(
    "features, isa",
    [
        (["avx512f", "avx512vl"], "avx512"),  # AVX-512F implies AVX2 and FMA
        (["avx2", "fma"], "avx2"),
        (["avx2"], "avx"),  # no FMA given: the code may not use it
        (["avx", "fma"], "avx"),
        (["sse4.2", "popcnt"], "sse"),
        ([], "sse"),
    ],
)
def test_the_instruction_set_a_target_is_compiled_for(features: list[str], isa: str) -> None:
    assert heuristics.isa_of(features) == isa


def _micro_kernel_work(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many micro-kernels an export emits, and how many it optimizes again for its
    target, as it goes."""
    counts = {"emitted": 0, "optimized again": 0}
    emit, optimize = llvm_split.compile_parts, jit.optimize_only

    def emitting(pieces: list[llvm_split.Piece], *args: Any, **kwargs: Any) -> Any:
        counts["emitted"] += sum(p.optimized for p in pieces)  # the model's are not
        return emit(pieces, *args, **kwargs)

    def optimizing(*args: Any, **kwargs: Any) -> jit.NativeCode:
        counts["optimized again"] += 1
        return optimize(*args, **kwargs)

    monkeypatch.setattr(llvm_split, "compile_parts", emitting)
    monkeypatch.setattr(jit, "optimize_only", optimizing)
    return counts


_OTHER_CPU_OF_THE_HOSTS_SET = {"avx512": "x86-64-v4", "avx2": "x86-64-v3", "sse": "x86-64-v2"}


@pytest.mark.parametrize("target", ["host", "another instruction set", "another cpu"])
def test_micro_kernels_are_optimized_once_for_a_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """An export for another instruction set builds its micro-kernels for exactly its CPU
    and features: cached optimized, they are only renamed and emitted (1.75 s of W4's
    export for x86-64-v3). The host's, built with every feature of the host, are
    optimized again from their source for an export for the host (whose library uses
    only the features it checks) or for another CPU with the host's instruction set:
    once, into the cache, which a second export reads. Each library computes what the
    JIT does."""
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("AOTK_DISK_CACHE", raising=False)
    cpu = {
        "host": None,
        "another instruction set": "x86-64-v2" if heuristics.host_isa() != "sse" else "x86-64-v3",
        "another cpu": _OTHER_CPU_OF_THE_HOSTS_SET.get(heuristics.host_isa()),
    }[target]
    if cpu is not None and not build.runs_here(cpu):
        pytest.skip(f"this CPU cannot run {cpu} code")
    f = mlp(np.random.default_rng(4), (30, 40, 10))
    x = np.random.default_rng(5).standard_normal((7, 30)).astype(np.float32)
    host_set = target != "another instruction set"
    for export in ("first", "second"):
        counts = _micro_kernel_work(monkeypatch)
        library = aotk.export(f, tmp_path / export, "m", target_cpu=cpu).library
        again = counts["emitted"] if host_set and export == "first" else 0
        assert counts["emitted"] and counts["optimized again"] == again, (export, counts)
        assert_close(aotk.load(library)([x]), f([x]))  # one output: an array, as Keras's


@pytest.mark.parametrize("cpu", [None, "x86-64-v3"])
@pytest.mark.parametrize("channels, layout", [((32, 48), "f4"), ((320, 320), "f4_slivers")])
def test_a_conv_kernel_packed_for_the_target_and_again_by_set_variable(
    tmp_path: Path, cpu: str | None, channels: tuple[int, int], layout: str
) -> None:
    """The library makes the Winograd convs' U when the model is created and in
    aotk_model_set_variable, with its target's transform micro-kernel: row-major, or in
    the target's slivers for the products by matmuls (16 floats wide on x86-64-v3, 48
    on an AVX-512 host)."""
    if cpu is not None and not build.runs_here(cpu):
        pytest.skip(f"this CPU cannot run {cpu} code")
    rng = np.random.default_rng(4)
    cin, cout = channels
    x = K.placeholder((None, 16, 16, cin))
    scale = 0.5 / np.sqrt(cin)
    w = K.variable(rng.standard_normal((3, 3, cin, cout)).astype(np.float32) * scale, name="w")
    f = K.function([x], [K.relu(K.conv2d(x, w, padding="same"))])
    assert [p.transform for p in f._packs] == [layout]
    exported = aotk.export(f, tmp_path, "conv", target_cpu=cpu)
    g = aotk.load(exported.library)
    xs = rng.standard_normal((2, 16, 16, cin)).astype(np.float32)
    before = np.asarray(g([xs]))
    assert_close(before, np.asarray(f([xs])), msg=str(cpu))
    value = rng.standard_normal((3, 3, cin, cout)).astype(np.float32) * scale
    g.set_variable("w", value)
    K.set_value(w, value)
    after = np.asarray(g([xs]))
    assert not np.allclose(after, before)
    assert_close(after, np.asarray(f([xs])), msg=f"{cpu} after set_variable")
