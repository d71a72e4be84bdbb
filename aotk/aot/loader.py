"""`aotk.load`: open an exported library from Python, through its C API.

The callable it returns takes and returns what the original K.function did, so tests and
users can compare the two. Every call goes through the C runtime's checks.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

import aotk
from aotk import runtime, signing
from aotk.aot import elf_check
from aotk.call_check import coerce_input
from aotk.codegen import native_runtime
from aotk.dialect import trace
from aotk.output_pool import OutputPool

Shape = tuple[int | None, ...]
DTYPE_CODES = {
    "bool": 0, "int8": 1, "int16": 2, "int32": 3, "int64": 4, "uint8": 5, "float16": 6,
    "float32": 7, "float64": 8,
}  # fmt: skip
_CODE_OF = {np.dtype(name): code for name, code in DTYPE_CODES.items()}
MAX_RANK = 8


class Tensor(ctypes.Structure):
    _fields_ = [
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("dims", ctypes.c_int64 * MAX_RANK),
        ("data", ctypes.c_void_p),
        ("capacity", ctypes.c_size_t),
    ]


class Options(ctypes.Structure):
    _fields_ = [("n_threads", ctypes.c_int), ("weights_path", ctypes.c_char_p)]


def load(
    path: str | Path,
    *,
    weights: str | Path | None = None,
    n_threads: int = 0,
    signing_key: bytes | str | None = None,
) -> LoadedModel:
    """Open lib<name>.so as a callable like the K.function it was exported from.

    Its pool has `n_threads` threads; 0: as many as this process's kernels run on
    (`aotk.set_num_threads`) once aotk's pool is running, else the library's default
    (`aotk_options.n_threads`: the environment, else one per available CPU).

    With `signing_key`, the library (and weights file) must match the `.sig` files that
    `aotk.export(..., signing_key=...)` wrote; the bytes checked are the bytes loaded."""
    if signing_key is None:
        return LoadedModel(Path(path), weights, n_threads)
    path = Path(path)
    where = f"aotk.load('{path}')"
    key = signing.check_key(signing_key, where)
    name = _model_name(path, where)
    library = signing.verified_bytes(path, key, where)
    blob = None if weights is None else signing.verified_bytes(Path(weights), key, where)
    return _from_bytes(name, library, blob, n_threads)


def _model_name(path: Path, where: str) -> str:
    """The <name> of an existing lib<name>.so."""
    if not path.is_file():
        raise ValueError(f"{where}: no such file")
    if not (path.name.startswith("lib") and path.suffix == ".so"):
        raise ValueError(f"{where}: expected a lib<name>.so file")
    return path.name[3:-3]


class LoadedModel:
    """An exported model running in this process through its C API."""

    def __init__(self, path: Path, weights: str | Path | None = None, n_threads: int = 0):
        where = f"aotk.load('{path}')"
        self.path, self.name, self.where = path, _model_name(path, where), where
        self._weights, self._threads = weights, n_threads  # as asked: a pickle re-resolves 0
        self._blobs: tuple[bytes, bytes | None] | None = None  # set when unpickled
        elf_check.check_library(path, self.name, where)
        try:
            self._lib = ctypes.CDLL(str(path.resolve()))
        except OSError as err:
            raise ValueError(f"{where}: cannot open the library: {err}") from None
        self.info = self._read_info()
        self._specs: list[tuple[str, Shape, np.dtype]] = [
            (s["name"], tuple(s["shape"]), np.dtype(s["dtype"])) for s in self.info["inputs"]
        ]
        self._outputs = OutputPool([np.dtype(d) for d in self.info["output_dtypes"]])
        self._model = ctypes.c_void_p()
        threads = n_threads if n_threads > 0 else native_runtime.threads_if_running()
        options = Options(threads, None if weights is None else os.fsencode(weights))
        create = getattr(self._lib, f"{self.name}_create")
        self._check(create(ctypes.byref(self._model), ctypes.byref(options)))

    def _read_info(self) -> dict[str, Any]:
        lib = self._lib
        try:
            info_fn = getattr(lib, f"{self.name}_info_json")
        except AttributeError:
            raise ValueError(f"{self.where}: not an aotk model library") from None
        info_fn.restype = ctypes.c_char_p
        info = json.loads(info_fn())
        if info["aotk_version"] != aotk.__version__:
            raise ValueError(
                f"{self.where}: exported by aotk {info['aotk_version']}, "
                f"this is aotk {aotk.__version__}"
            )
        lib.aotk_last_error.restype = ctypes.c_char_p
        lib.aotk_model_variable_name.restype = ctypes.c_char_p
        lib.aotk_model_variable_name.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.aotk_model_num_variables.restype = ctypes.c_size_t
        lib.aotk_model_num_variables.argtypes = [ctypes.c_void_p]
        lib.aotk_model_destroy.argtypes = [ctypes.c_void_p]
        lib.aotk_model_threads.argtypes = [ctypes.c_void_p]
        return info

    def _check(self, status: int) -> None:
        if status != 0:
            message = self._lib.aotk_last_error().decode()
            raise ValueError(f"{self.where}: {message} (status {status})")

    @property
    def variable_names(self) -> list[str]:
        n = self._lib.aotk_model_num_variables(self._model)
        return [self._lib.aotk_model_variable_name(self._model, i).decode() for i in range(n)]

    @property
    def threads(self) -> int:
        return int(self._lib.aotk_model_threads(self._model))

    def get_variable(self, name: str) -> np.ndarray:
        slot = next((s for s in self._slots() if s[0] == name), None)
        out = runtime.aligned_empty(slot[2], slot[1]) if slot else np.zeros(1, np.uint8)
        dst = _tensor(out)
        self._check(
            self._lib.aotk_model_get_variable(self._model, name.encode(), ctypes.byref(dst))
        )
        return out

    def set_variable(self, name: str, value: Any) -> None:
        slot = next((s for s in self._slots() if s[0] == name), None)
        array = runtime.as_kernel_buffer(np.asarray(value, dtype=slot[1] if slot else None))
        src = _tensor(array)
        self._check(
            self._lib.aotk_model_set_variable(self._model, name.encode(), ctypes.byref(src))
        )

    def _slots(self) -> list[tuple[str, np.dtype, tuple[int, ...]]]:
        return [(v["name"], np.dtype(v["dtype"]), tuple(v["shape"])) for v in self.info["captures"]]

    def __call__(self, values: Sequence[Any]) -> Any:
        arrays = self._inputs(values)
        ins = (Tensor * max(len(arrays), 1))(*[_tensor(a) for a in arrays])
        n_out = len(self.info["output_dtypes"])
        outs = (Tensor * max(n_out, 1))()
        self._check(self._lib.aotk_model_output_shapes(self._model, ins, len(arrays), outs, n_out))
        # released outputs of the last call are reused: no page faults for fresh memory
        results, addresses = self._outputs.take([tuple(t.dims[: t.rank]) for t in outs[:n_out]])
        for t, out, address in zip(outs, results, addresses, strict=False):
            t.data, t.capacity = address, out.nbytes
        self._check(self._lib.aotk_model_run(self._model, ins, len(arrays), outs, n_out))
        return results[0] if self.info["single"] else results

    def _inputs(self, values: Sequence[Any]) -> list[np.ndarray]:
        specs = self.info["inputs"]
        if not isinstance(values, list | tuple):
            raise TypeError(f"{self.where}: call it with a list of {len(specs)} arrays")
        values = list(values)
        if self.info["implicit_phase"] and len(values) == len(specs) - 1:
            values.append(np.array(bool(trace.default_phase())))
        if len(values) != len(specs):
            raise ValueError(f"{self.where}: expected {len(specs)} inputs, got {len(values)}")
        return [
            runtime.as_kernel_buffer(coerce_input(v, name, shape, dtype, self.where))
            for v, (name, shape, dtype) in zip(values, self._specs, strict=True)
        ]

    def __reduce__(self) -> tuple[Any, ...]:
        blobs = self._blobs
        if blobs is None:
            weights = Path(self._weights).read_bytes() if self._weights else None
            blobs = (self.path.read_bytes(), weights)
        return (_from_bytes, (self.name, *blobs, self._threads))

    def __del__(self) -> None:
        model = getattr(self, "_model", None)
        if model is not None and model.value:
            self._lib.aotk_model_destroy(model)
            self._model = None


def _tensor(a: np.ndarray) -> Tensor:
    dims = (ctypes.c_int64 * MAX_RANK)(*a.shape)
    return Tensor(_CODE_OF[a.dtype], a.ndim, dims, runtime.address(a), a.nbytes)


def _from_bytes(name: str, library: bytes, weights: bytes | None, n_threads: int) -> LoadedModel:
    """Unpickle: write the library (and weights) to a private directory and open it.

    The files are deleted once opened (the loader and the weights mapping keep them
    alive), so unpickling leaves nothing behind; the bytes stay for pickling again."""
    folder = Path(tempfile.mkdtemp(prefix="aotk-load-"))
    try:
        path = folder / f"lib{name}.so"
        path.write_bytes(library)
        weights_path = None
        if weights is not None:
            weights_path = folder / f"{name}.weights"
            weights_path.write_bytes(weights)
        model = LoadedModel(path, weights_path, n_threads)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    model._blobs = (library, weights)
    return model
