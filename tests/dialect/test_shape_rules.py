"""Each op's one shape rule (`OpDef.shape`) against the NumPy oracle and on both domains.

For the seeded cases of the differential tests: on `STATIC` with every dim known the rule
gives the shape of the oracle's result; with the dims a case declares dynamic, `infer`
leaves unknown exactly the result dims that depend on them; and on a `Kernel` the rule
folds what `STATIC` knows to the same ints and emits index arithmetic for the rest.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import test_differential as td
import test_differential_along_axis as taa
import test_differential_data as tdd
from xdsl.builder import Builder
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block, SSAValue
from xdsl.rewriter import InsertPoint

from aotk import dtypes
from aotk.dialect import REGISTRY
from aotk.dialect.base import shape_of, tensor
from aotk.dialect.ctc import CtcForwardOp
from aotk.dialect.ctc_decode import CtcDecodedLogProbsOp, CtcDecodedPathOp, CtcDecodeOp
from aotk.dialect.ctc_grad import CtcForwardGradOp
from aotk.dialect.data import ViewOp
from aotk.dialect.debug import PrintTensorOp
from aotk.dialect.gather_grad import GatherGradOp
from aotk.dialect.random import RandomNormalOp, RandomUniformOp
from aotk.dialect.shape import (
    BEFORE,
    FULL,
    ReshapeOp,
    reshape_shape,
    slice_bounds,
    slice_len,
)
from aotk.dialect.sparse import SparseGatherOp, SparseToDenseOp
from aotk.kernels.dim_arith import STATIC
from aotk.kernels.kernel import Kernel

Decl = tuple[tuple[int | None, ...], ...]
Concrete = tuple[tuple[int, ...], ...]


def _random_attrs(dtype: str = "float32", **kw: Any) -> dict[str, Any]:
    return {"dtype": dtype, "minval": 0.0, "maxval": 1.0, **kw}


_CTC_SEARCH = {"greedy": False, "beam_width": 3, "top_paths": 2}
_GREEDY = {"greedy": True, "beam_width": 1, "top_paths": 1}


def _state(x: tuple[int, ...], search: dict[str, Any]) -> tuple[int, ...]:
    from aotk.kernels.ctc_decode import static_state_size

    return (static_state_size(x, search["greedy"], search["beam_width"], search["top_paths"]),)


# (op, operand dtypes, declared dims, two concrete calls, attrs) for ops whose differential
# tests are hand-written (random, CTC, sparse, adjoints, print)
HAND_CASES: list[tuple[Any, tuple[str, ...], Decl, tuple[Concrete, Concrete], dict[str, Any]]] = [
    (
        RandomUniformOp,
        ("int64", "float32"),
        ((2,), (None, 4)),
        (((2,), (3, 4)), ((2,), (0, 4))),
        _random_attrs(shape=(0, 5, 0), like_axes=(0, -1, 1)),
    ),
    (
        RandomNormalOp,
        ("int64",),
        ((2,),),
        (((2,),), ((2,),)),
        {
            "dtype": "float64",
            "shape": (3, 2),
            "like_axes": (-1, -1),
            "mean": 0.0,
            "stddev": 1.0,
            "truncated": True,
        },
    ),
    (
        CtcForwardOp,
        ("float32", "int32", "int32", "int32"),
        ((None, 5, 4), (None, None), (None,), (2,)),
        (((2, 5, 4), (2, 3), (2,), (2,)), ((2, 5, 4), (2, 0), (2,), (2,))),
        {},
    ),
    (
        CtcForwardGradOp,
        ("float32", "float32", "int32", "int32", "int32"),
        ((None, 7), (None, 5, 4), (None, 3), (None,), (None,)),
        (((2, 7), (2, 5, 4), (2, 3), (2,), (2,)), ((1, 7), (1, 5, 4), (1, 3), (1,), (1,))),
        {},
    ),
    (
        CtcDecodeOp,
        ("float32", "int32"),
        ((None, 5, None), (None,)),
        (((2, 5, 4), (2,)), ((3, 5, 2), (3,))),
        _CTC_SEARCH,
    ),
    (
        CtcDecodeOp,
        ("float32", "int32"),
        ((None, None, 4), (None,)),
        (((2, 5, 4), (2,)), ((0, 1, 4), (0,))),
        _GREEDY,
    ),
    (
        CtcDecodedPathOp,
        ("float64", "float32"),
        ((None,), (None, 5, 4)),
        (
            ((_state((2, 5, 4), _CTC_SEARCH)), (2, 5, 4)),
            ((_state((1, 5, 4), _CTC_SEARCH)), (1, 5, 4)),
        ),
        {"path": 1, "top_paths": 2},
    ),
    (
        CtcDecodedLogProbsOp,
        ("float64", "float32"),
        ((None,), (None, None, 4)),
        (
            ((_state((2, 5, 4), _CTC_SEARCH)), (2, 5, 4)),
            ((_state((1, 3, 4), _CTC_SEARCH)), (1, 3, 4)),
        ),
        {"top_paths": 2},
    ),
    (
        SparseToDenseOp,
        ("int64", "float32", "bool"),
        ((None, 2), (None,), (None, 3, 0)),
        (((4, 2), (4,), (5, 3, 0)), ((0, 2), (0,), (1, 3, 0))),
        {},
    ),
    (
        SparseGatherOp,
        ("int64", "float32"),
        ((None, 2), (4, None)),
        (((3, 2), (4, 2)), ((0, 2), (4, 6))),
        {},
    ),
    (
        GatherGradOp,
        ("float32", "int32", "float32"),
        ((None, 2, 3), (None, 2), (None, 6, 3)),
        (((4, 2, 3), (4, 2), (4, 6, 3)), ((1, 2, 3), (1, 2), (1, 6, 3))),
        {"axis": 1, "batch_dims": 1},
    ),
    (PrintTensorOp, ("int8",), ((None, 3),), (((2, 3),), ((0, 3),)), {"message": "x"}),
]


def _differential_cases() -> list[Any]:
    """(op, operand dtypes, declared dims, calls, attrs) of every seeded case with a rule."""
    out: list[Any] = []
    for op, spec in td.SPECS.items():
        dtype = spec.primary if spec.primary in spec.dtypes else spec.dtypes[0]
        for case in spec.cases(dtype):
            calls = (case.shapes(0), case.shapes(1))
            out.append(
                (op, td._operand_dtypes(case, dtype), case.decl, calls, case.attrs, case.name)
            )
    for op, cases in tdd.CASES.items():
        for case in cases:
            dts = tdd._operand_dtypes(op, case, "float32", tdd.OPERANDS)
            calls = (tuple(case.shapes(0)), tuple(case.shapes(1)))
            attrs = tdd._attrs(op, case, "float32")
            out.append((op, tuple(dts), case.decl, calls, attrs, case.name))
    for op in taa.OPS:
        for name, decl, calls, axis in taa._cases(op):
            out.append(
                (op, ("float32",), (decl,), ((calls[0],), (calls[1],)), {"axis": axis}, name)
            )
    for n, (op, dts, decl, calls, attrs) in enumerate(HAND_CASES):
        out.append((op, dts, decl, calls, attrs, f"hand{n}"))
    return [
        pytest.param(*case[:5], id=f"{case[0].name}-{case[5]}")
        for case in out
        if REGISTRY[case[0]].shape is not None
    ]


CASES = _differential_cases()


def _arrays(dts: Sequence[str], shapes: Concrete, op: Any) -> list[np.ndarray]:
    if op in (RandomUniformOp, RandomNormalOp):  # the state: (seed, calls)
        return [
            np.zeros(shapes[0], np.int64),
            *(np.zeros(s, d) for s, d in zip(shapes[1:], dts[1:], strict=True)),
        ]
    return [np.zeros(s, d) for s, d in zip(shapes, dts, strict=True)]


def _oracle_shape(
    op: Any, dts: Sequence[str], shapes: Concrete, attrs: dict[str, Any]
) -> tuple[int, ...]:
    with np.errstate(all="ignore"):
        return np.shape(REGISTRY[op].numpy(*_arrays(dts, shapes, op), **attrs))


def _rule(op: Any) -> Any:
    rule = REGISTRY[op].shape
    assert rule is not None, f"{op.name} has no shape rule"
    return rule


def _infer(
    op: Any, dts: Sequence[str], decl: Decl, attrs: dict[str, Any]
) -> tuple[int | None, ...]:
    types = [tensor(dtypes.element_type(d), s) for d, s in zip(dts, decl, strict=True)]
    return shape_of(REGISTRY[op].infer(*types, **attrs))


@pytest.mark.parametrize(("op", "dts", "decl", "calls", "attrs"), CASES)
def test_static_rule_gives_the_oracles_shape(op, dts, decl, calls, attrs):
    rule = _rule(op)
    for shapes in calls:
        assert tuple(rule(STATIC, [list(s) for s in shapes], **attrs)) == _oracle_shape(
            op, dts, shapes, attrs
        ), f"{op.name} on {shapes}"
        assert _infer(op, dts, shapes, attrs) == _oracle_shape(op, dts, shapes, attrs)


@pytest.mark.parametrize(("op", "dts", "decl", "calls", "attrs"), CASES)
def test_infer_leaves_unknown_exactly_what_the_dynamic_dims_decide(op, dts, decl, calls, attrs):
    """A known result dim is right in every call; an unknown one changes between calls."""
    got = _infer(op, dts, decl, attrs)
    assert got == tuple(_rule(op)(STATIC, [list(s) for s in decl], **attrs))
    want = [_oracle_shape(op, dts, shapes, attrs) for shapes in calls]
    for axis, d in enumerate(got):
        seen = {w[axis] for w in want}
        if d is not None:
            assert seen == {d}, f"{op.name}: axis {axis} inferred {d}, calls give {seen}"
        else:
            assert len(seen) == 2, f"{op.name}: axis {axis} unknown, but every call gives {seen}"


def _kernel(n: int) -> tuple[Kernel, list[SSAValue]]:
    block = Block(arg_types=[IndexType()] * n)
    return Kernel(Builder(InsertPoint.at_end(block))), list(block.args)


@pytest.mark.parametrize(("op", "dts", "decl", "calls", "attrs"), CASES)
def test_kernel_folds_what_static_knows(op, dts, decl, calls, attrs):
    """On a Kernel, known dims fold to STATIC's ints; unknown ones are index values."""
    rule = _rule(op)
    k, args = _kernel(sum(d is None for s in decl for d in s))
    fresh = iter(args)
    dims = [[next(fresh) if d is None else d for d in s] for s in decl]
    static = rule(STATIC, [list(s) for s in decl], **attrs)
    for s, d in zip(static, rule(k, dims, **attrs), strict=True):
        if s is None:
            assert isinstance(d, SSAValue), f"{op.name}: {static}"
        else:
            assert d == s and isinstance(d, int), f"{op.name}: {static}"
    k, _ = _kernel(0)
    for shapes in calls:
        assert rule(k, [list(s) for s in shapes], **attrs) == list(
            _oracle_shape(op, dts, shapes, attrs)
        )


def test_reshape_infers_the_minus_one_dim_on_both_domains():
    assert reshape_shape(STATIC, [(None, 6)], shape=(-1, 3)) == [None, 3]
    assert reshape_shape(STATIC, [(4, 6)], shape=(-1, 3)) == [8, 3]
    k, [n] = _kernel(1)
    missing, three = reshape_shape(k, [(n, 6)], shape=(-1, 3))
    assert isinstance(missing, SSAValue) and three == 3
    assert _infer(ReshapeOp, ("float32",), ((None, 6),), {"shape": (-1, 3)}) == (None, 3)


def test_reshape_of_an_unknown_but_empty_tensor_is_known():
    # a product with 0 is 0 whatever the dynamic dim: infer once said None here
    assert _infer(ReshapeOp, ("float32",), ((None, 0),), {"shape": (-1, 3)}) == (0, 3)
    with pytest.raises(ValueError, match=r"cannot reshape \(None, 0\) \(0 elements\) into \(5,\)"):
        _infer(ReshapeOp, ("float32",), ((None, 0),), {"shape": (5,)})


@pytest.mark.parametrize("decl", [(None, 3), (0, 3), (2, 3)])
def test_reshape_with_minus_one_beside_a_zero_dim_is_refused(decl):
    # NumPy cannot infer it either; with a dynamic operand infer once let it through, and the
    # kernel divided by zero
    with pytest.raises(ValueError, match=r"cannot infer the -1 dim of \(0, -1\)"):
        _infer(ReshapeOp, ("float32",), (decl,), {"shape": (0, -1)})
    with pytest.raises(ValueError):
        np.zeros(tuple(d or 0 for d in decl)).reshape(0, -1)


def test_view_of_an_unknown_but_empty_axis_is_known():
    attrs = {"factors": (1,), "sources": (0, 0)}
    assert _infer(ViewOp, ("float32",), ((None, 0),), attrs) == (0,)


def test_greedy_decoding_state_does_not_depend_on_the_classes():
    # infer once gave a dynamic size whenever a dim of x was; the kernel's rule folded it
    got = _infer(CtcDecodeOp, ("float32", "int32"), ((2, 5, None), (2,)), _GREEDY)
    assert got == _state((2, 5, 1), _GREEDY) == _state((2, 5, 9), _GREEDY)


def test_slice_bounds_on_static_dims_are_pythons():
    steps = (1, 2, 3, -1, -2, -3)
    indices = (BEFORE, -9, -5, -1, 0, 1, 4, 9, FULL)
    for d, start, stop, step in itertools.product(range(6), indices, indices, steps):
        assert slice_bounds(STATIC, d, start, stop, step) == slice_len(d, start, stop, step)
        assert slice_bounds(STATIC, None, start, stop, step)[1] in (None, 0)
