"""Configuration (keras.json, AOTK_* variables, floatx, epsilon, data formats), dtype
defaults and casts, uids, predicates, sparse placeholders, K.identity and K.print_tensor.

Expectations are written here with NumPy; printed text is captured at the file-descriptor
level, since compiled code prints through C's stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from aotk import backend as K
from aotk.backend import config
from aotk.backend.sparse import KSparseTensor

DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "bool")


@pytest.fixture(autouse=True)
def keep_config():
    saved = (config.floatx(), config.epsilon(), config.image_data_format())
    yield
    config.set_floatx(saved[0])
    config.set_epsilon(saved[1])
    config.set_image_data_format(saved[2])


def _load(tmp_path, content, **env: str) -> None:
    if content is not None:
        text = content if isinstance(content, str) else json.dumps(content)
        (tmp_path / "keras.json").write_text(text)
    config.load_config({"KERAS_HOME": str(tmp_path), **env})


def test_backend_is_aotk():
    assert K.backend() == "aotk"


def test_keras_json_sets_floatx_epsilon_and_data_format(tmp_path):
    content = {
        "image_data_format": "channels_first",
        "epsilon": 1e-05,
        "floatx": "float64",
        "backend": "tensorflow",
    }
    _load(tmp_path, content)
    assert (K.floatx(), K.epsilon(), K.image_data_format()) == ("float64", 1e-5, "channels_first")
    assert K.image_dim_ordering() == "th"
    assert K.placeholder((2,)).dtype == "float64"


def test_a_missing_file_means_the_defaults_and_is_never_written(tmp_path):
    K.set_floatx("float16")
    _load(tmp_path / "absent", None)
    assert (K.floatx(), K.epsilon(), K.image_data_format()) == ("float32", 1e-7, "channels_last")
    assert not (tmp_path / "absent").exists()


def test_environment_variables_win_over_the_file(tmp_path):
    content = {"floatx": "float64", "image_data_format": "channels_first"}
    _load(tmp_path, content, AOTK_FLOATX="float16", AOTK_IMAGE_DATA_FORMAT="channels_last")
    assert (K.floatx(), K.image_data_format()) == ("float16", "channels_last")
    _load(tmp_path, content, AOTK_FLOATX="")  # empty means unset
    assert K.floatx() == "float64"


def test_the_keras_1_image_dim_ordering_key_is_understood(tmp_path):
    _load(tmp_path, {"epsilon": 1e-07, "floatx": "float32", "image_dim_ordering": "th"})
    assert K.image_data_format() == "channels_first"
    _load(tmp_path, {"image_dim_ordering": "th", "image_data_format": "channels_last"})
    assert K.image_data_format() == "channels_last"


def test_the_config_path_is_keras_home_or_dot_keras(monkeypatch, tmp_path):
    assert config.config_path({"KERAS_HOME": "/opt/k"}) == os.path.join("/opt/k", "keras.json")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert config.config_path({}) == os.path.join(str(tmp_path), ".keras", "keras.json")


@pytest.mark.parametrize(
    ("content", "env", "match"),
    [
        (
            {"floatx": "float8"},
            {},
            r"keras\.json: key 'floatx' has value 'float8'; "
            r"expected one of 'float16', 'float32', 'float64'",
        ),
        ({"floatx": 32}, {}, r"key 'floatx' has value 32"),
        ({"epsilon": "small"}, {}, r"key 'epsilon' has value 'small'; expected a finite number"),
        ({"epsilon": True}, {}, r"key 'epsilon' has value True"),
        (
            {"image_data_format": "NHWC"},
            {},
            r"key 'image_data_format' has value 'NHWC'; "
            r"expected one of 'channels_last', 'channels_first'",
        ),
        ({"image_dim_ordering": "xy"}, {}, r"key 'image_dim_ordering' has value 'xy'"),
        ('{"floatx": ', {}, r"cannot read the Keras config .*keras\.json"),
        ("[1, 2]", {}, r"keras\.json must hold a JSON object, got list"),
        (
            None,
            {"AOTK_FLOATX": "half"},
            r"environment variable AOTK_FLOATX has value 'half'; expected one of 'float16'",
        ),
        (
            None,
            {"AOTK_IMAGE_DATA_FORMAT": "channels_middle"},
            r"environment variable AOTK_IMAGE_DATA_FORMAT has value 'channels_middle'",
        ),
    ],
)
def test_bad_config_values_name_the_source_key_value_and_choices(tmp_path, content, env, match):
    with pytest.raises(ValueError, match=match):
        _load(tmp_path, content, **env)


def test_the_config_is_read_when_aotk_is_imported(tmp_path):
    (tmp_path / "keras.json").write_text(json.dumps({"floatx": "float64", "epsilon": 0.001}))
    env = {**os.environ, "KERAS_HOME": str(tmp_path), "AOTK_IMAGE_DATA_FORMAT": "channels_first"}
    env.pop("AOTK_FLOATX", None)
    code = "from aotk import backend as K; print(K.floatx(), K.epsilon(), K.image_data_format())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["float64", "0.001", "channels_first"]
    env["AOTK_FLOATX"] = "float128"
    bad = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert bad.returncode != 0 and "AOTK_FLOATX has value 'float128'" in bad.stderr


def test_floatx_epsilon_and_data_format_setters():
    assert K.floatx() == "float32"
    K.set_floatx("float16")
    assert K.floatx() == "float16"
    K.set_epsilon(1e-05)
    assert K.epsilon() == 1e-05
    K.set_epsilon(np.float32(0.5))
    assert K.epsilon() == 0.5 and type(K.epsilon()) is float
    K.set_image_data_format("channels_first")
    assert (K.image_data_format(), K.image_dim_ordering()) == ("channels_first", "th")
    K.set_image_dim_ordering("tf")
    assert (K.image_data_format(), K.image_dim_ordering()) == ("channels_last", "tf")
    K.set_image_dim_ordering("th")
    assert K.image_data_format() == "channels_first"


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: K.set_floatx("float8"),
            ValueError,
            r"K\.set_floatx: unknown floatx type 'float8'",
        ),
        (lambda: K.set_floatx(np.float32), ValueError, r"expected one of float16"),
        (lambda: K.set_epsilon("1e-5"), TypeError, r"K\.set_epsilon: expected a float"),
        (lambda: K.set_epsilon(True), TypeError, r"got True"),
        (lambda: K.set_image_data_format("NCHW"), ValueError, r"unknown data_format 'NCHW'"),
        (lambda: K.set_image_dim_ordering("tensorflow"), ValueError, r"expected 'tf'"),
        (lambda: K.manual_variable_initialization("yes"), TypeError, r"must be a bool"),
        (lambda: K.is_keras_tensor(np.array([1, 2])), ValueError, r"expected a symbolic tensor"),
        (lambda: K.print_tensor(K.placeholder((2,)), message=3), TypeError, r"must be a str"),
    ],
)
def test_bad_arguments_raise_clear_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
    assert K.floatx() == "float32" and K.image_data_format() == "channels_last"


def test_cast_to_floatx_converts_numpy_arrays():
    arr = np.array([1.0, 2.0], dtype="float64")
    new = K.cast_to_floatx(arr)
    assert new.dtype == np.float32 and new.tolist() == [1.0, 2.0]
    K.set_floatx("float16")
    assert K.cast_to_floatx([1, 2]).dtype == np.float16


def test_dtype_defaults_are_floatx_and_k_dtype_names_them():
    val = np.array([[1, 2], [3, 4]])
    assert K.dtype(K.variable(val)) == "float32"
    kvar = K.variable(value=val, dtype="float64", name="example_var")
    assert K.dtype(kvar) == "float64" and kvar.name == "example_var"
    np.testing.assert_array_equal(K.eval(kvar), np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert K.dtype(K.constant(5)) == "float32" and K.dtype(K.constant([1, 2], "int32")) == "int32"
    for dt in DTYPES:
        assert K.dtype(K.placeholder((2,), dtype=dt)) == dt
        assert K.dtype(K.variable(np.zeros(2), dtype=dt)) == dt
    assert K.dtype(K.placeholder((2,), dtype=np.int16)) == "int16"
    K.set_floatx("float64")
    assert K.dtype(K.placeholder((2,))) == "float64"
    assert K.dtype(K.variable([1, 2])) == "float64" and K.dtype(K.constant(1.5)) == "float64"
    assert K.dtype(K.zeros((2,))) == "float64" and K.dtype(K.ones_like(K.zeros((2,)))) == "float64"


def test_k_cast_converts_between_every_dtype():
    x = K.placeholder((None,), dtype="float32")
    b = K.placeholder((None,), dtype="bool")
    outs = [K.cast(x, dt) for dt in DTYPES] + [K.cast(b, dt) for dt in DTYPES]
    f = K.function([x, b], outs)
    for n in (5, 0):
        xv = np.array([0.0, 1.75, -2.5, 100.25, 3.0], np.float32)[:n]
        if n:
            xv[2] = 2.5  # keep uint8 casts defined
        bv = np.array([True, False, True, True, False])[:n]
        got = f([xv, bv])
        for dt, g, h in zip(DTYPES, got[: len(DTYPES)], got[len(DTYPES) :], strict=True):
            assert g.dtype == np.dtype(dt) and h.dtype == np.dtype(dt)
            want = xv != 0 if dt == "bool" else xv.astype(dt)
            np.testing.assert_array_equal(g, want, err_msg=dt)
            np.testing.assert_array_equal(h, bv.astype(dt), err_msg=dt)


def test_uids_count_per_prefix_and_restart_on_reset_and_clear_session():
    assert [K.get_uid("dense"), K.get_uid("dense"), K.get_uid(), K.get_uid("conv")] == [1, 2, 1, 1]
    assert K.get_uid("dense") == 3
    K.reset_uids()
    assert K.get_uid("dense") == 1
    K.clear_session()
    assert K.get_uid("dense") == 1 and K.get_uid("") == 1


def test_manual_variable_initialization_is_a_flag_variables_ignore():
    K.manual_variable_initialization(True)
    v = K.variable(np.ones(2))
    np.testing.assert_array_equal(K.get_value(v), np.ones(2))
    K.manual_variable_initialization(False)


def test_predicates_tell_tensors_placeholders_sparse_and_keras_tensors():
    a = K.placeholder((2, 2), sparse=False)
    b = K.placeholder((2, 2), sparse=True)
    v = K.variable(np.eye(2))
    y = a * 2
    assert not K.is_sparse(a) and K.is_sparse(b) and not K.is_sparse(K.to_dense(b))
    assert K.to_dense(a) is a
    assert all(K.is_tensor(t) for t in (a, b, v, y)) and not K.is_tensor(np.eye(2))
    assert K.is_placeholder(a) and K.is_placeholder(b)
    assert not any(K.is_placeholder(t) for t in (v, y, K.identity(a), np.eye(2), None))
    assert not any(K.is_keras_tensor(t) for t in (a, b, v, y))
    y._keras_history = ("layer", 0, 0)  # type: ignore[attr-defined]
    assert K.is_keras_tensor(y)
    K.clear_session()
    assert not K.is_placeholder(a)


def test_sparse_placeholders_take_triples_with_dynamic_dense_shapes():
    b = K.placeholder((None, 4), sparse=True, name="b")
    assert isinstance(b, KSparseTensor) and b.shape == (None, 4) and b.dtype == "float32"
    dense = K.to_dense(b)
    assert dense.shape == (None, 4) and dense.dtype == "float32"
    f = K.function([b], [dense * 2, K.sum(dense)])
    indices = np.array([[0, 1], [2, 3], [0, 1], [1, 0]])
    values = np.array([1.0, 2.0, 3.0, -4.0])
    doubled, total = f([(indices, values, (3, 4))])
    want = np.zeros((3, 4), np.float32)
    np.add.at(want, (indices[:, 0], indices[:, 1]), values.astype(np.float32))
    np.testing.assert_array_equal(doubled, want * 2)
    assert total == want.sum()
    empty, total = f([(np.zeros((0, 2), np.int64), np.zeros(0), [0, 4])])
    assert empty.shape == (0, 4) and total == 0

    class Coo:  # what scipy.sparse matrices give through tocoo()
        row, col, data, shape = np.array([1, 0]), np.array([2, 3]), np.array([5.0, 6.0]), (2, 4)

        def tocoo(self) -> Coo:
            return self

    got, _ = f([Coo()])
    np.testing.assert_array_equal(got, np.array([[0, 0, 0, 12], [0, 0, 10, 0]], np.float32))
    with pytest.raises(ValueError, match=r"K\.function: expected 1 inputs, got 2"):
        f([Coo(), Coo()])


def test_sparse_placeholders_take_scipy_matrices():
    sparse = pytest.importorskip("scipy.sparse")
    b = K.placeholder((3, 5), dtype="float64", sparse=True)
    m = sparse.random(3, 5, density=0.4, format="csr", random_state=0)
    np.testing.assert_array_equal(K.function([b], [K.to_dense(b)])([m])[0], m.toarray())


def test_sparse_values_of_other_dtypes_and_bad_values():
    b = K.placeholder((2, None, 3), dtype="int32", sparse=True, name="s")
    x = K.placeholder((2,))
    f = K.function([x, b], [K.to_dense(b), x + 1])
    dense, _ = f([np.zeros(2), ([[1, 0, 2], [0, 1, 1]], [7, 9], (2, 2, 3))])
    want = np.zeros((2, 2, 3), np.int32)
    want[1, 0, 2], want[0, 1, 1] = 7, 9
    np.testing.assert_array_equal(dense, want)
    bad = [
        (([[1, 0, 3]], [1], (2, 2, 3)), ValueError, r"input 's' has index \(1, 0, 3\) \(entry 0\)"),
        (([[-1, 0, 0]], [1], (2, 2, 3)), ValueError, r"outside the dense shape \(2, 2, 3\)"),
        (([[0, 0]], [1], (2, 2, 3)), ValueError, r"integer indices of shape \(nnz, 3\)"),
        (([[0, 0, 0]], [1, 2], (2, 2, 3)), ValueError, r"1 indices but values of shape \(2,\)"),
        (([[0, 0, 0]], [1], (3, 2, 3)), ValueError, r"expects dense shape \(2, None, 3\)"),
        (np.zeros((2, 2, 3)), TypeError, r"takes a scipy\.sparse matrix or an \(indices"),
    ]
    for value, error, match in bad:
        with pytest.raises(error, match=match):
            f([np.zeros(2), value])


def test_to_dense_of_a_sparse_tensor_with_a_static_shape():
    idx = K.placeholder((None, 2), dtype="int64")
    vals = K.placeholder((None,), dtype="float32")
    st = KSparseTensor(idx, vals, (2, 3))
    out = K.function([idx, vals], [K.to_dense(st)])([np.array([[1, 2]]), np.array([5.0])])[0]
    np.testing.assert_array_equal(out, np.array([[0, 0, 0], [0, 0, 5]], np.float32))
    with pytest.raises(ValueError, match=r"K\.to_dense: sparse tensor .* \(None, 3\)"):
        K.to_dense(KSparseTensor(idx, vals, (None, 3)))


def test_identity_is_a_new_tensor_with_the_same_content():
    x = K.placeholder((None, 2), dtype="int32")
    v = K.variable(np.array([1.5, 2.5]), dtype="float64")
    ix, iv = K.identity(x, name="copy"), K.identity(v)
    assert ix is not x and ix.name == "copy" and ix.dtype == "int32" and iv.dtype == "float64"
    value = np.arange(6, dtype=np.int32).reshape(3, 2)
    got = K.function([x], [ix, iv])([value])
    np.testing.assert_array_equal(got[0], value)
    np.testing.assert_array_equal(got[1], np.array([1.5, 2.5]))


def test_print_tensor_prints_from_compiled_code_whenever_its_result_is_used(capsys):
    x = K.placeholder((None, 2))
    shown = K.print_tensor(x, message="x is:")
    K.print_tensor(x, message="never used: ")
    f = K.function([x], [shown * 2, K.print_tensor(K.sum(x), "sum")])
    capsys.readouterr()
    value = np.array([[1.0, 0.5], [-2.0, 1e-7]], np.float32)
    out = f([value])
    # to Python's sys.stdout, as print(message, array) writes it
    assert capsys.readouterr().out == f"x is: {value!s}\nsum {out[1]!s}\n"
    np.testing.assert_array_equal(out[0], np.array([[2.0, 1.0], [-4.0, 2e-7]], np.float32))
    f([np.zeros((0, 2), np.float32)])
    assert capsys.readouterr().out == "x is: []\nsum 0.0\n"
    np.testing.assert_array_equal(K.eval(K.print_tensor(K.eye(2), "msg")), np.eye(2))
    assert capsys.readouterr().out == "msg [[1. 0.]\n [0. 1.]]\n"


def test_print_tensor_passes_gradients_through():
    w = K.variable(np.array([1.0, 2.0]))
    loss = K.sum(K.print_tensor(w, "w ") * 3.0)
    grad = K.function([], K.gradients(loss, [w]))([])[0]
    np.testing.assert_array_equal(grad, np.array([3.0, 3.0], np.float32))
