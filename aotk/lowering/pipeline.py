"""Named stages of aotk's pipeline, each a list of pass specs (see STYLE section 6).

`lower(module, stop_after=...)` runs the stages in order up to the named one, so any stage
can be printed or interpreted. `STAGES` is the single definition used by `K.function`,
`aotk-opt -p` users and the tests.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import PassPipeline

from aotk import timing
from aotk.context import make_context

# Cleans up loops as emitted (by convert-aotk-to-loops, or the micro-kernel library).
# cse first: emitters repeat index arithmetic, and canonicalizing then walks a quarter
# fewer ops. aotk-cse and aotk-canonicalize give the IR xDSL's cse and canonicalize give,
# in about half the time.
LOOPS_CLEANUP = "aotk-cse,aotk-canonicalize,aotk-cse,aotk-check-stage{stage=loops}"

STAGES: dict[str, str] = {
    "trace": "",
    "graph": "aotk-simplify,canonicalize,aotk-cse,dce,aotk-fuse,aotk-cse,dce",
    "loops": f"convert-aotk-to-loops,{LOOPS_CLEANUP}",
    "llvm": ",".join(
        [
            "aotk-memory-to-llvm",
            "aotk-outline-kernels",
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
    return run(module, f"{LOOPS_CLEANUP},{STAGES['llvm']}")


def run(module: ModuleOp, spec: str) -> ModuleOp:
    """Apply the comma-joined pass `spec` in place (timed per pass with AOTK_TIMING=1)."""
    from aotk.transforms import all_passes

    if spec:
        passes = PassPipeline.parse_spec(all_passes(), spec).passes
        callback = timing.pass_callback() if timing.enabled() else None
        PassPipeline(passes, callback).apply(make_context(), module)
    return module
