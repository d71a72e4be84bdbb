"""`aotk-parallelize` on hand-written IR, and which loops `Kernel` marks parallel."""

from __future__ import annotations

import pytest
from xdsl.builder import Builder
from xdsl.dialects import func, llvm, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Block
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint

from aotk.context import make_context
from aotk.kernels.kernel import INDEX, PARALLEL_ATTR, PARALLEL_GRAIN, Kernel
from aotk.kernels.loop_cost import UNKNOWN_TRIPS
from aotk.lowering.parallelize import AotkParallelizePass

NESTED = """
func.func @nested(%out: !llvm.ptr, %rows: index, %cols: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %rows step %c1 {
    %row = arith.muli %i, %cols : index
    scf.for %j = %c0 to %cols step %c1 {
      %at = arith.addi %row, %j : index
      %at64 = arith.index_cast %at : index to i64
      %p = llvm.getelementptr inbounds %out[%at64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %zero, %p : f32, !llvm.ptr
    } {aotk.parallel = 8 : i64}
  } {aotk.parallel = 1 : i64}
  func.return
}
"""


def _apply(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    AotkParallelizePass().apply(make_context(), module)
    module.verify()
    return module


def _functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def test_nested_loops_become_nested_tasks() -> None:
    fns = _functions(_apply(NESTED))
    assert set(fns) == {"aotk_parallel_for", "nested", "nested_par0", "nested_par0_par0"}
    assert not fns["aotk_parallel_for"].body.blocks  # a declaration
    for name in ("nested_par0", "nested_par0_par0"):
        inputs = [str(t) for t in fns[name].function_type.inputs]
        assert inputs == ["!llvm.ptr", "i64", "i64"]
    # no loop is left in the kernel; each task runs one of the two loops
    assert not [o for o in fns["nested"].walk() if isinstance(o, scf.ForOp)]
    for name in ("nested_par0", "nested_par0_par0"):
        assert len([o for o in fns[name].walk() if isinstance(o, scf.ForOp)]) == 1


def test_contexts_live_in_entry_blocks() -> None:
    """Each context is allocated once in the entry block of the function launching it: the
    inner loop's in the outer task, so threads never share one."""
    fns = _functions(_apply(NESTED))
    for name in ("nested", "nested_par0"):
        allocas = [o for o in fns[name].walk() if isinstance(o, llvm.AllocaOp)]
        assert len(allocas) == 1 and allocas[0].parent_block() is fns[name].body.blocks[0]
    assert not [o for o in fns["nested_par0_par0"].walk() if isinstance(o, llvm.AllocaOp)]


def test_only_non_constants_are_passed() -> None:
    """The inner task loads the row offset and the buffer, and rebuilds 0.0 itself."""
    fns = _functions(_apply(NESTED))
    loads = [o for o in fns["nested_par0_par0"].walk() if isinstance(o, llvm.LoadOp)]
    assert [str(o.dereferenced_value.type) for o in loads] == ["i64", "!llvm.ptr"]
    assert "arith.constant 0.000000e+00 : f32" in str(fns["nested_par0_par0"])


def test_splat_of_a_constant_is_rebuilt() -> None:
    text = """
    func.func @splat(%out: !llvm.ptr, %n: index) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %zero = arith.constant 0.0 : f32
      %zeros = vector.broadcast %zero : f32 to vector<8xf32>
      scf.for %i = %c0 to %n step %c1 {
        %i64 = arith.index_cast %i : index to i64
        %p = llvm.getelementptr inbounds %out[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        llvm.store %zeros, %p : vector<8xf32>, !llvm.ptr
      } {aotk.parallel = 2 : i64}
      func.return
    }
    """
    task = _functions(_apply(text))["splat_par0"]
    loads = [o for o in task.walk() if isinstance(o, llvm.LoadOp)]
    assert [str(o.dereferenced_value.type) for o in loads] == ["!llvm.ptr"]
    assert "vector.broadcast" in str(task)


def test_threshold_guards_the_launch() -> None:
    fns = _functions(_apply(NESTED))
    assert not [o for o in fns["nested"].walk() if isinstance(o, scf.IfOp)]  # threshold 1
    ifs = [o for o in fns["nested_par0"].walk() if isinstance(o, scf.IfOp)]
    assert len(ifs) == 1
    calls = [
        [c.callee.string_value() for c in r.walk() if isinstance(c, func.CallOp)]
        for r in ifs[0].regions
    ]
    assert calls == [["aotk_parallel_for"], ["nested_par0_par0"]]


def test_constant_trip_count_above_threshold_launches_unguarded() -> None:
    text = """
    func.func @fill(%out: !llvm.ptr) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c100 = arith.constant 100 : index
      %one = arith.constant 1.0 : f32
      scf.for %i = %c0 to %c100 step %c1 {
        %i64 = arith.index_cast %i : index to i64
        %p = llvm.getelementptr inbounds %out[%i64] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        llvm.store %one, %p : f32, !llvm.ptr
      } {aotk.parallel = 4 : i64}
      func.return
    }
    """
    fns = _functions(_apply(text))
    assert not [o for o in fns["fill"].walk() if isinstance(o, scf.IfOp)]
    assert "arith.constant 100 : i64" in str(fns["fill"])  # the trip count, folded


def test_loop_carrying_values_is_rejected() -> None:
    text = """
    func.func @carry(%n: index) -> index {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %s = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
        %t = arith.addi %acc, %i : index
        scf.yield %t : index
      } {aotk.parallel = 2 : i64}
      func.return %s : index
    }
    """
    with pytest.raises(ValueError, match="iter_args"):
        _apply(text)


def _kernel() -> tuple[Kernel, Block]:
    block = Block(arg_types=[INDEX])
    return Kernel(Builder(InsertPoint.at_end(block))), block


def _mark(loop: scf.ForOp) -> int | None:
    attr = loop.attributes.get(PARALLEL_ATTR)
    return int(attr.value.data) if isinstance(attr, IntegerAttr) else None


def _loops(block: Block) -> list[scf.ForOp]:
    return [o for o in block.ops if isinstance(o, scf.ForOp)]


def test_kernel_marks_only_loops_worth_threads() -> None:
    k, block = _kernel()
    dynamic = block.args[0]
    with k.loop(4, parallel=True) as i:  # 4 trips of almost nothing: never worth it
        k.add(i, dynamic)
    with k.loop(1 << 20, parallel=True) as i:  # a million trips: always
        k.add(i, dynamic)
    with k.loop(dynamic, parallel=True) as i:  # decided at run time, from the work per trip
        with k.loop(dynamic, trips=100) as j:
            k.add(k.mul(i, j), dynamic)
    small, big, runtime = _loops(block)
    assert _mark(small) is None
    assert _mark(big) == PARALLEL_GRAIN  # one op per trip
    per_trip = k.body_cost(runtime.body.block)
    assert per_trip == 100 * 2
    assert _mark(runtime) == -(-PARALLEL_GRAIN // per_trip)


def test_cost_assumes_unknown_trip_counts() -> None:
    k, block = _kernel()
    with k.loop(8) as i, k.loop(block.args[0]) as j:
        k.add(i, j)
    (loop,) = _loops(block)
    assert k.body_cost(Block()) == 0
    assert k.body_cost(loop.body.block) == UNKNOWN_TRIPS  # one addi per inner trip
