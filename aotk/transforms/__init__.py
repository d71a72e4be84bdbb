"""aotk's passes, by name, as lazy getters (xDSL's convention)."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.passes import ModulePass


def _fuse() -> type[ModulePass]:
    from aotk.transforms.fuse import AotkFusePass

    return AotkFusePass


def _simplify() -> type[ModulePass]:
    from aotk.transforms.simplify import AotkSimplifyPass

    return AotkSimplifyPass


def _canonicalize() -> type[ModulePass]:
    from aotk.transforms.canonicalize import AotkCanonicalizePass

    return AotkCanonicalizePass


def _cse() -> type[ModulePass]:
    from aotk.transforms.cse import AotkCSEPass

    return AotkCSEPass


def _check_stage() -> type[ModulePass]:
    from aotk.transforms.check_stage import AotkCheckStagePass

    return AotkCheckStagePass


def _to_loops() -> type[ModulePass]:
    from aotk.lowering.convert_aotk_to_loops import ConvertAotkToLoopsPass

    return ConvertAotkToLoopsPass


def _memory_to_llvm() -> type[ModulePass]:
    from aotk.lowering.memory_to_llvm import AotkMemoryToLLVMPass

    return AotkMemoryToLLVMPass


def _parallelize() -> type[ModulePass]:
    from aotk.lowering.parallelize import AotkParallelizePass

    return AotkParallelizePass


def _outline_kernels() -> type[ModulePass]:
    from aotk.lowering.outline_kernels import AotkOutlineKernelsPass

    return AotkOutlineKernelsPass


def _std_to_llvm() -> type[ModulePass]:
    from aotk.lowering.convert_aotk_std_to_llvm import ConvertAotkStdToLLVMPass

    return ConvertAotkStdToLLVMPass


def _rewrite_once(name: str) -> Callable[[], type[ModulePass]]:
    def get() -> type[ModulePass]:
        from aotk.lowering import rewrite_once

        return getattr(rewrite_once, name)

    return get


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "aotk-simplify": _simplify,
    "aotk-fuse": _fuse,
    "aotk-canonicalize": _canonicalize,
    "aotk-cse": _cse,
    "aotk-check-stage": _check_stage,
    "convert-aotk-to-loops": _to_loops,
    "aotk-memory-to-llvm": _memory_to_llvm,
    "aotk-outline-kernels": _outline_kernels,
    "aotk-parallelize": _parallelize,
    "convert-aotk-std-to-llvm": _std_to_llvm,
    "aotk-scf-to-cf": _rewrite_once("AotkScfToCfPass"),
}


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes plus aotk's."""
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **ALL_PASSES}
