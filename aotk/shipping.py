"""Compiled code as bytes: pickling carries native code, never a recipe to recompile.

`pack` bundles a function's object code with that of the micro-kernels it calls and a
description (`aotk.function` puts its traced IR, for call-time shape checks, which is
parsed, not compiled, and its signature there). `unpack` refuses code from another aotk
version or for CPU features this host lacks, and links the rest. Those checks catch
mistakes, not attacks: code from a pickle is as trusted as the pickle (`aotk.signing`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import aotk
from aotk import compile_cache, micro_kernels
from aotk.codegen import jit, llvm_ir
from aotk.codegen.llvm_ir import required_features
from aotk.kernels import library


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


def pack(code: jit.NativeCode, meta: dict[str, Any]) -> bytes:
    """`code` with the micro-kernels it calls bundled in, and `meta` (plus this aotk's
    version and CPU), as bytes."""
    meta = {
        **meta,
        "aotk_version": aotk.__version__,
        "cpu": llvm_ir.host_cpu(),
        "features": llvm_ir.host_features(),
    }
    called = sorted(set().union(*map(library.called, code.objects)))
    kernels = [micro_kernels.objects_of(symbol) for symbol in called]
    meta["micro_kernels"] = [[s, len(objs)] for s, objs in zip(called, kernels, strict=True)]
    bundled = dataclasses.replace(code, objects=code.objects + tuple(o for k in kernels for o in k))
    return compile_cache.encode(bundled, meta)


def unpack(blob: bytes) -> tuple[jit.CompiledModule, dict[str, Any]]:
    """What `pack` made, checked and linked into this process: the code and its meta."""
    try:
        code, meta = compile_cache.decode(blob)
    except compile_cache.CorruptNativeCode as err:
        raise ValueError(f"aotk: cannot unpickle a compiled function: {err}") from None
    check_loadable(meta, f"aotk: unpickling {meta.get('where', 'a function')}")
    return micro_kernels.load(_provide_micro_kernels(code, meta)), meta


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
