"""aotk's one-sweep conversions give the IR xDSL's worklist-driven passes give."""

from __future__ import annotations

import pytest
from graphs import mlp_step, rnn
from xdsl.transforms.dead_code_elimination import is_trivially_dead

from aotk.lowering import pipeline

BEFORE = "aotk-memory-to-llvm,aotk-outline-kernels,aotk-parallelize"
XDSL = f"{BEFORE},convert-scf-to-cf"
AOTK = f"{BEFORE},aotk-scf-to-cf"


@pytest.mark.parametrize("build", [mlp_step, rnn])
def test_same_ir_as_xdsl_scf_to_cf(build) -> None:
    loops = build().clone()
    pipeline.lower(loops, stop_after="loops")
    texts = [str(pipeline.run(loops.clone(), spec)) for spec in (XDSL, AOTK)]
    assert texts[0] == texts[1]
    assert "cf.cond_br" in texts[1] and "scf." not in texts[1] and "memref." not in texts[1]


@pytest.mark.parametrize("build", [mlp_step, rnn])
def test_outlining_leaves_no_dead_ops_behind(build) -> None:
    """xDSL's walkers removed dead ops as they went; the one-sweep passes do not, so the
    passes before them must not leave any (LLVM would remove them, at a cost)."""
    module = build().clone()
    pipeline.lower(module, stop_after="loops")
    pipeline.run(module, AOTK)
    assert "main_k0" in str(module)  # kernels were outlined
    dead = [op for op in module.walk() if op.results and is_trivially_dead(op)]
    assert not dead, dead[:3]
