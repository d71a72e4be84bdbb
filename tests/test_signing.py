"""Signed pickles and signed exported libraries: what was signed loads, anything altered,
unsigned or signed with another key is refused before it can run."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest

import aotk
from aotk import backend as K
from aotk import signing

KEY = b"k" * 32
OTHER = b"o" * 32


def _model():
    x = K.placeholder((None, 3), name="x")
    w = K.variable(np.arange(6, dtype=np.float32).reshape(3, 2) / 6, name="w")
    return K.function([x], [K.tanh(K.dot(x, w))])


X = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)


class _Planted:
    """Unpickling this makes a directory: the kind of side effect a forged pickle has."""

    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_a_signed_function_round_trips() -> None:
    f = _model()
    g = signing.loads(signing.dumps(f, KEY), KEY)
    np.testing.assert_array_equal(g([X]), f([X]))


@pytest.mark.parametrize("key", [OTHER, KEY])
def test_a_forged_pickle_is_refused_before_it_runs(tmp_path: Path, key: bytes) -> None:
    planted = tmp_path / "planted"
    forged = bytearray(signing.dumps(_Planted(str(planted)), key))
    if key == KEY:
        forged[-3] ^= 1  # signed with the right key, then altered
    with pytest.raises(ValueError, match="signature does not match"):
        signing.loads(bytes(forged), KEY)
    assert not planted.exists()


def test_an_unsigned_pickle_is_refused(tmp_path: Path) -> None:
    planted = tmp_path / "planted"
    with pytest.raises(ValueError, match="not a signed aotk pickle"):
        signing.loads(pickle.dumps(_Planted(str(planted))), KEY)
    assert not planted.exists()


@pytest.mark.parametrize(
    ("key", "error", "message"),
    [(b"short", ValueError, "at least 16 bytes"), (1234, TypeError, "bytes or str, got int")],
)
def test_bad_keys_are_clear_errors(key, error, message) -> None:
    with pytest.raises(error, match=message):
        signing.dumps(1, key)


@pytest.mark.aot
def test_a_signed_export_loads_and_an_altered_one_does_not(tmp_path: Path) -> None:
    f = _model()
    exported = aotk.export(f, tmp_path, "signed", weights="external", signing_key=KEY)
    lib, weights = exported.library, exported.weights
    assert weights is not None
    assert Path(f"{lib}.sig").is_file() and Path(f"{weights}.sig").is_file()
    g = aotk.load(lib, weights=weights, signing_key=KEY)
    np.testing.assert_array_equal(g([X]), f([X]))
    with pytest.raises(ValueError, match="does not match its signature"):
        aotk.load(lib, weights=weights, signing_key=OTHER)

    altered = bytearray(lib.read_bytes())
    altered[len(altered) // 2] ^= 0xFF
    lib.write_bytes(altered)
    with pytest.raises(ValueError, match=r"libsigned.so does not match its signature"):
        aotk.load(lib, weights=weights, signing_key=KEY)
    Path(f"{lib}.sig").unlink()
    with pytest.raises(ValueError, match=r"has no signature file libsigned.so.sig"):
        aotk.load(lib, weights=weights, signing_key=KEY)


@pytest.mark.aot
def test_altered_weights_are_refused(tmp_path: Path) -> None:
    exported = aotk.export(_model(), tmp_path, "sw", weights="external", signing_key=KEY)
    assert exported.weights is not None
    data = bytearray(exported.weights.read_bytes())
    data[-1] ^= 1
    exported.weights.write_bytes(data)
    with pytest.raises(ValueError, match=r"sw.weights does not match its signature"):
        aotk.load(exported.library, weights=exported.weights, signing_key=KEY)
