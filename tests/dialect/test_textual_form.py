"""Every op with a differential spec survives its textual form: traced, printed, parsed
back and verified, it prints the same (what `aotk-opt` users and the lit tests rely on)."""

from __future__ import annotations

import pytest
from conftest import emit, placeholder
from test_differential import MINE, SPECS, _operand_dtypes
from xdsl.parser import Parser

from aotk import trace
from aotk.context import make_context

OPS = [op for op in MINE if op in SPECS]


def test_every_op_of_the_spec_table_is_covered() -> None:
    # the other ops are tested by sibling modules, with cases of their own
    assert OPS == MINE and len(OPS) > 30


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_an_op_prints_parses_and_prints_the_same(op) -> None:
    spec = SPECS[op]
    case = spec.cases(spec.primary if spec.primary in spec.dtypes else spec.dtypes[0])[0]
    dtypes = _operand_dtypes(case, spec.primary)
    shapes = zip(case.decl, dtypes, strict=True)
    xs = [placeholder(s, d, f"x{i}") for i, (s, d) in enumerate(shapes)]
    module, _ = trace.extract(xs, [emit(op, *xs, **case.attrs)], "test")
    text = str(module)
    assert f'"{op.name}"' in text
    parsed = Parser(make_context(), text).parse_module()
    parsed.verify()
    assert str(parsed) == text
