"""`aotk-canonicalize` gives the IR xDSL's `canonicalize` gives, on real kernels, with the
integer folds xDSL lacks (`fold_integers`) added to both."""

from __future__ import annotations

import pytest
from graphs import mlp_step, rnn
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker
from xdsl.transforms.canonicalize import CanonicalizationRewritePattern
from xdsl.transforms.dead_code_elimination import region_dce

from aotk.context import make_context
from aotk.lowering import pipeline
from aotk.transforms.fold_integers import FoldIntegers


def _xdsl_canonicalize(module: ModuleOp, ctx: Context) -> None:
    """xDSL's `canonicalize` pass, its patterns and `FoldIntegers` tried in turn."""
    patterns = [FoldIntegers(), CanonicalizationRewritePattern()]
    applier = GreedyRewritePatternApplier(patterns, ctx=ctx, folding_enabled=True)
    PatternRewriteWalker(applier, post_walk_func=region_dce).rewrite_module(module)


@pytest.mark.parametrize("build", [mlp_step, rnn])
def test_same_ir_as_xdsl_canonicalize(build) -> None:
    traced = build()
    texts = []
    for ours in (False, True):
        module = traced.clone()
        pipeline.lower(module, stop_after="graph")
        pipeline.run(module, "convert-aotk-to-loops,cse")
        if ours:
            pipeline.run(module, "aotk-canonicalize")
        else:
            _xdsl_canonicalize(module, make_context())
        pipeline.run(module, "cse")
        texts.append(str(module))
    assert texts[0] == texts[1]
    assert "scf.for" in texts[1] and texts[1].count("\n") > 100
