"""`op_memo`: ops lowered alike share one function of loops, called by each; ops of
another form, and loops that use more of the entry than their buffers, stay apart."""

from __future__ import annotations

import itertools

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith, func, scf, test
from xdsl.dialects.builtin import IndexType, MemRefType, ModuleOp, StringAttr, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.rewriter import InsertPoint

from aotk import backend as K
from aotk.dialect import metadata, trace
from aotk.kernels.kernel import Buf, Kernel
from aotk.lowering import pipeline
from aotk.lowering.aliasing import EntryAliasing
from aotk.lowering.op_memo import OpMemo, op_key


def _loops(inputs: list, outputs: list) -> ModuleOp:
    module, _ = trace.extract(inputs, outputs)
    return pipeline.lower(module, stop_after="loops")


def _shared(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {
        f.sym_name.data: f
        for f in module.ops
        if isinstance(f, func.FuncOp) and metadata.SHARED_LOOPS in f.attributes
    }


def _calls(module: ModuleOp, name: str) -> int:
    entry = next(f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "main")
    return sum(
        1 for op in entry.walk() if isinstance(op, func.CallOp) and op.callee.string_value() == name
    )


def _layers(widths: list[int]) -> tuple[list, list, list[np.ndarray]]:
    rng = np.random.default_rng(0)
    x = K.placeholder(shape=(None, widths[0]))
    h, weights = x, []
    for fan_in, fan_out in itertools.pairwise(widths):
        w = rng.standard_normal((fan_in, fan_out)).astype(np.float32) / fan_in**0.5
        b = rng.standard_normal(fan_out).astype(np.float32)
        weights += [w, b]
        h = K.relu(K.bias_add(K.dot(h, K.variable(w)), K.variable(b)))
    return [x], [h], weights


def _numpy_layers(a: np.ndarray, weights: list[np.ndarray]) -> np.ndarray:
    for w, b in zip(weights[::2], weights[1::2], strict=True):
        a = np.maximum(a @ w + b, 0)
    return a


def test_layers_of_one_width_call_one_function_and_compute_as_numpy() -> None:
    inputs, outputs, weights = _layers([16, 16, 16, 16])
    module = _loops(inputs, outputs)
    shared = _shared(module)
    assert shared, "three same layers share no loops"
    assert all(_calls(module, name) >= 2 for name in shared)
    # the layers' buffers are distinct allocations in one workspace, live at once: each
    # is a class of its own, and the shared loops take them all as `noalias`
    for f in shared.values():
        assert metadata.ints(f, metadata.ALIAS_CLASSES)[:3] == (0, 1, 2)
        assert not metadata.ints(f, metadata.MAY_ALIAS)
    f = K.function(inputs, outputs)
    a = np.random.default_rng(1).standard_normal((5, 16)).astype(np.float32)
    np.testing.assert_allclose(f([a])[0], _numpy_layers(a, weights), rtol=1e-5, atol=1e-5)


def test_layers_of_other_widths_share_only_their_elementwise_loops() -> None:
    inputs, outputs, weights = _layers([16, 40, 48, 12])
    module = _loops(inputs, outputs)
    shared = _shared(module)
    # bias and relu of the two hidden layers: one function of their rows and width
    # (`generic_loops`: widths within a factor 2; the last layer's is computed into the
    # output, another form)
    assert len(shared) == 1
    ((name, fn),) = shared.items()
    assert _calls(module, name) == 2
    assert [str(t) for t in fn.function_type.inputs][-2:] == ["index", "index"]
    f = K.function(inputs, outputs)
    a = np.random.default_rng(2).standard_normal((3, 16)).astype(np.float32)
    np.testing.assert_allclose(f([a])[0], _numpy_layers(a, weights), rtol=1e-5, atol=1e-5)


def _bufs(block: Block, *mems: int) -> list[Buf]:
    return [Buf(block.args[i], (4,), f32) for i in mems]


def test_the_key_tells_one_buffer_used_twice_from_two() -> None:
    block = Block(arg_types=[MemRefType(f32, [4])] * 2)
    op = test.TestOp()
    same, params = op_key(op, _bufs(block, 0, 0))
    other, _ = op_key(op, _bufs(block, 0, 1))
    assert same != other and params == [block.args[0]]
    assert op_key(op, _bufs(block, 1, 0))[0] == other


def _memo(block: Block, shared: frozenset[int] = frozenset()) -> OpMemo:
    """A memo for an entry of the arguments of `block`, of which `shared` may overlap."""
    return OpMemo(block, "f", EntryAliasing.of_arguments(block.args, shared))


def _lower_twice(uses_outside: bool) -> tuple[Block, OpMemo]:
    """Two ops of one key whose loops add 1 to their first buffer's size, or to an index
    of the entry that is no parameter of theirs."""
    block = Block(arg_types=[MemRefType(f32, [4])] * 2 + [IndexType()])
    block.add_op(arith.ConstantOp.from_int_and_width(1, IndexType()))  # the range's start
    k = Kernel(Builder(InsertPoint.at_end(block)))
    memo = _memo(block)
    for mem in (0, 1):
        bufs = _bufs(block, mem)
        size = block.args[2] if uses_outside else k.index(4)
        memo.lower(k, test.TestOp(), bufs, lambda n=size: _add_one(k, n))
    return block, memo


def _add_one(k: Kernel, n: SSAValue) -> None:
    k.b.insert(arith.AddiOp(n, k.index(1)))


def _names(block: Block) -> list[str]:
    return [op.name for op in block.ops]


def test_loops_on_their_parameters_alone_become_one_function() -> None:
    block, memo = _lower_twice(uses_outside=False)
    assert [f.sym_name.data for f in memo.functions] == ["f_op0"]
    assert _names(block).count("func.call") == 2 and "arith.addi" not in _names(block)


def test_loops_using_more_of_the_entry_stay_in_place() -> None:
    block, memo = _lower_twice(uses_outside=True)
    assert not memo.functions
    assert _names(block).count("arith.addi") == 2 and "func.call" not in _names(block)


def test_ranges_of_two_keys_in_turn_each_become_a_function() -> None:
    """Ops of two keys alternate with nothing between their loops: sharing the first
    key's range moves the op just before the second's, which must not lose it."""
    block = Block(arg_types=[MemRefType(f32, [4])] * 4)
    block.add_op(arith.ConstantOp.from_int_and_width(1, IndexType()))
    k = Kernel(Builder(InsertPoint.at_end(block)))
    memo = _memo(block)
    for mem, kind in enumerate("abab"):
        op = test.TestOp(attributes={"kind": StringAttr(kind)})
        memo.lower(k, op, _bufs(block, mem), lambda: _add_one(k, k.index(4)))
    assert [f.sym_name.data for f in memo.functions] == ["f_op0", "f_op1"]
    calls = [op.callee.string_value() for op in block.ops if isinstance(op, func.CallOp)]
    assert calls == ["f_op0", "f_op1", "f_op0", "f_op1"]
    # the constants 4 and 1 rebuilt, the add, the return
    assert all(len(list(f.body.block.ops)) == 4 for f in memo.functions)


def test_a_copy_whose_buffer_may_overlap_another_gets_loops_of_its_own() -> None:
    """The second buffer is marked as maybe aliased (a variable and its update): its loops
    may not take it as `noalias`, unlike the others'."""
    block = Block(arg_types=[MemRefType(f32, [4])] * 4)
    block.add_op(arith.ConstantOp.from_int_and_width(1, IndexType()))
    k = Kernel(Builder(InsertPoint.at_end(block)))
    memo = _memo(block, frozenset({1}))
    for mem in range(4):
        memo.lower(k, test.TestOp(), _bufs(block, mem), lambda: _add_one(k, k.index(4)))
    (shared,) = memo.functions
    assert not metadata.ints(shared, metadata.MAY_ALIAS)
    assert _names(block).count("func.call") == 3 and _names(block).count("arith.addi") == 1


def test_shared_loops_keep_the_aliasing_classes_of_their_arguments() -> None:
    """Arguments 0 and 1 came from one `noalias` argument of the entry (say two views of
    its workspace), 2 from none, 3 from another: only 3, or 0 or 1 alone, stay `noalias`."""
    block = Block(arg_types=[MemRefType(f32, [4])] * 4)
    fn = func.FuncOp("f_op0", (block.arg_types, []), Region(block))
    metadata.set_ints(fn, metadata.ALIAS_CLASSES, [0, 0, -1, 3])
    aliasing, args = EntryAliasing.of(fn), list(fn.args)
    assert aliasing.may_alias([args[0], args[3]]) == []
    assert aliasing.may_alias([args[1]]) == []
    assert aliasing.may_alias([args[0], args[1], args[3]]) == [0, 1]
    assert aliasing.may_alias([args[3], args[2]]) == [1]


def test_kernel_gradients_of_alike_convs_share_loops_that_view_their_scratch() -> None:
    """Inside a recorded range, a view of a buffer is taken from the buffer (a parameter),
    not traced back to the workspace pointer it was made from: that pointer is not a
    parameter, and the range would stay in place, once per conv."""
    rng = np.random.default_rng(3)
    x = K.placeholder(shape=(None, 4, 4, 256))
    h, kernels = x, []
    for _ in range(3):  # the second and third: the same shapes, both in the workspace
        kernels.append(K.variable(rng.standard_normal((3, 3, 256, 256)).astype(np.float32)))
        h = K.conv2d(h, kernels[-1], padding="same")
    module = _loops([x], K.gradients(K.sum(h * h), kernels))
    shared = _shared(module)
    branching = [
        name for name, f in shared.items() if any(isinstance(o, scf.IfOp) for o in f.walk())
    ]
    # each scratch buffer is its own aliasing class (`aliasing`), so the three convs'
    # gradients call three such functions, one of them thrice
    assert len(branching) == 3, sorted(shared)
    assert sorted(_calls(module, name) for name in branching) == [2, 2, 3]
    assert all(_calls(module, name) >= 2 for name in shared)
