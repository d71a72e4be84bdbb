"""`aotk-fuse`: which elementwise chains become one `aotk.fused` kernel, and that the values
do not change (the graph is interpreted before and after the pass)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from conftest import assert_close, emit, placeholder
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from aotk import interp
from aotk.context import make_context
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import reduce, trace
from aotk.dialect import unary as un
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_fused import ConvFusedOp
from aotk.dialect.fused import FusedOp
from aotk.dialect.scan import ScanOp
from aotk.lowering import pipeline
from aotk.transforms.fuse import MAX_OVERLAP_CHECKS, AotkFusePass, _overlap_checks


def _main(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def top_ops(module: ModuleOp) -> list[str]:
    """Names of the ops of @main, without the return."""
    return [op.name for op in _main(module).body.block.ops if not isinstance(op, func.ReturnOp)]


def bodies(module: ModuleOp) -> list[list[str]]:
    """Names of the ops inside each aotk.fused of @main, without the yield."""
    return [
        [inner.name for inner in op.body.block.ops if inner.name != "aotk.yield"]
        for op in _main(module).body.block.ops
        if isinstance(op, FusedOp)
    ]


def fuse(
    inputs: Sequence[trace.KTensor], outputs: Sequence[trace.KTensor], arrays: Sequence[np.ndarray]
) -> ModuleOp:
    """Run aotk-fuse on the traced graph; check it verifies and computes the same values."""
    module, _ = trace.extract(list(inputs), list(outputs))
    before = interp.run_module(module, arrays)
    AotkFusePass().apply(make_context(), module)
    module.verify()
    after = interp.run_module(module, arrays)
    for b, a in zip(before, after, strict=True):
        assert_close(a, b, msg="after aotk-fuse")
    return module


def test_a_chain_becomes_one_kernel_with_its_constant_inside(rng):
    x, y = placeholder((3, 4), "float32", "x"), placeholder((3, 4), "float32", "y")
    one = emit(ew.ConstantOp, value=1.0, dtype="float32")
    out = emit(ar.AddOp, emit(ar.MulOp, emit(un.ExpOp, x), y), one)
    module = fuse([x, y], [out], [rng.standard_normal((3, 4), np.float32) for _ in range(2)])
    assert top_ops(module) == ["aotk.fused"]
    assert bodies(module) == [["aotk.constant", "aotk.exp", "aotk.mul", "aotk.add"]]
    fused = next(iter(_main(module).body.block.ops))
    assert [v.name_hint for v in fused.operands] == ["x", "y"]


def test_a_producer_with_two_users_is_computed_once(rng):
    """exp joins its first consumer's kernel, which then joins the second: one pass over x
    stores both sums."""
    x = placeholder((5,), "float32", "x")
    two = emit(ew.ConstantOp, value=2.0, dtype="float32")
    shared = emit(un.ExpOp, x)
    module = fuse(
        [x],
        [emit(ar.AddOp, shared, two), emit(ar.MulOp, shared, two)],
        [rng.standard_normal(5, np.float32)],
    )
    assert top_ops(module) == ["aotk.fused"]
    [body] = bodies(module)
    assert sorted(set(body)) == ["aotk.add", "aotk.constant", "aotk.exp", "aotk.mul"]
    assert body.count("aotk.exp") == 1
    [fused] = [op for op in _main(module).body.block.ops if isinstance(op, FusedOp)]
    assert len(fused.results) == 2


def test_a_returned_intermediate_is_a_second_result_of_its_consumer(rng):
    x = placeholder((5,), "float32", "x")
    shared = emit(un.TanhOp, x)
    module = fuse([x], [shared, emit(un.NegOp, shared)], [rng.standard_normal(5, np.float32)])
    assert top_ops(module) == ["aotk.fused"]
    assert bodies(module) == [["aotk.tanh", "aotk.neg"]]
    [ret] = [op for op in _main(module).body.block.ops if isinstance(op, func.ReturnOp)]
    [fused] = [op for op in _main(module).body.block.ops if isinstance(op, FusedOp)]
    assert list(ret.operands) == [fused.results[1], fused.results[0]]


def test_a_broadcasting_consumer_does_not_absorb_its_smaller_producer(rng):
    x, y = placeholder((3, 1), "float32", "x"), placeholder((3, 4), "float32", "y")
    module = fuse(
        [x, y],
        [emit(ar.AddOp, emit(un.ExpOp, x), y)],
        [rng.standard_normal(s, np.float32) for s in ((3, 1), (3, 4))],
    )
    assert top_ops(module) == ["aotk.exp", "aotk.add"]


def test_a_reduction_splits_the_chain(rng):
    x = placeholder((None, 4), "float32", "x")
    summed = emit(
        reduce.ReduceSumOp, emit(ar.MulOp, emit(un.ExpOp, x), x), axes=(1,), keepdims=False
    )
    out = emit(un.NegOp, emit(un.TanhOp, summed))
    module = fuse([x], [out], [rng.standard_normal((6, 4), np.float32)])
    assert top_ops(module) == ["aotk.fused", "aotk.reduce_sum", "aotk.fused"]
    assert bodies(module) == [["aotk.exp", "aotk.mul"], ["aotk.tanh", "aotk.neg"]]


def test_duplicate_inputs_are_read_once(rng):
    x = placeholder((4,), "float64", "x")
    out = emit(ar.AddOp, emit(ar.MulOp, x, x), x)
    module = fuse([x], [out], [rng.standard_normal(4)])
    [fused] = [op for op in _main(module).body.block.ops if isinstance(op, FusedOp)]
    assert len(fused.inputs) == 1 and len(fused.body.block.args) == 1
    assert bodies(module) == [["aotk.mul", "aotk.add"]]


def test_a_constant_used_by_two_kernels_is_copied_into_both(rng):
    x, y = placeholder((2, 3), "float32", "x"), placeholder((3,), "float32", "y")
    half = emit(ew.ConstantOp, value=0.5, dtype="float32")
    outs = [emit(ar.MulOp, x, half), emit(ar.SubOp, y, half)]
    module = fuse([x, y], outs, [rng.standard_normal(s, np.float32) for s in ((2, 3), (3,))])
    assert top_ops(module) == ["aotk.fused", "aotk.fused"]  # the constant is dead outside
    assert bodies(module) == [["aotk.constant", "aotk.mul"], ["aotk.constant", "aotk.sub"]]
    assert all(
        len(op.inputs) == 1 for op in _main(module).body.block.ops if isinstance(op, FusedOp)
    )


def test_dynamic_chains_with_casts_compares_and_selects_fuse(rng):
    x = placeholder((None, 3), "float32", "x")
    zero = emit(ew.ConstantOp, value=0.0, dtype="float32")
    positive = emit(cmp.GreaterOp, x, zero)
    relu = emit(cmp.SelectOp, positive, x, emit(ew.FillLikeOp, x, value=0.0, dtype="float32"))
    out = emit(ew.CastOp, emit(ar.MulOp, relu, relu), dtype="float16")
    module = fuse([x], [out], [rng.standard_normal((7, 3), np.float32)])
    assert top_ops(module) == ["aotk.fused"]
    [body] = bodies(module)
    assert sorted(body) == sorted(
        ["aotk.constant", "aotk.greater", "aotk.fill_like", "aotk.select", "aotk.mul", "aotk.cast"]
    )
    assert str(_main(module).function_type.outputs.data[0]) == "tensor<?x3xf16>"


def test_rank0_chains_fuse_and_a_kernel_may_have_only_constant_inputs():
    a = emit(ew.ConstantOp, value=3.0, dtype="float32")
    b = emit(ew.ConstantOp, value=4.0, dtype="float32")
    out = emit(un.SqrtOp, emit(ar.AddOp, emit(ar.MulOp, a, a), emit(ar.MulOp, b, b)))
    module = fuse([], [out], [])
    assert top_ops(module)[-1] == "aotk.fused"
    [fused] = [op for op in _main(module).body.block.ops if isinstance(op, FusedOp)]
    assert len(fused.inputs) == 0
    assert interp.run_module(module, [])[0] == np.float32(5.0)


def test_graph_stage_runs_simplify_cse_and_fuse(rng):
    x = placeholder((None, 4), "float32", "x")
    one = emit(ew.ConstantOp, value=1.0, dtype="float32")
    a = emit(un.ExpOp, emit(ar.MulOp, x, one))  # x * 1 folds away
    b = emit(un.ExpOp, x)  # a duplicate of a that CSE merges
    emit(un.LogOp, x)  # dead: not an output
    module, _ = trace.extract([x], [emit(ar.AddOp, a, b)])
    data = rng.standard_normal((3, 4), np.float32)
    [want] = interp.run_module(module, [data])
    pipeline.lower(module, "graph")
    module.verify()
    assert top_ops(module) == ["aotk.fused"]
    assert bodies(module) == [["aotk.exp", "aotk.add"]]
    assert_close(interp.run_module(module, [data])[0], want)


def test_merging_stops_before_llvm_would_need_too_many_overlap_checks(rng):
    """Twenty intermediates that are outputs too: one kernel would store 21 results and
    need more run-time overlap checks than LLVM vectorizes behind."""
    x = placeholder((64,), "float32", "x")
    parts = [
        emit(un.ExpOp, emit(ar.MulOp, x, emit(ew.ConstantOp, value=0.1 * i, dtype="float32")))
        for i in range(20)
    ]
    total = parts[0]
    for p in parts[1:]:
        total = emit(ar.AddOp, total, p)
    module = fuse([x], [*parts, total], [rng.standard_normal(64, np.float32)])
    kernels = [op for op in _main(module).body.block.ops if isinstance(op, FusedOp)]
    assert len(kernels) > 1
    assert all(
        _overlap_checks(len(k.results), len(k.inputs)) <= MAX_OVERLAP_CHECKS for k in kernels
    )
    assert sum(body.count("aotk.exp") for body in bodies(module)) == 20
    # a merge given up leaves no trace: no op outside the module reads its values (one
    # built and dropped would count as a reader, and change later merges)
    ops = set(module.walk())
    assert all(u.operation in ops for op in ops for r in op.results for u in r.uses)


def test_a_producer_outside_a_loop_is_not_pulled_into_its_body(rng):
    """exp(w) feeds only the step's kernel, but merged there it would run every step."""
    from aotk import backend as K

    x = K.placeholder((2, 5, 3))
    scale = K.exp(K.variable(rng.standard_normal((2, 3)).astype(np.float32)))

    def step(xt, states):
        h = K.tanh(xt * scale + states[0])
        return h, [h]

    last, _, _ = K.rnn(step, x, [K.zeros((2, 3))])
    module, captures = trace.extract([x], [last])
    xs = rng.standard_normal((2, 5, 3)).astype(np.float32)
    [want] = interp.run_module(module, [xs, *(c.storage for c in captures)])
    pipeline.lower(module, "graph")
    [scan] = [op for op in module.walk() if isinstance(op, ScanOp)]
    names = [op.name for op in module.walk() if op.name != "aotk.yield"]
    in_loop = [op.name for op in scan.body.walk()]
    assert names.count("aotk.exp") == 1 and "aotk.exp" not in in_loop
    assert_close(interp.run_module(module, [xs, *(c.storage for c in captures)])[0], want)


def _conv(x: trace.KTensor, w: trace.KTensor) -> trace.KTensor:
    same = {"strides": (1, 1), "dilation": (1, 1), "lhs_dilation": (1, 1), "groups": 1}
    return emit(ConvOp, x, w, pad_before=(0, 0), pad_after=(0, 0), padding="same", **same)


def _conv_inputs(rng) -> tuple[list[trace.KTensor], list[np.ndarray]]:
    x, w = placeholder((None, 5, 6, 3), "float32", "x"), placeholder((3, 3, 3, 8), "float32", "w")
    bias = placeholder((8,), "float32", "bias")
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(2, 5, 6, 3), (3, 3, 3, 8), (8,)]]
    return [x, w, bias], arrays


def test_a_bias_and_relu_become_the_convs_epilogue(rng):
    (x, w, bias), arrays = _conv_inputs(rng)
    zero = emit(ew.ConstantOp, value=0.0, dtype="float32")
    module = fuse(
        [x, w, bias], [emit(ar.MaximumOp, emit(ar.AddOp, _conv(x, w), bias), zero)], arrays
    )
    assert top_ops(module) == ["aotk.conv_fused"]
    op = next(iter(_main(module).body.block.ops))
    assert isinstance(op, ConvFusedOp)
    assert [v.name_hint for v in op.operands] == ["x", "w", "bias"]
    assert [inner.name for inner in op.body.block.ops] == [
        "aotk.constant",
        "aotk.add",
        "aotk.maximum",
        "aotk.yield",
    ]


def test_a_conv_keeps_its_own_output_when_it_must(rng):
    """Read elsewhere too, or joined with a full-size tensor (not one value per channel)."""
    (x, w, bias), arrays = _conv_inputs(rng)
    read_twice = _conv(x, w)
    other = placeholder((None, 5, 6, 8), "float32", "other")
    outputs = [
        emit(ar.AddOp, read_twice, bias),
        read_twice,
        emit(ar.AddOp, _conv(x, w), other),
    ]
    arrays.append(rng.standard_normal((2, 5, 6, 8)).astype(np.float32))
    module = fuse([x, w, bias, other], outputs, arrays)
    assert top_ops(module).count("aotk.conv") == 2
    assert "aotk.conv_fused" not in top_ops(module)
