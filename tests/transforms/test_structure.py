"""`structure_key` and `structure_text`: equal for the same code under other names,
different otherwise."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.parser import Parser

from aotk.context import make_context
from aotk.transforms.structure import structure_key, structure_text

BODIES = {
    "f": "%a = arith.addf %x, %y : f32\n %b = arith.mulf %a, %x : f32",
    "renamed": "%s = arith.addf %p, %q : f32\n %t = arith.mulf %s, %p : f32",
    "rewired": "%a = arith.addf %x, %y : f32\n %b = arith.mulf %a, %y : f32",
    "other_op": "%a = arith.subf %x, %y : f32\n %b = arith.mulf %a, %x : f32",
}


def _fn(name: str, body: str) -> func.FuncOp:
    args = "%p: f32, %q: f32" if name == "renamed" else "%x: f32, %y: f32"
    result = "%t" if name == "renamed" else "%b"
    text = f"func.func @{name}({args}) -> f32 {{\n {body}\n func.return {result} : f32\n}}"
    fn = Parser(make_context(), text).parse_module().body.block.first_op
    assert isinstance(fn, func.FuncOp)
    return fn


def test_names_do_not_matter_code_does() -> None:
    keys = {name: structure_key(_fn(name, body)) for name, body in BODIES.items()}
    assert keys["f"] == keys["renamed"]
    assert hash(keys["f"]) == hash(keys["renamed"])
    assert keys["f"] != keys["rewired"]
    assert keys["f"] != keys["other_op"]


def test_text_names_nothing_but_ops_types_and_attributes() -> None:
    bodies = {
        **BODIES,
        "constant": "%c = arith.constant 1.0 : f32\n %b = arith.mulf %c, %x : f32",
        "other_constant": "%c = arith.constant 2.0 : f32\n %b = arith.mulf %c, %x : f32",
    }
    unnamed = frozenset({"sym_name"})
    texts = {name: structure_text(_fn(name, body), unnamed) for name, body in bodies.items()}
    assert texts["f"] == texts["renamed"]
    assert len({texts[n] for n in ("f", "rewired", "other_op", "constant", "other_constant")}) == 5
    # the function's name counts unless skipped
    assert structure_text(_fn("f", BODIES["f"])) != structure_text(_fn("g", BODIES["f"]))
    assert "%" not in texts["f"]
