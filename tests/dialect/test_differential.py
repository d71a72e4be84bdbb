"""Compiled == interpreted for every registered op, over shapes, dtypes and broadcasting.

`SPECS` has one entry per op class in `REGISTRY`, except the ops that a sibling module
`test_differential_<family>.py` lists in its `COVERED_OPS`; a registered op in neither fails
`test_every_op_has_a_spec` and its own parametrized case, so no op is skipped silently,
and `test_spec_dtypes_are_what_infer_accepts` keeps each entry's dtypes complete.

One compiled function computes all cases of a test as separate outputs and is called twice
(dynamic cases with two different sizes, float cases the second time on NaN/inf/zeros).
Compilation dominates the run time (~0.1 s per case), so cases have tiers:
  0  cheap static cases, run in every dtype by default (int16/int32 only under -m slow,
     they share the int8/int64 code paths);
  1  shapes, broadcasting and dynamic dims, run in the op's primary dtype by default
     (`rep_only` ones only for the `rep` op of a family sharing one loop-nest builder,
     e.g. neg and exp for unary elementwise ops, add and less for binary ones);
  2  everything else; `-m slow` runs every tier in every dtype.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import (
    ALL_DTYPES,
    FLOATS,
    INTS,
    NUMERIC,
    assert_close,
    check_one_op,
    emit,
    placeholder,
    random_array,
    special_values,
)

from aotk import dtypes, interp
from aotk.dialect import (
    REGISTRY,
    Kind,
    identity,
    linalg,
    logsumexp,
    reduce,
    shape,
    shape_query,
    softmax,
    unslice,
    views,
)
from aotk.dialect import arithmetic as ar
from aotk.dialect import compare as cmp
from aotk.dialect import elementwise as ew
from aotk.dialect import unary as un
from aotk.dialect.base import tensor
from aotk.function import Function

Shapes = tuple[tuple[int | None, ...], ...]
FULL = shape.FULL
SLOW_ONLY_DTYPES = ("int16", "int32")


@dataclass(frozen=True)
class Case:
    """One output of a test function: the op's operands, declared and per call."""

    name: str
    decl: Shapes
    calls: tuple[Shapes, Shapes] | None = None  # None: the declared (static) shapes twice
    attrs: dict[str, Any] = field(default_factory=dict)
    dtypes: tuple[str, ...] | None = None  # operand dtypes; None: the test dtype for all
    domain: str = "any"  # of every operand (see `_array`)
    domains: tuple[str, ...] | None = None  # per operand, overriding `domain`
    special: bool = False  # the second call of a float dtype uses `special_values`
    tier: int = 1
    rep_only: bool = False  # tier 1 only for the representative op of the family

    def shapes(self, call: int) -> Shapes:
        return self.decl if self.calls is None else self.calls[call]


@dataclass(frozen=True)
class Spec:
    """How to test one op: the dtypes it accepts and its cases for a dtype."""

    dtypes: tuple[str, ...]
    cases: Callable[[str], list[Case]]
    rep: bool = False  # represents its family: runs the `rep_only` cases by default
    primary: str = "float32"
    # (case, arrays) -> (rtol multiplier, atol multiplier) for ops that accumulate
    scale: Callable[[Case, Sequence[np.ndarray]], tuple[float, float]] | None = None


def c(name: str, *decl: tuple[int | None, ...], calls: Any = None, **kw: Any) -> Case:
    return Case(name, tuple(decl), None if calls is None else tuple(calls), **kw)


def _unary(domain: str) -> Callable[[str], list[Case]]:
    def cases(dtype: str) -> list[Case]:
        return [
            c("flat", (16,), domain=domain, special=True, tier=0),
            c("scalar", (), domain=domain),
            c("dynamic", (None, 3), calls=[[(2, 3)], [(5, 3)]], domain=domain),
            c("1d", (7,), domain=domain, rep_only=True),
            c("3d_size1", (2, 1, 4), domain=domain, rep_only=True),
            c(
                "dynamic_empty",
                (None, None),
                calls=[[(0, 3)], [(4, 1)]],
                domain=domain,
                rep_only=True,
            ),
        ]

    return cases


def _softmax(dtype: str) -> list[Case]:
    return [
        c("rows", (4, 16), special=True, tier=0),
        c("dynamic", (None, 3), calls=[[(2, 3)], [(5, 3)]]),
        c("long_rows_and_tail", (3, 1029)),  # vector loop and its remainder
        c("3d", (2, 1, 37)),
        c("empty", (None, None), calls=[[(0, 3)], [(4, 0)]]),
        c("1d_wide_range", (7,), domain="castable"),  # exponentials that underflow
    ]


def _logsumexp(dtype: str) -> list[Case]:
    """Softmax's row cases, but for an empty row, whose maximum is undefined."""
    empty_batch = c("empty_batch", (None, 4), calls=[[(0, 4)], [(3, 4)]])
    return [case if case.name != "empty" else empty_batch for case in _softmax(dtype)]


def _binary(domain: str) -> Callable[[str], list[Case]]:
    def cases(dtype: str) -> list[Case]:
        d = {"domain": domain}
        return [
            c("flat", (16,), (16,), special=True, tier=0, **d),
            # rank mismatch; dynamic dims that are 1 at call time against static ones
            c(
                "dynamic_rank",
                (None, 1, 4),
                (3, None),
                calls=[[(2, 1, 4), (3, 4)], [(1, 1, 4), (3, 1)]],
                **d,
            ),
            c("scalar_3d", (), (2, 3, 4), rep_only=True, **d),
            c("rank_size1", (2, 1, 4), (3, 1), rep_only=True, **d),
            c("outer", (16, 1), (1, 16), special=True, rep_only=True, **d),
            c(
                "dynamic_both",
                (None,),
                (None,),
                calls=[[(1,), (5,)], [(4,), (4,)]],
                rep_only=True,
                **d,
            ),
            c(
                "dynamic_one",
                (None, 4),
                (3, 4),
                calls=[[(1, 4), (3, 4)], [(3, 4), (3, 4)]],
                rep_only=True,
                **d,
            ),
        ]

    return cases


def _select(dtype: str) -> list[Case]:
    t = {"dtypes": ("bool", dtype, dtype)}
    return [
        c("flat", (3, 4), (3, 4), (3, 4), tier=0, **t),
        c("scalar_cond", (), (2, 3), (2, 3), **t),
        c("broadcast_all", (3, 1), (1, 4), (), **t),
        c("rank_mismatch", (2, 1, 4), (3, 1), (4,), **t),
        c(
            "dynamic",
            (None, 1),
            (None, 4),
            (4,),
            calls=[[(2, 1), (2, 4), (4,)], [(3, 1), (1, 4), (4,)]],
            **t,
        ),
    ]


def _cast(src: str) -> list[Case]:
    out = []
    for dst in ALL_DTYPES:
        to_int = src in FLOATS and dst in INTS  # out-of-range float -> int is undefined
        domain = (
            "castable_unsigned" if to_int and dst == "uint8" else "castable" if to_int else "zeros"
        )
        kw = {"attrs": {"dtype": dst}, "domain": domain}
        out.append(c(f"to_{dst}", (16,), special=not to_int, tier=0, **kw))
        tier = 1 if dst in ("float64", "int32", "bool") else 2
        out.append(c(f"to_{dst}_dynamic", (None, 3), calls=[[(2, 3)], [(5, 3)]], tier=tier, **kw))
    return out


_FILL = {"bool": 1.0, "uint8": 200.0, "float16": 0.1, "float32": 2.5, "float64": -1e-3}


def _fill_like(dtype: str) -> list[Case]:
    attrs = {"value": _FILL.get(dtype, -5.0), "dtype": dtype}
    return [
        c("like_f32", (2, 3), attrs=attrs, dtypes=("float32",), tier=0),
        c("like_scalar", (), attrs=attrs, dtypes=("int8",)),
        c("like_dynamic", (None, 3), attrs=attrs, dtypes=("bool",), calls=[[(2, 3)], [(0, 3)]]),
    ]


def _constant(dtype: str) -> list[Case]:
    return [c("value", attrs={"value": _FILL.get(dtype, -5.0), "dtype": dtype}, tier=0)]


def _reductions(domain: str) -> Callable[[str], list[Case]]:
    def cases(dtype: str) -> list[Case]:
        special = domain == "ties"  # max and min: exact, so NaN and inf must match too
        d = {"domain": domain}
        out = [  # a reduced last axis folds in a register; a kept one sweeps memory
            c(
                "last_axis",
                (4, 4),
                attrs={"axes": (1,), "keepdims": False},
                special=special,
                tier=0,
                **d,
            ),
            c(
                "first_axis",
                (4, 4),
                attrs={"axes": (0,), "keepdims": True},
                special=special,
                tier=0,
                **d,
            ),
            c("axes02_keep1", (2, 3, 4), attrs={"axes": (0, 2), "keepdims": True}, **d),
            c("axes12_keep0", (2, 3, 4), attrs={"axes": (1, 2), "keepdims": False}, **d),
            c(
                "dynamic02_keep0",
                (None, 3, None),
                calls=[[(2, 3, 4)], [(5, 3, 1)]],
                attrs={"axes": (0, 2), "keepdims": False},
                **d,
            ),
        ]
        for i, axes in enumerate([(), (0,), (1,), (2,), (0, 1), (0, 1, 2)]):
            out.append(
                c(
                    f"axes{''.join(map(str, axes))}_keep{i % 2}",
                    (2, 3, 4),
                    attrs={"axes": axes, "keepdims": bool(i % 2)},
                    rep_only=True,
                    **d,
                )
            )
        for axes, keep in [((0,), True), ((1,), False), ((2,), True)]:
            out.append(
                c(
                    f"dynamic{''.join(map(str, axes))}_keep{int(keep)}",
                    (None, 3, None),
                    calls=[[(2, 3, 4)], [(5, 3, 1)]],
                    attrs={"axes": axes, "keepdims": keep},
                    rep_only=True,
                    **d,
                )
            )
        out += [
            c("scalar", (), attrs={"axes": (), "keepdims": False}, rep_only=True, **d),
            c("1d", (5,), attrs={"axes": (0,), "keepdims": False}, rep_only=True, **d),
            c("size1", (3, 1), attrs={"axes": (1,), "keepdims": True}, rep_only=True, **d),
        ]
        return out

    return cases


def _reduce_scale(case: Case, arrays: Sequence[np.ndarray]) -> tuple[float, float]:
    n = int(np.prod([arrays[0].shape[a] for a in case.attrs["axes"]]))
    return n / 4 + 1, 3.0 * max(n, 1)


def _matmul(dtype: str) -> list[Case]:
    return [
        c("matrix", (4, 5), (5, 3), tier=0),
        c("vector", (5,), (5, 3)),
        c("rank3", (2, 3, 5), (5, 4)),
        # dynamic M and K; K = 0 gives zeros, K = 300 spans more than one K block
        c("dynamic_mk", (None, None), (None, 4), calls=[[(3, 0), (0, 4)], [(7, 300), (300, 4)]]),
        c("size1", (1, 5), (5, 1), tier=2),
        c("dynamic_n", (3, 5), (5, None), calls=[[(3, 5), (5, 1)], [(3, 5), (5, 9)]], tier=2),
        c(
            "dynamic_batch",
            (None, 2, 5),
            (5, 3),
            calls=[[(1, 2, 5), (5, 3)], [(3, 2, 5), (5, 3)]],
            tier=2,
        ),
        # operands read transposed: A stored [K, M], B stored [N, K]
        c("transposed_lhs", (5, 4), (5, 3), attrs={"transpose_lhs": True}),
        c("transposed_rhs", (4, 5), (3, 5), attrs={"transpose_rhs": True}),
        c(
            "transposed_both_dynamic",
            (None, None),
            (None, None),
            calls=[[(6, 13), (20, 6)], [(300, 70), (9, 300)]],
            attrs={"transpose_lhs": True, "transpose_rhs": True},
        ),
    ]


def _matmul_scale(case: Case, arrays: Sequence[np.ndarray]) -> tuple[float, float]:
    k = arrays[0].shape[0 if case.attrs.get("transpose_lhs") else -1]
    return k / 4 + 1, 9.0 * max(k, 1)


def _reshape(dtype: str) -> list[Case]:
    return [
        c("flatten_lead", (2, 3, 4), attrs={"shape": (6, 4)}, tier=0),
        c("infer_all", (2, 3, 4), attrs={"shape": (-1,)}),
        c("scalar_up", (), attrs={"shape": (1, 1)}),
        c("drop_size1", (3, 1, 4), attrs={"shape": (3, 4)}),
        c("dynamic", (None, 3, 4), attrs={"shape": (-1, 12)}, calls=[[(2, 3, 4)], [(5, 3, 4)]]),
        c("dynamic_split", (None, 4), attrs={"shape": (2, -1, 2)}, calls=[[(2, 4)], [(6, 4)]]),
    ]


def _transpose(dtype: str) -> list[Case]:
    return [
        c("rank3", (2, 3, 4), attrs={"perm": (2, 0, 1)}, tier=0),
        c("matrix", (3, 4), attrs={"perm": (1, 0)}),
        c("scalar", (), attrs={"perm": ()}),
        c("size1", (1, 5), attrs={"perm": (1, 0)}),
        c("dynamic", (None, 3, None), attrs={"perm": (2, 0, 1)}, calls=[[(2, 3, 4)], [(5, 3, 1)]]),
        # read back to front: a conv kernel's taps (matrices last to first, by elements
        # and by squares in registers), a matrix's own axis (the nest), an axis of one
        c("reversed_taps", (3, 3, 5, 4), attrs={"perm": (0, 1, 3, 2), "reverse": (0, 1)}),
        c("reversed_squares", (3, 2, 17, 33), attrs={"perm": (0, 1, 3, 2), "reverse": (0, 1)}),
        c("reversed_in_matrix", (3, 4, 5), attrs={"perm": (0, 2, 1), "reverse": (0, 2)}),
        c("reversed_size1", (1, 3, 4), attrs={"perm": (0, 2, 1), "reverse": (0,)}),
        c(
            "reversed_dynamic",
            (None, 3, 4),
            attrs={"perm": (0, 2, 1), "reverse": (0,)},
            calls=[[(2, 3, 4)], [(5, 3, 4)]],
        ),
    ]


def _concat(dtype: str) -> list[Case]:
    return [
        c("axis1_three", (2, 3), (2, 1), (2, 2), attrs={"axis": 1}, tier=0),
        c("axis0", (2, 3), (4, 3), attrs={"axis": 0}),
        c("vectors", (3,), (4,), attrs={"axis": 0}),
        c("rank3_last", (2, 1, 2), (2, 1, 3), attrs={"axis": 2}),
        c("single", (2, 3), attrs={"axis": 1}),
        c(
            "dynamic_axis",
            (None, 3),
            (2, 3),
            attrs={"axis": 0},
            calls=[[(1, 3), (2, 3)], [(4, 3), (2, 3)]],
        ),
        c(
            "dynamic_off_axis",
            (None, 2),
            (None, 3),
            attrs={"axis": 1},
            calls=[[(2, 2), (2, 3)], [(5, 2), (5, 3)]],
        ),
    ]


def _slice(dtype: str) -> list[Case]:
    def attrs(
        start: tuple[int, ...], stop: tuple[int, ...], step: tuple[int, ...]
    ) -> dict[str, Any]:
        return {"attrs": {"start": start, "stop": stop, "step": step}}

    return [
        c("negative_2d", (5, 6), **attrs((-2, 1), (-5, FULL), (-1, 2)), tier=0),
        c("strided", (7,), **attrs((1,), (6,), (2,))),
        c("reverse", (7,), **attrs((-1,), (FULL,), (-1,))),
        c("rank3", (4, 3, 5), **attrs((0, 0, 4), (FULL, FULL, -7), (1, 1, -2))),
        c("empty", (5,), **attrs((3,), (1,), (1,))),
        c("clamped", (4,), **attrs((-10,), (10,), (3,))),
        c("dynamic", (None, 6), **attrs((0, -1), (FULL, 0), (1, -2)), calls=[[(2, 6)], [(5, 6)]]),
        # Python's clamping of start and stop on dynamic axes, with empty and size-1 results
        c("dynamic_reverse", (None,), **attrs((-1,), (FULL,), (-1,)), calls=[[(5,)], [(0,)]]),
        c("dynamic_inner", (None,), **attrs((1,), (-1,), (2,)), calls=[[(7,)], [(2,)]]),
        c("dynamic_back", (None,), **attrs((-2,), (0,), (-3,)), calls=[[(10,)], [(1,)]]),
        c("dynamic_full_start", (None,), **attrs((FULL,), (0,), (-1,)), calls=[[(4,)], [(1,)]]),
        c(
            "dynamic_before",
            (None,),
            **attrs((-(2**62),), (-(2**62),), (1,)),
            calls=[[(4,)], [(1,)]],
        ),
        c(
            "dynamic_from_before",
            (None,),
            **attrs((-(2**62),), (FULL,), (1,)),
            calls=[[(4,)], [(0,)]],
        ),
        c(
            "dynamic_far",
            (None, 3),
            **attrs((5, 0), (-100, FULL), (-1, 2)),
            calls=[[(3, 3)], [(8, 3)]],
        ),
        c(
            "dynamic_clamped",
            (None, None),
            **attrs((-100, 1), (100, -1), (3, 1)),
            calls=[[(4, 3)], [(0, 5)]],
        ),
    ]


def _shape_of(dtype: str) -> list[Case]:
    return [
        c("static", (2, 3, 4), tier=0),
        c("scalar", ()),
        c("dynamic", (None, 3, None), calls=[[(2, 3, 4)], [(0, 3, 7)]]),
    ]


def _dim_size(dtype: str) -> list[Case]:
    dynamic = [
        c(
            f"to_{d}",
            (None, 3, None),
            calls=[[(2, 3, 4)], [(5, 3, 1)]],
            attrs={"axes": (0, 2), "dtype": d},
        )
        for d in ("float32", "int32", "float16")
    ]
    return [
        c("static", (2, 3, 4), attrs={"axes": (1,), "dtype": "int64"}, tier=0),
        *dynamic,
        c("no_axes", (2, 3), attrs={"axes": (), "dtype": "float64"}),
    ]


def _expand_dims(dtype: str) -> list[Case]:
    return [
        c("middle", (2, 3), attrs={"axes": (1,)}, tier=0),
        c("two_axes", (2, 3), attrs={"axes": (3, 1)}),
        c("scalar", (), attrs={"axes": (0, 1)}),
        c("dynamic", (None, 3), attrs={"axes": (0, 2)}, calls=[[(2, 3)], [(0, 3)]]),
    ]


def _reshape_like(dtype: str) -> list[Case]:
    return [
        c("merge", (2, 3, 4), (6, 4), dtypes=(dtype, "float32"), tier=0),
        c("scalar", (), (1, 1), dtypes=(dtype, "bool")),
        c("dynamic", (None, 4), (None, 2, 2), calls=[[(3, 4), (3, 2, 2)], [(1, 4), (1, 2, 2)]]),
    ]


def _reshape_dims(dtype: str) -> list[Case]:
    by_other = {"shape": (-1, -2, 5), "taken": (1, 1)}  # y (n t, 5) -> (n, t, 5) by x's t
    own = {"shape": (-2, -1), "taken": (0, 0)}  # x (n, t, 4) -> (n, 4 t)
    return [
        c("static", (6, 4), (2, 3), attrs={"shape": (-2, 12), "taken": (1, 0)}, tier=0),
        c(
            "by_other",
            *[(None, 5), (None, None)],
            dtypes=(dtype, "bool"),
            attrs=by_other,
            calls=[[(8, 5), (2, 4)], [(0, 5), (0, 3)]],
        ),
        c(
            "own_and_other",
            *[(None, None, 4), (None, 2)],
            attrs=own,
            calls=[[(3, 2, 4), (5, 2)], [(1, 0, 4), (0, 2)]],
        ),
    ]


def _same_shape(dtype: str) -> list[Case]:
    return [
        c("static", (2, 3), (2, 3), dtypes=(dtype, "float32"), tier=0),
        c("dynamic", (None, 3), (None, 3), calls=[[(4, 3), (4, 3)], [(0, 3), (0, 3)]]),
        c("known_either", (4, None), (None, 5), dtypes=(dtype, "bool"), calls=[[(4, 5)] * 2] * 2),
    ]


def _sliced(
    shape_: tuple[int, ...], start: tuple[int, ...], stop: tuple[int, ...], step: tuple[int, ...]
) -> tuple[int, ...]:
    return tuple(
        shape.slice_len(d, a, b, c_)[1]
        for d, a, b, c_ in zip(shape_, start, stop, step, strict=True)
    )


def _unslice(dtype: str) -> list[Case]:
    def u(
        name: str, like: Any, start: Any, stop: Any, step: Any, calls: Any = None, **kw: Any
    ) -> Case:
        bounds = {"start": start, "stop": stop, "step": step}
        if calls is None:
            return c(name, _sliced(like, start, stop, step), like, attrs=bounds, **kw)
        sized = [[(_sliced(s, start, stop, step)), s] for [s] in calls]
        decl = tuple(None for _ in like)
        return c(name, decl, decl, attrs=bounds, calls=sized, **kw)

    return [
        u("strided", (7,), (1,), (6,), (2,), tier=0),
        u("negative_2d", (5, 6), (-2, 1), (-5, FULL), (-1, 2)),
        u("dynamic_reverse", (None,), (-1,), (FULL,), (-1,), calls=[[(5,)], [(0,)]]),
        u("dynamic_rows", (None, None), (1, 0), (-1, FULL), (2, 1), calls=[[(6, 4)], [(2, 3)]]),
        u("dynamic_back", (None,), (-2,), (0,), (-3,), calls=[[(10,)], [(1,)]]),
    ]


SPECS: dict[type, Spec] = {
    un.NegOp: Spec(NUMERIC, _unary("any"), rep=True),
    un.AbsOp: Spec(NUMERIC, _unary("any")),
    un.SignOp: Spec(NUMERIC, _unary("any")),
    un.SqrtOp: Spec(FLOATS, _unary("positive")),
    un.ExpOp: Spec(FLOATS, _unary("any"), rep=True),
    un.LogOp: Spec(FLOATS, _unary("positive")),
    un.TanhOp: Spec(FLOATS, _unary("any")),
    ar.AddOp: Spec(NUMERIC, _binary("any"), rep=True),
    ar.SubOp: Spec(NUMERIC, _binary("any")),
    ar.MulOp: Spec(NUMERIC, _binary("any")),
    ar.DivOp: Spec(FLOATS, _binary("nonzero")),
    ar.PowOp: Spec(FLOATS, _binary("pow")),
    ar.MaximumOp: Spec(ALL_DTYPES, _binary("ties")),
    ar.MinimumOp: Spec(ALL_DTYPES, _binary("ties")),
    cmp.EqualOp: Spec(ALL_DTYPES, _binary("ties")),
    cmp.NotEqualOp: Spec(ALL_DTYPES, _binary("ties")),
    cmp.GreaterOp: Spec(ALL_DTYPES, _binary("ties")),
    cmp.GreaterEqualOp: Spec(ALL_DTYPES, _binary("ties")),
    cmp.LessOp: Spec(ALL_DTYPES, _binary("ties"), rep=True),
    cmp.LessEqualOp: Spec(ALL_DTYPES, _binary("ties")),
    cmp.SelectOp: Spec(ALL_DTYPES, _select, rep=True),
    ew.CastOp: Spec(ALL_DTYPES, _cast, rep=True),
    ew.FillLikeOp: Spec(ALL_DTYPES, _fill_like, rep=True),
    ew.ConstantOp: Spec(ALL_DTYPES, _constant, rep=True),
    linalg.MatMulOp: Spec(NUMERIC, _matmul, rep=True, scale=_matmul_scale),
    softmax.SoftmaxOp: Spec(FLOATS, _softmax),
    logsumexp.LogSumExpOp: Spec(FLOATS, _logsumexp),
    reduce.ReduceSumOp: Spec(NUMERIC, _reductions("any"), rep=True, scale=_reduce_scale),
    reduce.ReduceProdOp: Spec(NUMERIC, _reductions("prod"), scale=_reduce_scale),
    reduce.ReduceMaxOp: Spec(NUMERIC, _reductions("ties"), rep=True),
    reduce.ReduceMinOp: Spec(NUMERIC, _reductions("ties")),
    shape.ReshapeOp: Spec(ALL_DTYPES, _reshape, rep=True),
    shape.TransposeOp: Spec(ALL_DTYPES, _transpose, rep=True),
    shape.ConcatOp: Spec(ALL_DTYPES, _concat, rep=True),
    shape.SliceOp: Spec(ALL_DTYPES, _slice, rep=True),
    shape_query.ShapeOfOp: Spec(ALL_DTYPES, _shape_of, rep=True),
    shape_query.DimSizeOp: Spec(ALL_DTYPES, _dim_size, rep=True),
    identity.StopGradientOp: Spec(ALL_DTYPES, _unary("any")),
    identity.SameShapeOp: Spec(ALL_DTYPES, _same_shape),
    views.ExpandDimsOp: Spec(ALL_DTYPES, _expand_dims, rep=True),
    views.ReshapeLikeOp: Spec(ALL_DTYPES, _reshape_like, rep=True),
    views.ReshapeDimsOp: Spec(ALL_DTYPES, _reshape_dims),
    unslice.UnsliceOp: Spec(ALL_DTYPES, _unslice, rep=True),
}


def _array(
    rng: np.random.Generator, shp: tuple[int, ...], dtype: str, domain: str, index: int
) -> np.ndarray:
    """Inputs of operand `index` in a domain where the op is defined."""
    if domain == "special":  # the second operand sees the values in another order
        values = np.roll(special_values(dtype), 5 * index)
        return np.resize(values, shp) if shp else values[:1].reshape(())
    if dtype in FLOATS and domain == "pow":
        return random_array(rng, shp, dtype, "positive" if index == 0 else "small")
    if domain == "zeros":  # the full range, with exact zeros for casts to bool
        x = random_array(rng, shp, dtype, "castable" if dtype in FLOATS else "any")
        x.reshape(-1)[::3] = 0
        return x
    if domain == "castable_unsigned":
        return np.abs(random_array(rng, shp, dtype, "castable"))
    if domain == "nonzero":
        x = random_array(rng, shp, dtype, "positive")
        return np.where(rng.random(shp) < 0.5, -x, x).astype(dtype) if index == 1 else x
    if domain == "ties":  # few distinct values, so ==, max and min see equal operands
        return rng.random(shp) < 0.5 if dtype == "bool" else rng.integers(-3, 4, shp).astype(dtype)
    if domain == "prod":
        x = random_array(rng, shp, dtype, "small")
        return (x * np.asarray(0.7, dtype)).astype(dtype) if dtype in FLOATS else x
    return random_array(rng, shp, dtype, domain)


def _operand_dtypes(case: Case, dtype: str) -> tuple[str, ...]:
    return case.dtypes if case.dtypes is not None else (dtype,) * len(case.decl)


def _inputs(rng: np.random.Generator, case: Case, dtype: str, call: int) -> list[np.ndarray]:
    out = []
    for i, (shp, dt) in enumerate(
        zip(case.shapes(call), _operand_dtypes(case, dtype), strict=True)
    ):
        special = case.special and call == 1 and dt in FLOATS
        domain = case.domains[i] if case.domains is not None else case.domain
        out.append(_array(rng, shp, dt, "special" if special else domain, i))
    return out


def _tier(spec: Spec, case: Case) -> int:
    return 2 if case.rep_only and not spec.rep else case.tier


def _selection(spec: Spec, mode: str, dtype: str) -> list[tuple[Case, str]]:
    """(case, dtype) pairs of one test: mode is "primary", "others" or "slow"."""
    if mode == "primary":
        return [(k, dtype) for k in spec.cases(dtype) if _tier(spec, k) <= 1]
    if mode == "slow":
        return [(k, dtype) for k in spec.cases(dtype)]
    others = [d for d in spec.dtypes if d != spec.primary and d not in SLOW_ONLY_DTYPES]
    return [(k, d) for d in others for k in spec.cases(d) if _tier(spec, k) == 0]


def covered_elsewhere() -> dict[type, str]:
    """Ops whose differential tests live in a sibling module, with that module's name."""
    out: dict[type, str] = {}
    for path in sorted(Path(__file__).parent.glob("test_differential_*.py")):
        for op in getattr(importlib.import_module(path.stem), "COVERED_OPS", ()):
            out[op] = path.stem
    return out


COVERED_ELSEWHERE = covered_elsewhere()
# Region ops are differential-tested through the programs that build them: aotk.scan by
# tests/backend/test_loops.py (K.rnn, foldl ...), aotk.fused by tests/transforms/test_fuse.py.
REGION_OPS = [op for op in REGISTRY if REGISTRY[op].kind is Kind.REGION]
MINE = [op for op in REGISTRY if op not in COVERED_ELSEWHERE and op not in REGION_OPS]


def _params() -> list[Any]:
    out = []
    for op in MINE:
        spec = SPECS.get(op)
        if spec is None:
            out.append(pytest.param(op, "float32", "primary", id=f"{op.name}-missing-spec"))
            continue
        primary = spec.primary if spec.primary in spec.dtypes else spec.dtypes[0]
        out.append(pytest.param(op, primary, "primary", id=f"{op.name}-{primary}"))
        if len(spec.dtypes) > 1:
            out.append(pytest.param(op, "", "others", id=f"{op.name}-other-dtypes"))
        out += [
            pytest.param(op, d, "slow", id=f"{op.name}-{d}-all", marks=pytest.mark.slow)
            for d in spec.dtypes
        ]
    return out


def test_every_op_has_a_spec():
    missing = [op.name for op in MINE if op not in SPECS]
    assert not missing, (
        f"add differential specs for {missing} (or list them in a sibling's COVERED_OPS)"
    )
    twice = {op.name: name for op, name in COVERED_ELSEWHERE.items() if op in SPECS}
    assert not twice, f"ops tested both here and in a sibling module: {twice}"
    assert set(SPECS) <= set(REGISTRY)


@pytest.mark.parametrize("op", MINE, ids=lambda op: op.name)
def test_spec_dtypes_are_what_infer_accepts(op):
    """The table lists exactly the dtypes that the op's infer rule accepts."""
    spec = SPECS.get(op)
    if spec is None:
        pytest.fail(f"{op.name} has no differential spec: add one to SPECS")
    accepted = []
    for dtype in ALL_DTYPES:
        case = spec.cases(dtype)[0]
        types = [
            tensor(dtypes.element_type(d), s)
            for d, s in zip(_operand_dtypes(case, dtype), case.decl, strict=True)
        ]
        try:
            REGISTRY[op].infer(*types, **case.attrs)
        except TypeError:
            continue
        accepted.append(dtype)
    assert tuple(accepted) == spec.dtypes


@pytest.mark.parametrize(("op", "dtype", "mode"), _params())
def test_compiled_matches_interpreted(op, dtype, mode):
    spec = SPECS.get(op)
    if spec is None:
        pytest.fail(f"{op.name} has no differential spec: add one to SPECS")
    pairs = _selection(spec, mode, dtype)
    assert pairs, f"{op.name}: no cases for {mode} {dtype}"
    inputs, outputs = [], []
    for n, (case, dt) in enumerate(pairs):
        xs = [
            placeholder(s, d, f"c{n}_{i}")
            for i, (s, d) in enumerate(zip(case.decl, _operand_dtypes(case, dt), strict=True))
        ]
        inputs += xs
        outputs.append(emit(op, *xs, **case.attrs))
    f = Function(inputs, outputs)
    rng = np.random.default_rng(0)
    for call in (0, 1):
        per_case = [_inputs(rng, case, dt, call) for case, dt in pairs]
        arrays = [a for arrs in per_case for a in arrs]
        got = f(arrays)
        want = interp.run_module(f.module, arrays)
        for (case, dt), arrs, g, w in zip(pairs, per_case, got, want, strict=True):
            rscale, ascale = spec.scale(case, arrs) if spec.scale is not None else (1.0, 1.0)
            where = f"{op.name} {dt} case {case.name} call {call} on {[a.shape for a in arrs]}"
            assert_close(g, w, scale=ascale, rscale=rscale, msg=where)


def test_bool_maximum_and_minimum_are_or_and_and():
    # regression: i1 true is -1 when compared signed, which made max(True, False) False
    a = np.array([False, False, True, True])
    b = np.array([False, True, False, True])
    [got] = check_one_op(ar.MaximumOp, [((4,), "bool"), ((4,), "bool")], [a, b])
    np.testing.assert_array_equal(got, [False, True, True, True])
    [got] = check_one_op(ar.MinimumOp, [((4,), "bool"), ((4,), "bool")], [a, b])
    np.testing.assert_array_equal(got, [False, False, False, True])


def test_empty_outputs_of_every_element_size():
    # regression: an empty float32 or float64 output could not be allocated
    flags = placeholder((None, 3), "bool", "flags")
    xs = [placeholder((None, 3), d, d) for d in ("int16", "float32", "float64")]
    f = Function(
        [flags, *xs], [emit(ew.CastOp, flags, dtype="int8"), *(emit(un.NegOp, x) for x in xs)]
    )
    outs = f([np.zeros((0, 3), d) for d in ("bool", "int16", "float32", "float64")])
    assert [o.dtype.name for o in outs] == ["int8", "int16", "float32", "float64"]
    assert all(o.shape == (0, 3) for o in outs)
