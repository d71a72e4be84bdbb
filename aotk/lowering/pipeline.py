"""Named stages of aotk's pipeline, each a list of pass specs (see STYLE section 6).

`lower(module, stop_after=...)` runs the stages in order up to the named one, so any stage
can be printed or interpreted. `STAGES` is the single definition used by `K.function`,
`aotk-opt -p` users and the tests; `ALL_PASSES` names every aotk pass, each imported only
when a pipeline uses it (xDSL's convention).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

from aotk import timing
from aotk.context import make_context

# Cleans up loops as emitted (by convert-aotk-to-loops, or the micro-kernel library).
# cse first: emitters repeat index arithmetic, and canonicalizing then walks a quarter
# fewer ops. A second cse after canonicalize merged 170 of ResNet50's 26,600 ops, for
# about 4% of the lowering's time; LLVM merges those. aotk-cse and aotk-canonicalize give
# the IR xDSL's cse and canonicalize give, in about half the time.
LOOPS_CLEANUP = "aotk-cse,aotk-canonicalize,aotk-check-stage{stage=loops}"
# Kernels are outlined as emitted, before any cleanup: identical ones become one function
# there, so the cleanup and every later pass handle each distinct kernel once.
OUTLINED_CLEANUP = f"aotk-outline-kernels,{LOOPS_CLEANUP}"

STAGES: dict[str, str] = {
    "trace": "",
    "graph": (
        "aotk-simplify,aotk-pointwise-convs,canonicalize,aotk-cse,aotk-merge-scans,dce,"
        "aotk-hoist-scan-matmuls,"
        "aotk-scan-accumulations,dce,aotk-matmul-updates,dce,aotk-split-dilated-convs,"
        "aotk-pointwise-convs,"
        "aotk-fuse,aotk-conv-pool,aotk-cse,dce,aotk-early-updates"
    ),
    "loops": f"convert-aotk-to-loops,{OUTLINED_CLEANUP}",
    "llvm": ",".join(
        [
            "aotk-memory-to-llvm",
            "aotk-parallelize",
            "aotk-scf-to-cf",
            "convert-aotk-std-to-llvm",
            "aotk-check-stage{stage=llvm}",
        ]
    ),
}


def stage_names() -> list[str]:
    return list(STAGES)


def passes_for(stop_after: str, start_after: str = "trace") -> str:
    """The comma-joined pass spec from after `start_after` through `stop_after`."""
    names = stage_names()
    if stop_after not in STAGES:
        raise ValueError(f"unknown stage {stop_after!r}; stages are {', '.join(names)}")
    first, last = names.index(start_after) + 1, names.index(stop_after) + 1
    return ",".join(STAGES[n] for n in names[first:last] if STAGES[n])


def lower(module: ModuleOp, stop_after: str = "llvm", start_after: str = "trace") -> ModuleOp:
    """Run the pipeline in place from after `start_after` through `stop_after`."""
    return run(module, passes_for(stop_after, start_after))


def lower_emitted_loops(module: ModuleOp) -> ModuleOp:
    """Clean up and lower to the llvm stage a module of loops built directly (no aotk ops)."""
    return run(module, f"{OUTLINED_CLEANUP},{STAGES['llvm']}")


def run(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply the comma-joined pass `spec` in place (timed per pass with AOTK_TIMING=1)."""
    if spec:
        passes = PassPipeline.parse_spec(all_passes(), spec).passes
        callback = timing.pass_callback() if timing.enabled() else None
        PassPipeline(passes, callback).apply(make_context(), module)
    return module


# aotk's passes by name, as lazy getters
def _fuse() -> type[ModulePass]:
    from aotk.transforms.fuse import AotkFusePass

    return AotkFusePass


def _simplify() -> type[ModulePass]:
    from aotk.transforms.simplify import AotkSimplifyPass

    return AotkSimplifyPass


def _merge_scans() -> type[ModulePass]:
    from aotk.transforms.merge_scans import AotkMergeScansPass

    return AotkMergeScansPass


def _hoist_scan_matmuls() -> type[ModulePass]:
    from aotk.transforms.hoist_scan_matmuls import AotkHoistScanMatmulsPass

    return AotkHoistScanMatmulsPass


def _scan_accumulations() -> type[ModulePass]:
    from aotk.transforms.scan_accumulations import AotkScanAccumulationsPass

    return AotkScanAccumulationsPass


def _matmul_updates() -> type[ModulePass]:
    from aotk.transforms.matmul_updates import AotkMatmulUpdatesPass

    return AotkMatmulUpdatesPass


def _pointwise_convs() -> type[ModulePass]:
    from aotk.transforms.pointwise_convs import AotkPointwiseConvsPass

    return AotkPointwiseConvsPass


def _split_dilated_convs() -> type[ModulePass]:
    from aotk.transforms.split_dilated_convs import AotkSplitDilatedConvsPass

    return AotkSplitDilatedConvsPass


def _early_updates() -> type[ModulePass]:
    from aotk.transforms.early_updates import AotkEarlyUpdatesPass

    return AotkEarlyUpdatesPass


def _conv_pool() -> type[ModulePass]:
    from aotk.transforms.conv_pool import AotkConvPoolPass

    return AotkConvPoolPass


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


def _scf_to_cf() -> type[ModulePass]:
    from aotk.lowering.scf_to_cf import AotkScfToCfPass

    return AotkScfToCfPass


ALL_PASSES: dict[str, Callable[[], type[ModulePass]]] = {
    "aotk-simplify": _simplify,
    "aotk-fuse": _fuse,
    "aotk-merge-scans": _merge_scans,
    "aotk-hoist-scan-matmuls": _hoist_scan_matmuls,
    "aotk-scan-accumulations": _scan_accumulations,
    "aotk-matmul-updates": _matmul_updates,
    "aotk-pointwise-convs": _pointwise_convs,
    "aotk-split-dilated-convs": _split_dilated_convs,
    "aotk-conv-pool": _conv_pool,
    "aotk-early-updates": _early_updates,
    "aotk-canonicalize": _canonicalize,
    "aotk-cse": _cse,
    "aotk-check-stage": _check_stage,
    "convert-aotk-to-loops": _to_loops,
    "aotk-memory-to-llvm": _memory_to_llvm,
    "aotk-outline-kernels": _outline_kernels,
    "aotk-parallelize": _parallelize,
    "convert-aotk-std-to-llvm": _std_to_llvm,
    "aotk-scf-to-cf": _scf_to_cf,
}


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's passes plus aotk's."""
    from xdsl.transforms import get_all_passes

    return {**get_all_passes(), **ALL_PASSES}
