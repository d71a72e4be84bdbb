"""Compiled functions as bytes: pickling carries native code, never a recipe to recompile.

A pickle holds the object code (with that of the micro-kernels it calls), the traced IR
(for call-time shape checks, which is parsed, not compiled), the signature, and the
current values of the captured arrays.
Loading refuses code from another aotk version or for CPU features this host lacks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.parser import Parser

import aotk
from aotk import compile_cache, micro_kernels, runtime
from aotk.codegen import jit, llvm_ir
from aotk.context import make_context
from aotk.kernels import library

if TYPE_CHECKING:
    from aotk.function import Function


@dataclass
class Capture:
    """A captured array of an unpickled or loaded function (variable, constant or state)."""

    name: str
    storage: np.ndarray
    kernel_updated: bool = False


def required_features(features: str) -> list[str]:
    """The features a code generation string ("+avx2,-avx512f,...") switches on."""
    return sorted(f[1:] for f in features.split(",") if f.startswith("+"))


def missing_features(features: str) -> list[str]:
    """Features code built with `features` needs and this CPU lacks."""
    host = set(required_features(llvm_ir.host_features()))
    return [f for f in required_features(features) if f not in host]


def check_loadable(meta: dict[str, Any], what: str) -> None:
    """Refuse code from another aotk version, or for features this CPU lacks."""
    if meta.get("aotk_version") != aotk.__version__:
        raise ValueError(
            f"{what}: made by aotk {meta.get('aotk_version')}, this is aotk {aotk.__version__}"
        )
    missing = missing_features(meta.get("features", ""))
    if missing:
        raise ValueError(
            f"{what}: compiled for CPU '{meta.get('cpu')}' with features this CPU lacks: "
            f"{', '.join(missing)}"
        )


def reduce_function(fn: Function) -> tuple[Any, ...]:
    if any(fn._feeds):
        raise TypeError(f"{fn.where}: a function with sparse inputs cannot be pickled")
    meta = {
        "aotk_version": aotk.__version__,
        "cpu": llvm_ir.host_cpu(),
        "features": llvm_ir.host_features(),
        "ir": str(fn.module),
        "where": fn.where,
        "name": fn.name,
        "names": fn._inputs.names,
        "n_outputs": fn._n_outputs,
        "single": fn._single,
        "implicit_phase": fn._implicit_phase,
        "updated": [_index_of(fn.captures, v) for v in fn._updated],
        "captures": [(_name(c), bool(getattr(c, "kernel_updated", False))) for c in fn.captures],
    }
    code = fn._compiled.code
    called = sorted(set().union(*map(library.called, code.objects)))
    kernels = [micro_kernels.objects_of(symbol) for symbol in called]
    meta["micro_kernels"] = [[s, len(objs)] for s, objs in zip(called, kernels, strict=True)]
    bundled = dataclasses.replace(code, objects=code.objects + tuple(o for k in kernels for o in k))
    blob = compile_cache.encode(bundled, meta)
    arrays = [np.array(c.storage) for c in fn.captures]
    return (restore_function, (blob, arrays))


def restore_function(blob: bytes, arrays: list[np.ndarray]) -> Function:
    """Rebuild a pickled function: link its object code, parse its IR; compile nothing."""
    from aotk.function import Function

    try:
        code, meta = compile_cache.decode(blob)
    except compile_cache.CorruptNativeCode as err:
        raise ValueError(f"aotk: cannot unpickle a compiled function: {err}") from None
    check_loadable(meta, f"aotk: unpickling {meta.get('where', 'a function')}")
    fn = Function.__new__(Function)
    fn.where, fn.name = meta["where"], meta.get("name", "main")
    fn._single, fn._feeds = meta["single"], []
    fn._implicit_phase, fn._n_outputs = meta["implicit_phase"], meta["n_outputs"]
    fn.module = Parser(make_context(), meta["ir"]).parse_module()
    fn.captures = [
        Capture(name, runtime.aligned_copy(a), updated)
        for (name, updated), a in zip(meta["captures"], arrays, strict=True)
    ]
    fn._updated = [fn.captures[i] for i in meta["updated"]]
    fn._setup(meta["names"], jit.load(_provide_micro_kernels(code, meta)))
    return fn


def _provide_micro_kernels(code: jit.NativeCode, meta: dict[str, Any]) -> jit.NativeCode:
    """Link the micro-kernels bundled at the end of `code.objects`; the rest of `code`."""
    objects = list(code.objects)
    for symbol, count in reversed(meta.get("micro_kernels", [])):
        if not isinstance(count, int) or not 0 < count < len(objects):
            raise ValueError("aotk: cannot unpickle a compiled function: bad micro-kernel list")
        objects, own = objects[:-count], tuple(objects[-count:])
        try:
            micro_kernels.provide(symbol, own)
        except KeyError as err:
            raise ValueError(f"aotk: cannot unpickle a compiled function: {err}") from None
    return dataclasses.replace(code, objects=tuple(objects))


def _index_of(captures: list[Any], var: Any) -> int:
    for i, c in enumerate(captures):
        if c is var:
            return i
    raise ValueError(f"variable '{_name(var)}' is updated but not captured")


def _name(capture: Any) -> str:
    return str(getattr(capture, "name", None) or "capture")
