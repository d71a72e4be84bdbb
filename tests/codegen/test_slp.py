"""LLVM's SLP vectorizer runs on micro-kernels only: on a model's code it cost a tenth to
two fifths of the optimization time and changed only cold code (`llvm_ir.optimize`)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from aotk import micro_kernels
from aotk.codegen import jit, llvm_ir, llvm_split

# four adjacent lanes, each loaded, doubled and stored: straight-line code SLP packs
LANES = "\n".join(
    f"""  %pa{i} = getelementptr float, ptr %a, i64 {i}
  %x{i} = load float, ptr %pa{i}, align 4
  %y{i} = fadd float %x{i}, %x{i}
  %pb{i} = getelementptr float, ptr %b, i64 {i}
  store float %y{i}, ptr %pb{i}, align 4"""
    for i in range(4)
)
TEXT = f"""define void @"lanes"(ptr noalias %a, ptr noalias %b)
{{
entry:
{LANES}
  ret void
}}
"""
VECTOR_ADD = re.compile(r"fadd <4 x float>")
SCALAR_ADD = re.compile(r"fadd float")


def _body(ir: str) -> str:
    start = ir.index('@"lanes"') if '@"lanes"' in ir else ir.index("@lanes")
    return ir[start:]


@pytest.mark.parametrize("slp", [False, True])
def test_optimize_packs_lanes_only_when_asked(slp: bool) -> None:
    tm = llvm_ir.target_machine()
    body = _body(str(llvm_ir.optimize(TEXT, tm, slp=slp)))
    assert bool(VECTOR_ADD.search(body)) is slp, body
    assert len(SCALAR_ADD.findall(body)) == (0 if slp else 4), body


@pytest.mark.parametrize("micro_kernel", [False, True])
def test_only_micro_kernels_are_compiled_with_slp(micro_kernel: bool) -> None:
    tm = llvm_ir.target_machine(jit=False)
    whole = jit.generate_from_ir(TEXT, {"lanes": "pp"}, tm, micro_kernel=micro_kernel)
    pieces = [llvm_split.Piece(TEXT), llvm_split.Piece(TEXT)]
    parts = llvm_split.compile_parts(pieces, None, None, slp=micro_kernel)
    for ir in [whole.llvm_ir, *(p.ir for p in parts)]:
        assert bool(VECTOR_ADD.search(_body(ir))) is micro_kernel, ir


def test_a_module_compiled_in_parts_passes_the_choice_to_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[bool] = []
    compile_parts = llvm_split.compile_parts

    def spy(
        texts: list[llvm_split.Piece],
        cpu: str | None,
        features: str | None,
        slp: bool = False,
        prefix: str = "",
        **more: Any,
    ) -> Any:
        seen.append(slp)
        return compile_parts(texts, cpu, features, slp, prefix, **more)

    monkeypatch.setattr(llvm_split, "compile_parts", spy)
    monkeypatch.setattr(llvm_split, "parts_for", lambda text: 2)
    module = micro_kernels.lowered_module(["random_uniform_float32"])
    for micro_kernel in (True, False):
        code = jit.generate(module, micro_kernel=micro_kernel)
        assert len(code.objects) == 2
    assert seen == [True, False]
