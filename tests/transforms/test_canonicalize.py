"""`aotk-canonicalize` gives the IR xDSL's `canonicalize` gives, on real kernels."""

from __future__ import annotations

import pytest
from graphs import mlp_step, rnn

from aotk.lowering import pipeline


@pytest.mark.parametrize("build", [mlp_step, rnn])
def test_same_ir_as_xdsl_canonicalize(build) -> None:
    traced = build()
    texts = []
    for canonicalize in ("canonicalize", "aotk-canonicalize"):
        module = traced.clone()
        pipeline.lower(module, stop_after="graph")
        pipeline.run(module, f"convert-aotk-to-loops,cse,{canonicalize},cse")
        texts.append(str(module))
    assert texts[0] == texts[1]
    assert "scf.for" in texts[1] and texts[1].count("\n") > 100
