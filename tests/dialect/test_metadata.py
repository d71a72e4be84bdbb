"""The typed function attributes the stages hand each other."""

from __future__ import annotations

import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr, TensorType, f32

from aotk.dialect import metadata


def _fn() -> func.FuncOp:
    return func.FuncOp("main", ([], []))


def test_ints_round_trip_and_absent_is_empty() -> None:
    fn = _fn()
    assert metadata.ints(fn, metadata.UPDATES) == ()
    metadata.set_ints(fn, metadata.UPDATES, [2, 5, 3, -1])
    assert metadata.ints(fn, metadata.UPDATES) == (2, 5, 3, -1)
    assert str(fn.attributes[metadata.UPDATES]) == "array<i64: 2, 5, 3, -1>"


def test_the_old_comma_joined_form_is_refused_by_name() -> None:
    fn = _fn()
    fn.attributes[metadata.MAY_ALIAS] = StringAttr("1,2")
    with pytest.raises(ValueError, match=r"aotk.may_alias must be an array<i64: \.\.\.>"):
        metadata.ints(fn, metadata.MAY_ALIAS)


def test_check_accepts_what_fits_and_names_what_does_not() -> None:
    t = TensorType(f32, [4])
    fn = func.FuncOp("step", ([t, t, t], [t, t]))
    metadata.set_ints(fn, metadata.UPDATES, [0, 2, 1, -1])  # one input updated, one not read
    metadata.set_ints(fn, metadata.MAY_ALIAS, [2])
    metadata.check(fn)
    metadata.set_ints(fn, metadata.UPDATES, [1, 3])
    with pytest.raises(ValueError, match=r"@step: attribute aotk.updates: input 3 is out of"):
        metadata.check(fn)
