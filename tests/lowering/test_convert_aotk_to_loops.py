"""`convert-aotk-to-loops` (stage "loops"): no aotk op survives, the kernel ABI, and the
workspace plan, evaluated with xDSL's interpreter on `@main_workspace_size`."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from conftest import emit, placeholder
from xdsl.dialects import arith, func, memref, ptr, scf
from xdsl.dialects.builtin import MemRefType, ModuleOp, i64
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.interpreters import register_implementations
from xdsl.utils.exceptions import DiagnosticException

from aotk.context import make_context
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import linalg, metadata, reduce, shape, shape_query, trace
from aotk.dialect import unary as un
from aotk.lowering import pipeline
from aotk.transforms.check_stage import AotkCheckStagePass


@register_impls
class _Unsigned(InterpreterFunctions):
    """xDSL 0.74's interpreter has no arith.divui, which the workspace plan rounds with,
    nor arith.maxui, which broadcasts two batch dims."""

    @impl(arith.DivUIOp)
    def run_divui(
        self, interpreter: Interpreter, op: arith.DivUIOp, args: tuple[int, int]
    ) -> tuple[int]:
        return (args[0] // args[1],)

    @impl(arith.MaxUIOp)
    def run_maxui(
        self, interpreter: Interpreter, op: arith.MaxUIOp, args: tuple[int, int]
    ) -> tuple[int]:
        return (max(args),)


def loops(inputs: Sequence[trace.KTensor], outputs: Sequence[trace.KTensor]) -> ModuleOp:
    module, _ = trace.extract(list(inputs), list(outputs))
    pipeline.lower(module, "loops")
    module.verify()
    return module


def functions(module: ModuleOp) -> dict[str, func.FuncOp]:
    return {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}


def workspace_size(module: ModuleOp, *dims: int) -> int:
    interpreter = Interpreter(module)
    register_implementations(interpreter, make_context())
    interpreter.register_implementations(_Unsigned())
    [size] = interpreter.call_op("main_workspace_size", dims)
    return size


def test_no_aotk_op_survives_a_graph_of_every_op_family():
    x = placeholder((None, 4), "float32", "x")
    w = placeholder((4, 3), "float32", "w")
    flag = placeholder((None, 1), "bool", "flag")
    h = emit(linalg.MatMulOp, emit(un.TanhOp, x), w)
    h = emit(cmp.SelectOp, flag, h, emit(ew.FillLikeOp, h, value=0.0, dtype="float32"))
    t = emit(shape.TransposeOp, h, perm=(1, 0))
    both = emit(
        shape.ConcatOp,
        t,
        emit(shape.SliceOp, t, start=(-1, 0), stop=(shape.FULL, shape.FULL), step=(-1, 1)),
        axis=0,
    )
    total = emit(
        reduce.ReduceMaxOp, emit(shape.ReshapeOp, both, shape=(-1,)), axes=(0,), keepdims=True
    )
    count = emit(shape_query.DimSizeOp, x, axes=(0,), dtype="float32")
    outs = [
        emit(ar.DivOp, total, count),
        emit(ew.CastOp, both, dtype="int8"),
        emit(shape_query.ShapeOfOp, x),
    ]
    module = loops([x, w, flag], outs)
    assert not [op.name for op in module.walk() if op.name.startswith("aotk.")]
    defined = {name for name, f in functions(module).items() if f.body.blocks}
    # each kernel is a private function of its own, called from main
    kernels = {name for name in defined if name.startswith("main_k")}
    assert defined - kernels == {"main", "main_workspace_size", "main_output_dims"}
    assert kernels and {functions(module)[k].sym_visibility.data for k in kernels} == {"private"}
    # the float matmul and the transpose are calls to micro-kernels, declared in the module
    # (the matmul's N is narrower than a packed sliver: the kernel without packing)
    declared = set(functions(module)) - defined
    assert declared == {"aotk_uk_matmul_float32", "aotk_uk_transpose_32bit"}
    assert any(isinstance(op, scf.ForOp) for op in module.walk())
    assert any(isinstance(op, memref.StoreOp) for op in module.walk())


def test_kernel_abi_is_inputs_outputs_workspace_then_dynamic_dims():
    x = placeholder((None, 3, None), "float64", "x")
    y = placeholder((None,), "int8", "y")
    z = placeholder((2, 5), "bool", "z")
    outs = [emit(un.ExpOp, x), emit(un.NegOp, y), emit(cmp.EqualOp, z, z)]
    kernel = functions(loops([x, y, z], outs))["main"]
    arg_types = list(kernel.function_type.inputs)
    assert [str(t) for t in arg_types[:6]] == [
        "memref<?xf64>",
        "memref<?xi8>",
        "memref<10xi8>",  # bool is one byte, as in NumPy
        "memref<?xf64>",
        "memref<?xi8>",
        "memref<10xi8>",
    ]
    assert isinstance(arg_types[6], ptr.PtrType)
    assert arg_types[7:] == [i64, i64, i64]  # x's dims 0 and 2, then y's dim 0
    assert all(isinstance(t, MemRefType) for t in arg_types[:6])
    assert list(kernel.function_type.outputs) == []
    assert metadata.ints(kernel, metadata.KERNEL) == (3, 3)
    names = [a.name_hint for a in kernel.body.block.args]
    assert names == ["x", "y", "z", "out0", "out1", "out2", "workspace", "dim0", "dim1", "dim2"]
    size_fn = functions(loops([x, y, z], outs))["main_workspace_size"]
    assert list(size_fn.function_type.inputs) == [i64] * 3 and list(
        size_fn.function_type.outputs
    ) == [i64]


def test_an_intermediate_of_5x3_float32_takes_one_64_byte_chunk():
    x = placeholder((5, 3), "float32", "x")
    module = loops([x], [emit(reduce.ReduceSumOp, emit(un.ExpOp, x), axes=(1,), keepdims=False)])
    assert workspace_size(module) == 64  # 60 bytes, rounded up to the alignment


def test_intermediates_alive_together_are_aligned_one_after_another():
    x = placeholder((5, 3), "float32", "x")
    d = placeholder((7,), "float64", "d")
    b = placeholder((65,), "int8", "b")
    ex, td, nb = emit(un.ExpOp, x), emit(un.TanhOp, d), emit(un.NegOp, b)  # 60, 56, 65 bytes
    a = emit(reduce.ReduceSumOp, ex, axes=(0, 1), keepdims=False)
    c = emit(reduce.ReduceMaxOp, td, axes=(0,), keepdims=False)
    e = emit(reduce.ReduceMinOp, nb, axes=(0,), keepdims=False)
    assert workspace_size(loops([x, d, b], [a, c, e])) == 64 + 64 + 128


def test_a_dead_intermediates_slice_is_taken_by_one_it_holds():
    """exp(x) dies in its sum; tanh(d), 56 bytes, takes its 60-byte slice; neg(b), 65
    bytes, does not fit it, but the slice is the workspace's last: it grows to 128."""
    x = placeholder((5, 3), "float32", "x")
    d = placeholder((7,), "float64", "d")
    b = placeholder((65,), "int8", "b")
    a = emit(reduce.ReduceSumOp, emit(un.ExpOp, x), axes=(0, 1), keepdims=False)
    c = emit(reduce.ReduceMaxOp, emit(un.TanhOp, d), axes=(0,), keepdims=False)
    e = emit(reduce.ReduceMinOp, emit(un.NegOp, b), axes=(0,), keepdims=False)
    assert workspace_size(loops([x, d, b], [a, c, e])) == 128


def test_workspace_grows_with_the_dynamic_dims():
    x = placeholder((None, 3), "float32", "x")
    module = loops([x], [emit(reduce.ReduceSumOp, emit(un.ExpOp, x), axes=(1,), keepdims=False)])
    sizes = {n: workspace_size(module, n) for n in (0, 1, 5, 6, 100)}
    assert sizes == {0: 0, 1: 64, 5: 64, 6: 128, 100: 1216}  # ceil(12 n / 64) * 64


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda x: [emit(un.ExpOp, emit(un.NegOp, x))], 0),  # one fused kernel writes the output
        (lambda x: [emit(shape.ReshapeOp, x, shape=(-1,))], 0),  # a view of an input
        (lambda x: [x, emit(un.NegOp, x)], 0),  # an input returned as is is copied
        # a view of a computed value: the transpose writes the output, which the view aliases
        (
            lambda x: [emit(shape.ReshapeOp, emit(shape.TransposeOp, x, perm=(1, 0)), shape=(-1,))],
            0,
        ),
        # the same value twice through views: the second output is a copy of the first
        (
            lambda x: [
                emit(shape.ReshapeOp, t := emit(shape.TransposeOp, x, perm=(1, 0)), shape=(-1,)),
                emit(shape.ReshapeOp, t, shape=(4, 3)),
            ],
            0,
        ),
        (
            lambda x: [
                emit(ew.CastOp, emit(reduce.ReduceSumOp, x, axes=(1,), keepdims=True), dtype="bool")
            ],
            64,
        ),
    ],
)
def test_outputs_views_and_copies_need_no_workspace(build, expected):
    x = placeholder((4, 3), "float32", "x")
    assert workspace_size(loops([x], build(x))) == expected


def test_check_stage_names_a_surviving_aotk_op():
    x = placeholder((2,), "float32", "x")
    module, _ = trace.extract([x], [emit(un.SqrtOp, x)])
    with pytest.raises(DiagnosticException, match=r"'aotk\.sqrt' survived to stage 'loops'"):
        AotkCheckStagePass(stage="loops").apply(make_context(), module)
    pipeline.lower(module, "loops")
    AotkCheckStagePass(stage="loops").apply(make_context(), module)
    with pytest.raises(DiagnosticException, match="survived to stage 'llvm'"):
        AotkCheckStagePass(stage="llvm").apply(make_context(), module)


def test_stage_names_and_unknown_stages():
    assert pipeline.stage_names()[:3] == ["trace", "graph", "loops"]
    with pytest.raises(ValueError, match="unknown stage 'tiles'"):
        pipeline.lower(ModuleOp([]), "tiles")


def test_matmul_scratch_is_counted_in_the_workspace():
    """The packed matmul's scratch is part of the workspace plan, not extra memory."""
    import numpy as np
    from xdsl.builder import Builder
    from xdsl.ir import Block
    from xdsl.rewriter import InsertPoint

    from aotk import backend as K
    from aotk.dialect.base import elem_of
    from aotk.kernels import matmul_kernel
    from aotk.kernels.kernel import Kernel

    x = K.placeholder(shape=(None, 64))
    w = K.placeholder(shape=(64, 96))  # a variable's matmul would read a packed copy
    f = K.function([x, w], [K.dot(x, w)])
    k = Kernel(Builder(InsertPoint.at_end(Block())))
    count = matmul_kernel.scratch_elems(k, elem_of(x.type), (256, 96, 64))
    assert isinstance(count, int)
    scratch = count * 4
    assert f._ws_size(256) >= scratch
    out = f([np.ones((256, 64), np.float32), np.ones((64, 96), np.float32)])[0]
    np.testing.assert_array_equal(out, np.full((256, 96), 64.0, np.float32))


def test_a_broadcast_splits_its_outer_loop_across_threads():
    """`aotk.broadcast_to` (K.tile, K.repeat_elements) writes each position of its output
    once, so its outermost loop is parallel."""
    from aotk.dialect.data import BroadcastToOp

    x = placeholder((None, 1, 16, 8), "float32", "x")
    y = emit(BroadcastToOp, x, shape=(-1, 4, 16, 8))
    module, _ = trace.extract([x], [y], "test")
    loops = pipeline.lower(module, stop_after="loops")
    outer = [
        op for op in loops.walk() if isinstance(op, scf.ForOp) and "aotk.parallel" in op.attributes
    ]
    assert len(outer) == 1
