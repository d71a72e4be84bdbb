"""Compiling one LLVM module in parts on several threads: same functions, same results."""

from __future__ import annotations

import re
import threading
import time

import llvmlite.binding as llvm_binding
import numpy as np
import pytest

from aotk import backend as K
from aotk import gc_pause
from aotk.codegen import llvm_ir, llvm_split
from aotk.host_code import clear_cache

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


def _defined(text: str) -> list[str]:
    module = llvm_binding.parse_assembly(text, context=llvm_binding.create_context())
    module.verify()
    return sorted(f.name for f in module.functions if not f.is_declaration)


def test_large_entry_points_are_a_quick_piece_of_their_own(monkeypatch) -> None:
    monkeypatch.setattr(llvm_split, "QUICK_GLUE_CHARS", 1)
    monkeypatch.setattr(llvm_split, "MIN_CHARS_PER_PART", 1)
    monkeypatch.setattr(llvm_split.native_runtime, "cpus", lambda: 2)
    wrapper = 'define void @"a_packed"(ptr %".1")\n{\nentry:\n  call void @"a"(ptr %".1")\n'
    packed = TEXT.replace('define i64 @"c"', wrapper + '  ret void\n}\ndefine i64 @"c"')
    pieces = llvm_split.pieces(packed, {"a"})
    assert [p.quick for p in pieces] == [True, False, False]
    assert _defined(pieces[0].text) == ["a", "a_packed"]  # an entry goes with its wrapper
    assert sorted(_defined(p.text) for p in pieces[1:]) == [["b"], ["c"]]


def test_small_entry_points_and_micro_kernels_split_as_before(monkeypatch) -> None:
    monkeypatch.setattr(llvm_split, "parts_for", lambda text: 2)
    expected = [llvm_split.Piece(t) for t in llvm_split.split(TEXT, 2)]
    assert llvm_split.pieces(TEXT, {"a"}) == expected  # below QUICK_GLUE_CHARS
    monkeypatch.setattr(llvm_split, "QUICK_GLUE_CHARS", 1)
    assert llvm_split.pieces(TEXT, ()) == expected  # no entry points named
    assert llvm_split.pieces(TEXT, {"a", "b", "c"}) == expected  # nothing but glue


def test_a_quick_piece_is_optimized_at_o1_and_emitted_at_codegen_level_0(monkeypatch) -> None:
    levels: list[int] = []
    ir_levels: list[int] = []
    make, optimize = llvm_ir.target_machine, llvm_ir.optimize

    def spy(*args, codegen_level: int = 3, **kwargs):
        levels.append(codegen_level)
        return make(*args, codegen_level=codegen_level, **kwargs)

    def spy_optimize(*args, **kwargs):
        ir_levels.append(args[6])
        return optimize(*args, **kwargs)

    monkeypatch.setattr(llvm_ir, "target_machine", spy)
    monkeypatch.setattr(llvm_ir, "optimize", spy_optimize)
    pieces = [llvm_split.Piece(TEXT, quick=True), llvm_split.Piece(TEXT)]
    parts = llvm_split.compile_parts(pieces, None, None)
    assert sorted(levels) == [0, 3]
    assert sorted(ir_levels) == [1, 3]
    assert all(part.obj for part in parts)


def test_an_error_in_a_part_reaches_the_caller() -> None:
    with pytest.raises(RuntimeError):
        pieces = [llvm_split.Piece("define void @x() {\n}\n"), llvm_split.Piece(TEXT)]
        llvm_split.compile_parts(pieces, None, None)


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


def test_the_lowered_ir_is_collected_while_the_parts_compile(monkeypatch) -> None:
    """`host_code` hands `gc_pause.collect_young` to the parts: run once, by the calling
    thread, while the other parts' threads still work."""
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")
    clear_cache()  # the same step compiled by another test
    monkeypatch.setattr(llvm_split, "MIN_CHARS_PER_PART", 1)
    monkeypatch.setattr(llvm_split, "parts_for", lambda text: 3)
    seen: list[tuple[bool, int]] = []
    started = threading.Event()
    real_optimize = llvm_split.llvm_ir.optimize

    def slow_optimize(*args, **kwargs):
        started.set()
        time.sleep(0.2)  # keeps a part's thread busy past the collection
        return real_optimize(*args, **kwargs)

    def collect() -> None:
        started.wait(10)
        seen.append(
            (threading.current_thread() is threading.main_thread(), threading.active_count())
        )

    monkeypatch.setattr(llvm_split.llvm_ir, "optimize", slow_optimize)
    monkeypatch.setattr(gc_pause, "collect_young", collect)
    f = K.function(*_mlp_step())
    assert len(f._compiled.code.objects) == 3
    [(in_caller, threads)] = seen
    assert in_caller and threads >= 2


def test_a_function_with_quick_glue_computes_the_same_bits(monkeypatch) -> None:
    monkeypatch.setenv("AOTK_DISK_CACHE", "0")
    x = np.random.default_rng(1).normal(size=(50, 40)).astype("float32")
    whole = K.function(*_mlp_step())
    clear_cache()
    monkeypatch.setattr(llvm_split, "QUICK_GLUE_CHARS", 1)
    monkeypatch.setattr(llvm_split, "MIN_CHARS_PER_PART", 1)
    monkeypatch.setattr(llvm_split.native_runtime, "cpus", lambda: 2)
    quick = K.function(*_mlp_step())
    assert len(quick._compiled.code.objects) == 3  # the glue, then two parts of kernels
    for got, want in zip(quick([x]), whole([x]), strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


def test_the_optimized_parts_read_back_as_one_renamed_module() -> None:
    """A split module's optimized IR (its parts printed one after another, as the cache
    keeps it) parses into one module again: each function defined once, renamed and
    hidden with the prefix, the call from one part into the other linked."""
    tm = llvm_ir.target_machine(jit=False)
    pieces = [llvm_split.Piece(t) for t in llvm_split.split(TEXT, 3)]
    parts = llvm_split.compile_parts(pieces, None, None)
    joined = "\n".join(part.ir for part in parts)
    assert joined.count("; ModuleID") == 3  # a function a part: a's call to b crosses
    module = llvm_ir.parsed(joined, tm, "lib_")
    defined = {f.name: f.visibility.name for f in module.functions if not f.is_declaration}
    assert defined == {"lib_a": "hidden", "lib_b": "hidden", "lib_c": "hidden"}
    assert re.search(r"call void @lib_b\(", str(module))
    assert {f.name for f in module.functions if f.is_declaration} == {"ext"}
