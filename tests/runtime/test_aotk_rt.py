"""The C runtime builds with a plain C99 compiler and behaves as its header says."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"

pytestmark = pytest.mark.aot


@pytest.fixture(scope="module")
def rt(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    lib = tmp_path_factory.mktemp("rt") / "libaotk_rt.so"
    cmd = [
        cc,
        "-std=c99",
        "-D_ISOC11_SOURCE",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-O2",
        "-fPIC",
        "-shared",
        str(RUNTIME / "aotk_rt.c"),
        "-o",
        str(lib),
    ]
    subprocess.run(cmd, check=True)
    dll = ctypes.CDLL(str(lib))
    dll.aotk_alloc.restype = ctypes.c_void_p
    dll.aotk_alloc.argtypes = [ctypes.c_size_t]
    dll.aotk_free.argtypes = [ctypes.c_void_p]
    dll.aotk_check_buffer.argtypes = [ctypes.c_void_p]
    dll.aotk_status_message.restype = ctypes.c_char_p
    return dll


def test_api_version_is_the_headers(rt: ctypes.CDLL) -> None:
    header = (RUNTIME / "aotk_rt.h").read_text()
    assert "#define AOTK_API_VERSION 2\n" in header
    assert rt.aotk_api_version() == 2


@pytest.mark.parametrize("nbytes", [0, 1, 63, 64, 65, 1 << 20])
def test_alloc_is_aligned_and_zeroed(rt: ctypes.CDLL, nbytes: int) -> None:
    p = rt.aotk_alloc(nbytes)
    assert p is not None and p % 64 == 0
    assert rt.aotk_check_buffer(p) == 0
    data = (ctypes.c_ubyte * max(nbytes, 1)).from_address(p)
    assert not any(data)
    rt.aotk_free(p)


def test_check_buffer_errors(rt: ctypes.CDLL) -> None:
    assert rt.aotk_check_buffer(None) == 1
    p = rt.aotk_alloc(128)
    assert rt.aotk_check_buffer(p + 4) == 3
    rt.aotk_free(p)
    assert rt.aotk_status_message(3) == b"a buffer is not aligned"
    assert rt.aotk_status_message(19) == b"a size overflows"
    assert rt.aotk_status_message(99) == b"unknown aotk status"
