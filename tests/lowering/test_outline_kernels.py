"""Which region ops of an entry `aotk-outline-kernels` outlines (`kernels_of`)."""

from __future__ import annotations

import pytest
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from aotk.context import make_context
from aotk.lowering import outline_kernels
from aotk.lowering.outline_kernels import kernels_of

# an outer loop over a long flat body (6 ops), and an outer loop around an inner loop
SOURCE = """
func.func @entry(%x: !llvm.ptr, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %w = arith.mulf %v, %two : f32
    %w2 = arith.mulf %w, %w : f32
    llvm.store %w2, %p : f32, !llvm.ptr
  }
  scf.for %i = %c0 to %n step %c1 {
    %i64 = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    scf.for %j = %c0 to %n step %c1 {
      %v = llvm.load %p : !llvm.ptr -> f32
      %w = arith.mulf %v, %two : f32
      %w2 = arith.addf %w, %v : f32
      llvm.store %w2, %p : f32, !llvm.ptr
    }
  }
  %sum, %prod = scf.for %i = %c0 to %n step %c1 iter_args(%s = %two, %q = %two) -> (f32, f32) {
    %s2 = arith.addf %s, %two : f32
    %s3 = arith.addf %s2, %s : f32
    %q2 = arith.mulf %q, %two : f32
    %q3 = arith.mulf %q2, %q : f32
    scf.yield %s3, %q3 : f32, f32
  }
  func.return
}
"""


def _loops(block) -> list[scf.ForOp]:
    return [op for op in block.ops if isinstance(op, scf.ForOp)]


@pytest.fixture
def entry() -> func.FuncOp:
    module = Parser(make_context(), SOURCE).parse_module()
    assert isinstance(module, ModuleOp)
    fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return fn


def test_the_sizes_the_limits_below_are_set_by(entry: func.FuncOp) -> None:
    flat, nest, two_results = _loops(entry.body.block)
    (inner,) = _loops(nest.body.block)
    sizes = [outline_kernels._size(op) for op in (flat, nest, inner, two_results)]
    assert sizes == [8, 10, 6, 6]  # each op, its yield included


def test_loops_under_the_limit_are_outlined_whole(entry: func.FuncOp) -> None:
    flat, nest, _ = _loops(entry.body.block)
    assert kernels_of(entry.body.block) == [flat, nest]  # two results: never outlined


def test_a_large_loop_outlines_its_inner_loops(monkeypatch, entry: func.FuncOp) -> None:
    monkeypatch.setattr(outline_kernels, "MAX_OPS", 9)
    flat, nest, _ = _loops(entry.body.block)
    assert kernels_of(entry.body.block) == [flat, *_loops(nest.body.block)]


def test_a_large_loop_with_nothing_inside_to_outline_is_outlined_whole(
    monkeypatch, entry: func.FuncOp
) -> None:
    """Left in the entry, its body would be compiled as glue (LLVM's quick codegen)."""
    monkeypatch.setattr(outline_kernels, "MAX_OPS", 5)
    flat, nest, _ = _loops(entry.body.block)
    assert kernels_of(entry.body.block) == [flat, *_loops(nest.body.block)]
