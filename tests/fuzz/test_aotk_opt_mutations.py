"""aotk-opt on mutated `.mlir` files: a located diagnostic or a valid program, never an
internal error, a traceback or a hang.

The inputs are the lit tests' files with one seeded mutation each (`mlir_mutations.py`).
CI runs the seeds below; `AOTK_FUZZ_MLIR=5000 pytest tests/fuzz` runs that many more.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from mlir_mutations import cases, mutate, run

from aotk.tools.aotk_opt import main
from aotk.tools.string_literals import first_malformed

CI_MUTATIONS = 300
EXTRA = int(os.environ.get("AOTK_FUZZ_MLIR", "0"))


def _tally(seeds: range, tmp: Path) -> Counter[str]:
    inputs = cases()
    assert len(inputs) >= 30  # the lit tests' plain aotk-opt runs were found
    tally: Counter[str] = Counter()
    for seed in seeds:
        case = inputs[seed % len(inputs)]
        what, text = mutate(case.text, seed)
        outcome, message = run(case, text, tmp)
        assert outcome in ("accepted", "located"), (
            f"seed {seed}: {what} in {case.source.name} gave {outcome}:\n{message}"
        )
        tally[outcome] += 1
    return tally


def test_mutated_inputs_get_a_located_diagnostic_or_pass(tmp_path: Path) -> None:
    tally = _tally(range(CI_MUTATIONS), tmp_path)
    # most mutations break the program: the check saw real diagnostics, not only no-ops
    assert tally["located"] > CI_MUTATIONS // 2, tally


@pytest.mark.skipif(EXTRA == 0, reason="set AOTK_FUZZ_MLIR=n to run n more mutations")
def test_more_mutations(tmp_path: Path) -> None:
    _tally(range(10_000, 10_000 + EXTRA), tmp_path)


@pytest.mark.parametrize(
    "text, bad",
    [
        ('%y = "aotk.neg"(%x)', None),
        ('{s = "a\\"b\\n\\t\\\\\\4F"}', None),
        ('{s = "// not a comment"} // a "comment', None),
        ('%y = "aotk.neg(%x) : (f32) -> f32\n', 5),
        ('{a = "ok"} {b = "x\\q"}', 16),
        ('{a = "vertical\vtab"}', 5),
        ('"unterminated', 0),
    ],
)
def test_malformed_string_literals_are_found(text: str, bad: int | None) -> None:
    assert first_malformed(text) == bad


def test_an_unterminated_string_is_a_diagnostic_not_minutes_of_backtracking(tmp_path: Path):
    # xDSL's lexer backtracks exponentially in the length of the line after the quote
    line = '  %y = "aotk.neg(%x) : (tensor<4xf32>) -> tensor<4xf32>' + " " * 40
    source = tmp_path / "bad.mlir"
    source.write_text(f"func.func @f(%x: tensor<4xf32>) {{\n{line}\n  func.return\n}}\n")
    done = subprocess.run(
        [sys.executable, "-m", "aotk.tools.aotk_opt", str(source)],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: this takes about a second
    )
    assert done.returncode == 1
    assert f"{source}:2:8" in done.stderr and "unterminated string literal" in done.stderr


def _diagnostic(tmp_path: Path, capsys, text: str, *options: str) -> tuple[str, str]:
    """aotk-opt's stderr on `text` (which must fail), and the file's path."""
    source = tmp_path / "input.mlir"
    source.write_text(text)
    with pytest.raises(SystemExit) as exit_:
        main([str(source), *options])
    err = capsys.readouterr().err
    assert exit_.value.code == 1, err
    assert "internal error" not in err, err
    return err, str(source)


def test_a_value_its_type_cannot_hold_is_located_at_its_op(tmp_path: Path, capsys) -> None:
    text = "func.func @f() -> i1 {\n  %c = arith.constant 4 : i1\n  func.return %c : i1\n}\n"
    err, source = _diagnostic(tmp_path, capsys, text)
    assert err.startswith(f"{source}:2:3\n") and "Integer value 4 is out of range" in err


def test_an_element_type_xdsl_cannot_store_is_located(tmp_path: Path, capsys) -> None:
    text = (
        "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
        '  %y = "aotk.transpose"(%x) <{perm = array<i67: 0>}> : (tensor<2xf32>) -> tensor<2xf32>\n'
        "  func.return %y : tensor<2xf32>\n}\n"
    )
    err, source = _diagnostic(tmp_path, capsys, text)
    assert err.startswith(f"{source}:2:3\n") and "Format not implemented for i67" in err


def test_a_block_label_defined_twice_is_located(tmp_path: Path, capsys) -> None:
    text = "func.func @f(%c: i1) {\n  cf.cond_br %c, ^a, ^a\n^a:\n^a:\n  func.return\n}\n"
    err, source = _diagnostic(tmp_path, capsys, text)
    assert err.startswith(f"{source}:4:"), err


def test_a_declaration_on_tensors_is_located_by_the_lowering(tmp_path: Path, capsys) -> None:
    text = "func.func private @f(%x: tensor<?x4xf32>) -> tensor<?xf32>\n"
    err, source = _diagnostic(tmp_path, capsys, text, "-p", "convert-aotk-to-loops")
    where = f"{source}:1:1: error: in pass 'convert-aotk-to-loops'"
    assert err.startswith(f"{where}: @f on tensors has no body"), err


def test_a_symbol_defined_twice_is_located_at_the_second(tmp_path: Path, capsys) -> None:
    text = "func.func @f() {\n  func.return\n}\nfunc.func @f() {\n  func.return\n}\n"
    err, source = _diagnostic(tmp_path, capsys, text)
    assert err.startswith(f"{source}:4:1\n") and 'Redefinition of symbol "f"' in err, err
