"""Pickled K.functions: native code travels, nothing is compiled again, bad blobs are refused."""

from __future__ import annotations

import multiprocessing
import pickle
from typing import Any

import numpy as np
import pytest

import aotk
from aotk import backend as K
from aotk import compile_cache, host_code, shipping
from aotk import function as F
from aotk.codegen import llvm_ir


def _mlp(rng: np.random.Generator) -> tuple[Any, Any, list[Any]]:
    """x (None, 5) -> relu dense 8 -> dense 3; returns x, the logits, the parameters."""
    x = K.placeholder(shape=(None, 5), name="x")
    w1 = K.variable(rng.standard_normal((5, 8)).astype(np.float32) * 0.5, name="w1")
    b1 = K.variable(np.zeros(8, np.float32), name="b1")
    w2 = K.variable(rng.standard_normal((8, 3)).astype(np.float32) * 0.5, name="w2")
    b2 = K.variable(np.zeros(3, np.float32), name="b2")
    h = K.relu(K.bias_add(K.dot(x, w1), b1))
    return x, K.bias_add(K.dot(h, w2), b2), [w1, b1, w2, b2]


def _inference(rng: np.random.Generator) -> F.Function:
    x, logits, _ = _mlp(rng)
    return K.function([x], [K.softmax(logits)])


def _training_step(rng: np.random.Generator) -> F.Function:
    """Softmax regression on 5 features, 3 classes: loss, gradients, SGD updates."""
    x = K.placeholder(shape=(None, 5), name="x")
    y = K.placeholder(shape=(None, 3), name="y")
    w = K.variable(rng.standard_normal((5, 3)).astype(np.float32) * 0.5, name="w")
    b = K.variable(np.zeros(3, np.float32), name="b")
    logits = K.bias_add(K.dot(x, w), b)
    loss = K.mean(K.categorical_crossentropy(y, logits, from_logits=True))
    gw, gb = K.gradients(loss, [w, b])
    assert gw is not None and gb is not None
    return K.function(
        [x, y], [loss], updates=[K.update_sub(w, 0.5 * gw), K.update_sub(b, 0.5 * gb)]
    )


def _batch(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    xs = rng.standard_normal((n, 5)).astype(np.float32)
    ys = np.eye(3, dtype=np.float32)[rng.integers(0, 3, n)]
    return xs, ys


def test_pickled_inference_gives_identical_outputs(rng):
    f = _inference(rng)
    g = pickle.loads(pickle.dumps(f))
    assert isinstance(g, F.Function) and g is not f
    for n in (1, 7, 64):
        xs = rng.standard_normal((n, 5)).astype(np.float32)
        want = f([xs])
        got = g([xs])
        assert len(got) == 1 and got[0].shape == (n, 3)
        np.testing.assert_array_equal(got[0], want[0])


def test_a_pickle_of_an_unpickled_function_still_works(rng):
    x, logits, _ = _mlp(rng)
    f = K.function([x], [K.softmax(logits)], name="classifier")
    g = pickle.loads(pickle.dumps(pickle.loads(pickle.dumps(f))))
    assert g.name == "classifier" and g.where == f.where
    xs = rng.standard_normal((5, 5)).astype(np.float32)
    np.testing.assert_array_equal(g([xs])[0], f([xs])[0])


def test_pickled_single_output_function_returns_an_array(rng):
    x, logits, _ = _mlp(rng)
    f = K.function([x], K.softmax(logits))
    g = pickle.loads(pickle.dumps(f))
    xs = rng.standard_normal((4, 5)).astype(np.float32)
    out = g([xs])
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, f([xs]))


def test_pickled_training_step_continues_from_pickled_weights(rng):
    step = _training_step(rng)
    batches = [_batch(rng, 16) for _ in range(8)]
    for xs, ys in batches[:3]:
        step([xs, ys])
    copy = pickle.loads(pickle.dumps(step))
    # the original moves on first: the copy must hold the weights of the moment it was pickled
    original_losses = [float(step([xs, ys])[0]) for xs, ys in batches[3:]]
    copy_losses = [float(copy([xs, ys])[0]) for xs, ys in batches[3:]]
    assert copy_losses == original_losses
    assert original_losses[-1] != original_losses[0]  # the weights did change between steps
    assert len(copy.captures) == len(step.captures)
    for mine, theirs in zip(copy.captures, step.captures, strict=True):
        np.testing.assert_array_equal(mine.storage, theirs.storage)
        assert mine.storage.ctypes.data != theirs.storage.ctypes.data  # copies, not shared


def _run_in_worker(blob: bytes, xs: np.ndarray) -> tuple[int, int, int, np.ndarray]:
    from aotk import micro_kernels

    f = pickle.loads(blob)
    out = f([xs])[0]
    return host_code.COMPILE_COUNT, host_code.DISK_HITS, micro_kernels.BUILT, out


def test_pickled_function_runs_in_a_spawned_worker_without_compiling(rng, monkeypatch, tmp_path):
    f = _inference(rng)
    xs = rng.standard_normal((9, 5)).astype(np.float32)
    blob = pickle.dumps(f)
    monkeypatch.setenv("AOTK_CACHE_DIR", str(tmp_path))  # the worker's: fresh and empty
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        compiles, disk_hits, built, got = pool.apply(_run_in_worker, (blob, xs))
    assert (compiles, disk_hits) == (0, 0)
    assert built == 0  # the micro-kernels it calls came in the pickle too
    np.testing.assert_array_equal(got, f([xs])[0])


def _blob_and_arrays(f: F.Function) -> tuple[bytes, list[np.ndarray]]:
    restore, (blob, arrays) = f.__reduce__()
    assert restore is F.restore_function
    return blob, arrays


class _Forged:
    """Pickles as a compiled function made of the given blob and arrays."""

    def __init__(self, blob: bytes, arrays: list[np.ndarray]):
        self.blob, self.arrays = blob, arrays

    def __reduce__(self) -> tuple[Any, ...]:
        return (F.restore_function, (self.blob, self.arrays))


def _with_meta(f: F.Function, **changes: Any) -> bytes:
    """A pickle of `f` whose metadata was altered (and re-checksummed: a well-formed lie)."""
    blob, arrays = _blob_and_arrays(f)
    code, meta = compile_cache.decode(blob)
    meta.update(changes)
    return pickle.dumps(_Forged(compile_cache.encode(code, meta), arrays))


def test_unaltered_forged_pickle_loads(rng):
    f = _inference(rng)
    g = pickle.loads(_with_meta(f))
    xs = rng.standard_normal((3, 5)).astype(np.float32)
    np.testing.assert_array_equal(g([xs])[0], f([xs])[0])


def test_pickle_from_another_aotk_version_is_refused(rng):
    data = _with_meta(_inference(rng), aotk_version="0.0.0-other")
    message = f"made by aotk 0.0.0-other, this is aotk {aotk.__version__}"
    with pytest.raises(ValueError, match=message):
        pickle.loads(data)


def _missing_host_feature() -> str:
    """A CPU feature this host lacks: one LLVM lists as off, or a made-up one."""
    off = [f[1:] for f in llvm_ir.host_features().split(",") if f.startswith("-")]
    return off[0] if off else "aotk-imaginary-feature"


def test_pickle_needing_a_cpu_feature_this_host_lacks_is_refused(rng):
    feature = _missing_host_feature()
    features = f"{llvm_ir.host_features()},+{feature}"
    data = _with_meta(_inference(rng), features=features, cpu="futurecpu")
    with pytest.raises(
        ValueError, match=rf"CPU 'futurecpu' with features this CPU lacks: {feature}"
    ):
        pickle.loads(data)


def test_missing_features_lists_only_absent_ones():
    host = llvm_ir.host_features()
    assert shipping.missing_features(host) == []
    assert shipping.missing_features("+aotk-imaginary-a,-sse2,+aotk-imaginary-b") == [
        "aotk-imaginary-a",
        "aotk-imaginary-b",
    ]


def _corruptions(blob: bytes) -> dict[str, bytes]:
    head_end = len(compile_cache.MAGIC) + 8 + 20  # inside the JSON header
    middle = len(blob) // 2  # inside the object code
    flip = lambda i: blob[:i] + bytes([blob[i] ^ 0x01]) + blob[i + 1 :]  # noqa: E731
    return {
        "truncated": blob[: len(blob) - 100],
        "empty": b"",
        "bad magic": b"XXXXXXXX" + blob[8:],
        "flipped byte in the code": flip(middle),
        "flipped byte in the header": flip(head_end),
        "flipped last byte": flip(len(blob) - 1),
        "trailing garbage": blob + b"\0",
    }


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "empty",
        "bad magic",
        "flipped byte in the code",
        "flipped byte in the header",
        "flipped last byte",
        "trailing garbage",
    ],
)
def test_corrupted_native_code_is_refused_with_a_clear_message(rng, damage):
    blob, arrays = _blob_and_arrays(_inference(rng))
    data = pickle.dumps(_Forged(_corruptions(blob)[damage], arrays))
    with pytest.raises(ValueError, match=r"^aotk: cannot unpickle a compiled function: "):
        pickle.loads(data)


def test_every_single_header_byte_flip_is_detected(rng):
    """The checksum covers the header too: no flip in it slips through as valid metadata."""
    blob, _ = _blob_and_arrays(_inference(rng))
    (n,) = compile_cache._LENGTH.unpack_from(blob, len(compile_cache.MAGIC))
    start = len(compile_cache.MAGIC) + compile_cache._LENGTH.size
    for i in range(start, start + n, 7):
        damaged = blob[:i] + bytes([blob[i] ^ 0x04]) + blob[i + 1 :]
        with pytest.raises(compile_cache.CorruptNativeCode):
            compile_cache.decode(damaged)


def test_encode_decode_round_trip(rng):
    f = _inference(rng)
    code = f._compiled.code
    decoded, meta = compile_cache.decode(compile_cache.encode(code, {"k": [1, "two"]}))
    assert decoded == code and meta == {"k": [1, "two"]}


def _with_arrays(f: F.Function, change: Any) -> bytes:
    blob, arrays = _blob_and_arrays(f)
    return pickle.dumps(_Forged(blob, change(list(arrays))))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: [a[0].astype(np.int8), *a[1:]], r"captured array 0 \('w1'\) must be float32"),
        (lambda a: [a[0][:2], *a[1:]], r"captured array 0 \('w1'\) must be float32 of shape"),
        (lambda a: a[:-1], "expected 4 captured arrays, got 3"),
        (lambda a: [], "expected 4 captured arrays, got 0"),
        (lambda a: [a[0].tolist(), *a[1:]], r"captured array 0 \('w1'\) must be"),
    ],
    ids=["dtype", "shape", "one missing", "none", "not an array"],
)
def test_captured_arrays_of_the_wrong_dtype_shape_or_count_are_refused(rng, change, message):
    """The kernel reads captured arrays as compiled: a wrong one would be read past."""
    data = _with_arrays(_inference(rng), change)
    with pytest.raises(ValueError, match=message):
        pickle.loads(data)
