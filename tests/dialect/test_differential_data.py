"""Compiled == interpreted for the data-movement primitives of `data.py`, `gather.py`,
`batch_matmul.py` and `upsample.py`.

Per op, one compiled function holds every case in float32 plus the first case in every
other accepted dtype, as separate outputs; it is called twice, dynamic cases with two
different sizes (one of them empty or 1 where that is a boundary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    FLOATS,
    NUMERIC,
    assert_close,
    emit,
    placeholder,
    random_array,
)

from aotk import dtypes, interp
from aotk.dialect import REGISTRY
from aotk.dialect.base import tensor
from aotk.dialect.batch_matmul import BatchMatMulOp
from aotk.dialect.data import BroadcastToOp, PadOp, ViewOp, view_attrs
from aotk.dialect.gather import GatherOp, IotaOp
from aotk.dialect.upsample import UpsampleLinearOp
from aotk.function import Function

COVERED_OPS = {
    ViewOp,
    BroadcastToOp,
    PadOp,
    GatherOp,
    IotaOp,
    BatchMatMulOp,
    UpsampleLinearOp,
}

Shape = tuple[int | None, ...]
Gen = Callable[[np.random.Generator, list[tuple[int, ...]], str], list[np.ndarray]]


@dataclass(frozen=True)
class Case:
    """One output: the op's operands as declared and as called (twice), and its attrs."""

    name: str
    decl: tuple[Shape, ...]
    calls: tuple[tuple[Shape, ...], tuple[Shape, ...]] | None = None
    attrs: dict[str, Any] = field(default_factory=dict)
    gen: Gen | None = None  # operand arrays for the call shapes; default: random values

    def shapes(self, call: int) -> list[tuple[int, ...]]:
        return list(self.decl if self.calls is None else self.calls[call])  # type: ignore[arg-type]


def _random(rng: np.random.Generator, shapes: list[tuple[int, ...]], dtype: str) -> list[Any]:
    return [random_array(rng, s, dtype, "small") for s in shapes]


def gather_inputs(axis: int) -> Gen:
    """x at random; indices over [-n - 2, n + 2), so some wrap and some are out of range."""

    def gen(rng: np.random.Generator, shapes: list[tuple[int, ...]], dtype: str) -> list[Any]:
        n = shapes[0][axis]
        idx = rng.integers(-n - 2, n + 2, shapes[1])
        return [random_array(rng, shapes[0], dtype, "small"), idx.astype(np.int32)]

    return gen


def _view(spec: list[Any], rank: int) -> dict[str, Any]:
    return view_attrs(spec, rank)


CASES: dict[type, list[Case]] = {
    ViewOp: [
        Case(
            "merge_dynamic",
            ((None, 3, None),),
            (((2, 3, 4),), ((0, 3, 5),)),
            _view([(0, 1), (2,)], 3),
        ),
        Case(
            "expand_two_dynamic", ((None, None),), (((2, 3),), ((1, 5),)), _view([(0,), 1, (1,)], 2)
        ),
        Case(
            "squeeze_static_one",
            ((None, 1, 4),),
            (((2, 1, 4),), ((3, 1, 4),)),
            _view([(0,), (2,)], 3),
        ),
        Case(
            "flatten_all", ((None, 2, None),), (((2, 2, 3),), ((1, 2, 1),)), _view([(0, 1, 2)], 3)
        ),
        Case(
            "split_static",
            ((6, None),),
            (((6, 2),), ((6, 0),)),
            {"factors": (2, 3, 1), "sources": (-1, 2)},
        ),
        Case("scalar_up", ((),), None, _view([1, 1], 0)),
    ],
    BroadcastToOp: [
        Case("middle", ((None, 1, 3),), (((2, 1, 3),), ((0, 1, 3),)), {"shape": (-1, 4, -1)}),
        Case("all_axes", ((1, 1),), None, {"shape": (3, 5)}),
        Case("dynamic_one", ((None, 4),), (((1, 4),), ((3, 4),)), {"shape": (3, -1)}),
        Case("to_zero", ((2, 1),), None, {"shape": (2, 0)}),
        Case("identity", ((None, None),), (((2, 3),), ((4, 1),)), {"shape": (-1, -1)}),
    ],
    PadOp: [
        Case(
            "dynamic",
            ((None, 3, None),),
            (((2, 3, 4),), ((1, 3, 0),)),
            {"before": (0, 1, 2), "after": (1, 0, 3), "value": 0.0},
        ),
        Case("value", ((4,),), None, {"before": (2,), "after": (1,), "value": 1.0}),
        Case("zeros", ((2, 2),), None, {"before": (0, 0), "after": (0, 0), "value": 0.0}),
        Case("scalar", ((),), None, {"before": (), "after": (), "value": 0.0}),
    ],
    GatherOp: [
        Case(
            "axis0_dynamic",
            ((None, 3), (None,)),
            (((4, 3), (6,)), ((2, 3), (1,))),
            {"axis": 0, "batch_dims": 0},
            gather_inputs(0),
        ),
        Case(
            "axis1_matrix_indices",
            ((2, 5, 3), (2, 4)),
            None,
            {"axis": 1, "batch_dims": 0},
            gather_inputs(1),
        ),
        Case(
            "batch_dims",
            ((None, 6), (None,)),
            (((3, 6), (3,)), ((5, 6), (5,))),
            {"axis": 1, "batch_dims": 1},
            gather_inputs(1),
        ),
        Case(
            "batch_dims_rank3",
            ((2, 4, 3), (2, 5)),
            None,
            {"axis": 1, "batch_dims": 1},
            gather_inputs(1),
        ),
        Case("scalar_index", ((5, 2), ()), None, {"axis": 0, "batch_dims": 0}, gather_inputs(0)),
    ],
    IotaOp: [
        Case("integral", (), None, {"start": -3.0, "step": 2.0, "size": 6, "dtype": "float32"}),
        Case("fraction", (), None, {"start": 0.5, "step": 0.25, "size": 5, "dtype": "float32"}),
        Case("descending", (), None, {"start": 4.0, "step": -1.0, "size": 5, "dtype": "float32"}),
        Case("empty", (), None, {"start": 0.0, "step": 1.0, "size": 0, "dtype": "float32"}),
    ],
    BatchMatMulOp: [
        Case("rank3", ((3, 4, 5), (3, 5, 2))),
        Case(
            "dynamic_all",
            ((None, None, None), (None, None, None)),
            # K = 0 gives zeros; K = 300 spans more than one K block
            (((3, 1, 0), (3, 0, 2)), ((2, 9, 300), (2, 300, 17))),
        ),
        Case(
            "folded_middle",
            ((None, 2, 3, 4), (None, 4, 3)),
            (((2, 2, 3, 4), (2, 4, 3)), ((1, 2, 3, 4), (1, 4, 3))),
        ),
        Case("vector_lhs", ((2, 5), (2, 5, 3))),
        Case("vector_both", ((4, 6), (4, 6))),
    ],
    UpsampleLinearOp: [
        Case(
            "axis1_dynamic",
            ((None, None, 2),),
            (((2, 3, 2),), ((1, 1, 2),)),
            {"axis": 1, "factor": 3},
        ),
        Case("last_axis", ((2, 4),), None, {"axis": 1, "factor": 2}),
        Case("factor_one", ((3, 2),), None, {"axis": 0, "factor": 1}),
        Case("factor_five", ((None,),), (((4,),), ((0,),)), {"axis": 0, "factor": 5}),
    ],
}
DTYPES = {
    ViewOp: ALL_DTYPES,
    BroadcastToOp: ALL_DTYPES,
    PadOp: ALL_DTYPES,
    GatherOp: ALL_DTYPES,
    IotaOp: NUMERIC,
    BatchMatMulOp: NUMERIC,
    UpsampleLinearOp: FLOATS,
}
OPS = sorted(COVERED_OPS, key=lambda o: o.name)


def _attrs(op: Any, case: Case, dtype: str) -> dict[str, Any]:
    return {**case.attrs, "dtype": dtype} if op is IotaOp else case.attrs


Operands = Callable[[str], list[str]]  # the op's dtype -> the dtype of each operand
OPERANDS: dict[type, Operands] = {GatherOp: lambda dtype: [dtype, "int32"]}


def _operand_dtypes(op: Any, case: Case, dtype: str, operands: dict[type, Operands]) -> list[str]:
    return operands[op](dtype) if op in operands else [dtype] * len(case.decl)


def accepted_dtypes(op: Any, case: Case, operands: dict[type, Operands]) -> tuple[str, ...]:
    """The dtypes for which the op's infer rule takes `case` without a TypeError."""
    accepted = []
    for dtype in ALL_DTYPES:
        types = [
            tensor(dtypes.element_type(d), s)
            for d, s in zip(_operand_dtypes(op, case, dtype, operands), case.decl, strict=True)
        ]
        try:
            REGISTRY[op].infer(*types, **_attrs(op, case, dtype))
        except TypeError:
            continue
        accepted.append(dtype)
    return tuple(accepted)


def compare_cases(
    op: Any, cases: list[Case], op_dtypes: tuple[str, ...], operands: dict[type, Operands]
) -> None:
    """One function: every case in float32, the first in the other dtypes; called twice."""
    pairs = [(c, "float32") for c in cases] + [(cases[0], d) for d in op_dtypes if d != "float32"]
    inputs, outputs = [], []
    for n, (case, dt) in enumerate(pairs):
        decl = zip(case.decl, _operand_dtypes(op, case, dt, operands), strict=True)
        xs = [placeholder(s, d, f"c{n}_{i}") for i, (s, d) in enumerate(decl)]
        inputs += xs
        outputs.append(emit(op, *xs, **_attrs(op, case, dt)))
    f = Function(inputs, outputs)
    rng = np.random.default_rng(0)
    for call in (0, 1):
        per_case = [(case.gen or _random)(rng, case.shapes(call), dt) for case, dt in pairs]
        arrays = [a for arrs in per_case for a in arrs]
        got = f(arrays)
        want = interp.run_module(f.module, arrays)
        for (case, dt), arrs, g, w in zip(pairs, per_case, got, want, strict=True):
            k = arrs[0].shape[-1] if op is BatchMatMulOp else 1
            where = f"{op.name} {dt} {case.name} call {call} on {[a.shape for a in arrs]}"
            assert_close(g, w, scale=3.0 * k, rscale=k / 4 + 1, msg=where)


def one_op(op: Any, specs: list[tuple[Shape, str]], arrays: list[Any], **attrs: Any) -> Any:
    """Compile a one-op function, check it against the interpreter, return its output."""
    xs = [placeholder(s, d, f"x{i}") for i, (s, d) in enumerate(specs)]
    f = Function(xs, [emit(op, *xs, **attrs)])
    [got] = f(arrays)
    [want] = interp.run_module(f.module, arrays)
    assert_close(got, want, msg=op.name)
    return got


def test_covered_ops_are_registered():
    assert set(REGISTRY) >= COVERED_OPS


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_dtypes_are_what_infer_accepts(op):
    assert accepted_dtypes(op, CASES[op][0], OPERANDS) == DTYPES[op]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_compiled_matches_interpreted(op):
    compare_cases(op, CASES[op], DTYPES[op], OPERANDS)


def test_gather_policy_against_hand_written_values():
    x = np.array([[1, 2], [3, 4], [5, 6]], np.int16)
    idx = np.array([2, -1, -3, 3, -4, 0], np.int64)
    got = one_op(GatherOp, [((3, 2), "int16"), ((6,), "int64")], [x, idx], axis=0, batch_dims=0)
    np.testing.assert_array_equal(got, [[5, 6], [5, 6], [1, 2], [0, 0], [0, 0], [1, 2]])


def test_gather_from_an_empty_axis_gives_zeros_without_reading():
    x = placeholder((None, 2), "float32")
    i = placeholder((3,), "uint8", "i")
    f = Function([x, i], [emit(GatherOp, x, i, axis=0, batch_dims=0)])
    got = f([np.zeros((0, 2), np.float32), np.array([0, 1, 255], np.uint8)])
    np.testing.assert_array_equal(got[0], np.zeros((3, 2), np.float32))


def test_upsample_against_hand_written_values():
    x = np.array([1.0, 3.0, 7.0], np.float64)
    got = one_op(UpsampleLinearOp, [((3,), "float64")], [x], axis=0, factor=2)
    np.testing.assert_allclose(got, [1.0, 2.0, 3.0, 5.0, 7.0, 7.0])


def test_iota_against_hand_written_values():
    ints = one_op(IotaOp, [], [], start=5.0, step=-2.0, size=4, dtype="int8")
    np.testing.assert_array_equal(ints, np.array([5, 3, 1, -1], np.int8))
    halves = one_op(IotaOp, [], [], start=-1.0, step=0.5, size=4, dtype="float16")
    np.testing.assert_array_equal(halves, np.array([-1.0, -0.5, 0.0, 0.5], np.float16))


@pytest.mark.parametrize(
    ("op", "shapes", "dtype", "attrs", "message"),
    [
        (ViewOp, [(None, 4)], "float32", {"factors": (4,), "sources": (-1, -1)}, "dynamic axis 0"),
        (
            ViewOp,
            [(2, 3)],
            "float32",
            {"factors": (5,), "sources": (-1, -1)},
            "element counts differ",
        ),
        (BroadcastToOp, [(2, 3)], "int8", {"shape": (2, 4)}, "axis 1 of size 3"),
        (BroadcastToOp, [(2,)], "int8", {"shape": (2, 1)}, "differ in rank"),
        (
            PadOp,
            [(2, 3)],
            "bool",
            {"before": (0, -1), "after": (0, 0), "value": 0.0},
            "paddings must be >= 0",
        ),
        (
            GatherOp,
            [(3, 2), (4,)],
            "float32",
            {"axis": 0, "batch_dims": 0},
            "indices must be integers",
        ),
        (GatherOp, [(3, 2), (2,)], "float32", {"axis": 1, "batch_dims": 1}, "batch axis 0 differs"),
        (BatchMatMulOp, [(2, 3, 4), (2, 5, 6)], "float32", {}, "contracted dims differ"),
        (BatchMatMulOp, [(2, 3, 4), (3, 4, 6)], "float32", {}, "batch sizes differ"),
        (BatchMatMulOp, [(2, 3), (2, 3)], "bool", {}, "bool"),
        (UpsampleLinearOp, [(2, 3)], "int32", {"axis": 0, "factor": 2}, "float tensor"),
        (UpsampleLinearOp, [(2, 3)], "float32", {"axis": 0, "factor": 0}, "factor must be"),
    ],
)
def test_infer_rejects_bad_input(op, shapes, dtype, attrs, message):
    types = [tensor(dtypes.element_type(dtype), s) for s in shapes]
    if op is GatherOp and dtype == "float32" and "indices" not in message:
        types[1] = tensor(dtypes.element_type("int32"), shapes[1])
    with pytest.raises((TypeError, ValueError), match=message):
        REGISTRY[op].infer(*types, **attrs)


def test_iota_rejects_bool():
    with pytest.raises(TypeError, match="bool"):
        REGISTRY[IotaOp].infer(start=0.0, step=1.0, size=3, dtype="bool")
