"""Compiling one LLVM module in parts on several threads: same functions, same results."""

from __future__ import annotations

import re

import llvmlite.binding as llvm_binding
import numpy as np
import pytest

from aotk import backend as K
from aotk.codegen import llvm_ir, llvm_split
from aotk.function import clear_cache

TEXT = """\
declare void @"ext"(ptr %".1")
define void @"a"(ptr %".1")
{
entry:
  call void @"b"(ptr %".1")
  ret void
}
define void @"b"(ptr %".1")
{
entry:
  call void @"ext"(ptr %".1")
  ret void
}
define i64 @"c"(i64 %".1")
{
entry:
  %".3" = add i64 %".1", 1
  ret i64 %".3"
}
attributes #0 = { nounwind }
"""


def test_split_keeps_every_function_once_and_declares_the_rest() -> None:
    parts = llvm_split.split(TEXT, 2)
    assert len(parts) == 2
    defined = []
    for part in parts:
        module = llvm_binding.parse_assembly(part, context=llvm_binding.create_context())
        module.verify()
        functions = {f.name: f.is_declaration for f in module.functions}
        assert set(functions) >= {"a", "b", "c", "ext"}
        defined += [name for name, decl in functions.items() if not decl]
    assert sorted(defined) == ["a", "b", "c"]


def test_split_refuses_globals_and_single_functions() -> None:
    assert llvm_split.split('@"g" = global i64 0\n' + TEXT, 2) == ['@"g" = global i64 0\n' + TEXT]
    one_function = TEXT.split('define void @"b"')[0]
    assert llvm_split.split(one_function, 2) == [one_function]
    assert llvm_split.split(TEXT, 1) == [TEXT]


def test_an_error_in_a_part_reaches_the_caller() -> None:
    with pytest.raises(RuntimeError):
        llvm_split.compile_parts(["define void @x() {\n}\n", TEXT], None, None)


def _mlp_step() -> tuple[list, list]:
    rng = np.random.default_rng(0)
    x = K.placeholder((None, 40))
    w = K.variable(rng.normal(size=(40, 30)).astype("float32"))
    h = K.softmax(K.tanh(K.dot(x, w)) * 2.0)
    loss = K.mean(K.log(h + 1e-3))
    g = K.gradients(loss, [w])[0]
    return [x], [loss, g]


def test_a_function_compiled_in_parts_computes_the_same_bits(monkeypatch) -> None:
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")  # both compiles must really happen
    x = np.random.default_rng(1).normal(size=(50, 40)).astype("float32")
    whole = K.function(*_mlp_step())
    assert len(whole._compiled.code.objects) == 1
    clear_cache()
    monkeypatch.setattr(llvm_split, "MIN_CHARS_PER_PART", 1)
    monkeypatch.setattr(llvm_split, "parts_for", lambda text: 3)
    parts = K.function(*_mlp_step())
    assert len(parts._compiled.code.objects) == 3
    for got, want in zip(parts([x]), whole([x]), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


def test_the_optimized_parts_read_back_as_one_renamed_module() -> None:
    """A split module's optimized IR (its parts printed one after another, as the cache
    keeps it) parses into one module again: each function defined once, renamed and
    hidden with the prefix, the call from one part into the other linked."""
    tm = llvm_ir.target_machine(jit=False)
    parts = llvm_split.compile_parts(llvm_split.split(TEXT, 3), None, None)
    joined = "\n".join(part.ir for part in parts)
    assert joined.count("; ModuleID") == 3  # a function a part: a's call to b crosses
    module = llvm_ir.parsed(joined, tm, "lib_")
    defined = {f.name: f.visibility.name for f in module.functions if not f.is_declaration}
    assert defined == {"lib_a": "hidden", "lib_b": "hidden", "lib_c": "hidden"}
    assert re.search(r"call void @lib_b\(", str(module))
    assert {f.name for f in module.functions if f.is_declaration} == {"ext"}
