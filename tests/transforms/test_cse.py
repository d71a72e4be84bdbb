"""`aotk-cse` makes xDSL's `cse` decisions: same IR on real kernels and on the edge cases."""

from __future__ import annotations

import pytest
from graphs import mlp_step, rnn
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from aotk.context import make_context
from aotk.lowering import pipeline

# loads merge only with no store between them; a pure op merges into an enclosing
# scope's twin but not into a sibling region's; a dead load goes; func bodies are
# isolated, so the second function keeps its own constant
EDGES = """
func.func @edges(%m: memref<8xf32>, %i: index, %n: index) -> f32 {
  %a = memref.load %m[%i] : memref<8xf32>
  %b = memref.load %m[%i] : memref<8xf32>
  memref.store %a, %m[%n] : memref<8xf32>
  %c = memref.load %m[%i] : memref<8xf32>
  %dead = memref.load %m[%n] : memref<8xf32>
  %one = arith.constant 1 : index
  %s = arith.addf %a, %b : f32
  scf.for %k = %i to %n step %one {
    %one_again = arith.constant 1 : index
    %j = arith.addi %k, %one_again : index
    memref.store %s, %m[%j] : memref<8xf32>
  }
  scf.for %k = %i to %n step %one {
    %two = arith.constant 2 : index
    %j = arith.addi %k, %two : index
    memref.store %c, %m[%j] : memref<8xf32>
  }
  %two = arith.constant 2 : index
  %t = arith.addf %s, %c : f32
  memref.store %t, %m[%two] : memref<8xf32>
  func.return %t : f32
}
func.func @other() -> index {
  %one = arith.constant 1 : index
  func.return %one : index
}
"""


def _run(text: str, spec: str) -> str:
    module = Parser(make_context(), text).parse_module()
    return str(pipeline.run(module, spec))


def test_edge_cases_match_xdsl_and_by_hand() -> None:
    ours = _run(EDGES, "aotk-cse")
    assert ours == _run(EDGES, "cse")
    assert ours.count("memref.load") == 2  # %b merged into %a; %c kept; %dead erased
    assert ours.count("arith.constant 1 : index") == 2  # once per function
    assert ours.count("arith.constant 2 : index") == 2  # sibling loop's is not visible after


@pytest.mark.parametrize("build", [mlp_step, rnn])
def test_same_ir_as_xdsl_cse_at_each_stage_it_runs(build) -> None:
    traced: ModuleOp = build()
    graph = traced.clone()
    pipeline.lower(graph, stop_after="graph")
    emitted = pipeline.run(graph.clone(), "convert-aotk-to-loops")
    pointers = pipeline.run(graph.clone(), f"{pipeline.STAGES['loops']},aotk-memory-to-llvm")
    for module in (traced, emitted, pointers):
        texts = [str(pipeline.run(module.clone(), cse)) for cse in ("cse", "aotk-cse")]
        assert texts[0] == texts[1]
        if module is not traced:
            assert texts[1] != str(module)  # there was something to eliminate
