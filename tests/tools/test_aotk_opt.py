"""aotk-opt on good and bad input: exit status, output, and diagnostics with line:column.

Most tests call `main(argv)` in-process (fast); one runs the installed console script to
check that nothing prints a traceback in a real process.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from aotk.dialect.arithmetic import AddOp
from aotk.dialect.base import tensor
from aotk.lowering.pipeline import ALL_PASSES
from aotk.tools.aotk_opt import main

CHAIN = """\
func.func @neg_exp(%x: tensor<?xf32>) -> tensor<?xf32> {
  %n = "aotk.neg"(%x) : (tensor<?xf32>) -> tensor<?xf32>
  %y = "aotk.exp"(%n) : (tensor<?xf32>) -> tensor<?xf32>
  func.return %y : tensor<?xf32>
}
"""

ADD = """\
func.func @add(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = "aotk.add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""

SYNTAX_ERROR = ADD.replace("(%x, %x) :", "(%x, %x :")
UNKNOWN_OP = ADD.replace("aotk.add", "aotk.frobnicate")
BAD_MATMUL = """\
func.func @matmul(%a: tensor<2x4xf32>, %b: tensor<3x5xf32>) -> tensor<2x5xf32> {
  %y = "aotk.matmul"(%a, %b) : (tensor<2x4xf32>, tensor<3x5xf32>) -> tensor<2x5xf32>
  func.return %y : tensor<2x5xf32>
}
"""


@dataclass
class Run:
    status: int
    out: str
    err: str


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Run:
    """Run aotk-opt in-process; status 0 when main returns normally."""
    try:
        main(list(argv))
        status = 0
    except SystemExit as done:
        status = 1 if done.code is None else int(done.code)  # type: ignore[arg-type]
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return Run(status, captured.out, captured.err)


@pytest.fixture
def source(tmp_path: Path):
    """Write an .mlir file and return its path as a string."""

    def write(text: str, name: str = "in.mlir") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def test_passes_run_and_print(capsys, source):
    r = run(capsys, source(CHAIN), "-p", "aotk-fuse")
    assert r.status == 0
    assert "aotk.fused(%" in r.out and "= %x)" in r.out


def test_named_stage_runs_its_passes(capsys, source):
    r = run(capsys, source(CHAIN), "--aotk-stage=loops")
    assert r.status == 0
    assert "scf.for" in r.out and "aotk.fused" not in r.out


def test_input_stage_after_stop_stage_is_an_error(capsys, source):
    r = run(capsys, source(CHAIN), "--aotk-input-stage=llvm", "--aotk-stage=graph")
    assert r.status == 1
    assert "--aotk-stage=graph comes before --aotk-input-stage=llvm" in r.err


def test_print_between_passes(capsys, source):
    r = run(capsys, source(CHAIN), "--aotk-stage=graph", "--print-between-passes")
    assert r.status == 0
    assert "IR after aotk-simplify:" in r.out and "IR after aotk-fuse:" in r.out


def test_syntax_error_has_line_and_column(capsys, source):
    r = run(capsys, source(SYNTAX_ERROR))
    assert r.status == 1
    assert "in.mlir:2:26" in r.err and "')' expected" in r.err


def test_unknown_op_has_line_and_column(capsys, source):
    r = run(capsys, source(UNKNOWN_OP))
    assert r.status == 1
    assert "in.mlir:2:25" in r.err and "aotk.frobnicate is not registered" in r.err


def test_verifier_error_has_line_and_column(capsys, source):
    r = run(capsys, source(BAD_MATMUL))
    assert r.status == 1
    assert "in.mlir:2:3" in r.err
    assert "'aotk.matmul' op does not verify: contracted dims differ" in r.err


def test_split_input_lines_count_from_the_file_start(capsys, source):
    r = run(capsys, source(CHAIN + "// -----\n" + BAD_MATMUL), "--split-input-file")
    assert r.status == 1
    assert "in.mlir:8:3" in r.err


def test_verify_diagnostics_prints_and_exits_zero(capsys, source):
    r = run(capsys, source(BAD_MATMUL), "--verify-diagnostics")
    assert r.status == 0
    assert "in.mlir:2:3" in r.out and "contracted dims differ" in r.out


def test_pass_failure_names_the_pass(capsys, source):
    r = run(capsys, source(CHAIN), "-p", "aotk-check-stage{stage=loops}")
    assert r.status == 1
    assert "in.mlir: error: in pass 'aotk-check-stage': 'aotk.neg' survived" in r.err


def test_unknown_check_stage_is_a_pass_failure(capsys, source):
    r = run(capsys, source(CHAIN), "-p", "aotk-check-stage{stage=bogus}")
    assert r.status == 1
    assert "unknown stage 'bogus'" in r.err


@dataclass(frozen=True)
class BreakAddPass(ModulePass):
    """Give every aotk.add a wrong result type, keeping its location if `keep_loc`."""

    name = "test-break-add"
    keep_loc: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for add in [o for o in op.walk() if isinstance(o, AddOp)]:
            bad = AddOp.create(
                operands=list(add.operands),
                result_types=[tensor(add.result.type.element_type, (5,))],
            )
            if self.keep_loc:
                bad.location = add.location
            add.parent_block().insert_op_before(bad, add)  # type: ignore[union-attr]
            add.result.replace_all_uses_with(bad.result)
            add.detach()


class RaisingPass(ModulePass):
    """A pass with a bug."""

    name = "test-raise"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        raise KeyError("oops")


@pytest.fixture
def test_passes(monkeypatch):
    monkeypatch.setitem(ALL_PASSES, BreakAddPass.name, lambda: BreakAddPass)
    monkeypatch.setitem(ALL_PASSES, RaisingPass.name, lambda: RaisingPass)


def test_invalid_ir_after_a_pass_keeps_the_source_location(capsys, source, test_passes):
    r = run(capsys, source(ADD), "-p", "test-break-add")
    assert r.status == 1
    assert (
        "in.mlir:2:3: error: 'aotk.add' op does not verify (after pass 'test-break-add')" in r.err
    )


def test_invalid_ir_after_a_pass_without_location_shows_the_ir(capsys, source, test_passes):
    r = run(capsys, source(ADD), "-p", "test-break-add{keep_loc=false}")
    assert r.status == 1
    assert "error: 'aotk.add' op does not verify (after pass 'test-break-add')" in r.err
    assert "Operation does not verify" in r.err  # xDSL's annotated IR


def test_internal_error_names_the_pass(capsys, source, test_passes):
    r = run(capsys, source(ADD), "-p", "test-raise")
    assert r.status == 1
    assert "internal error in pass 'test-raise': KeyError" in r.err


def test_traceback_flag_reraises(capsys, source, test_passes):
    with pytest.raises(KeyError):
        main([source(ADD), "-p", "test-raise", "--traceback"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.mlir"], "cannot open 'missing.mlir': No such file or directory"),
        (["in.mlir", "-p", "no-such-pass"], "Unrecognized passes: ['no-such-pass']"),
        (
            ["in.mlir", "-p", "aotk-check-stage{stage=loops"],
            "Error parsing pass pipeline specification",
        ),
        (["in.mlir", "-p", "aotk-check-stage{bogus=1}"], 'arguments ["bogus"] not found'),
        (["in.mlir", "-t", "llvm-opt"], "-t llvm-opt: 'func.func' is not in the llvm dialect"),
        (["in.txt"], "Unrecognized file extension 'txt'"),
    ],
)
def test_bad_invocations_exit_with_one(capsys, source, monkeypatch, argv, message):
    source(ADD, "in.txt")
    monkeypatch.chdir(Path(source(ADD)).parent)
    r = run(capsys, *argv)
    assert r.status == 1
    assert message in r.err


def test_llvm_opt_and_asm_targets(capsys, source):
    path = source(CHAIN)
    ir = run(capsys, path, "--aotk-stage=llvm", "-t", "llvm-opt")
    assert ir.status == 0 and "define void @neg_exp(" in ir.out
    asm = run(capsys, path, "--aotk-stage=llvm", "-t", "asm{cpu=x86-64}")
    assert asm.status == 0 and "neg_exp:" in asm.out


def test_version_names_aotk(capsys):
    r = run(capsys, "--version")
    assert r.status == 0 and r.out.startswith("aotk-opt from aotk ")


@pytest.mark.skipif(shutil.which("aotk-opt") is None, reason="console script not installed")
def test_console_script_exits_one_without_traceback(source):
    done = subprocess.run(
        ["aotk-opt", source(BAD_MATMUL)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert "in.mlir:2:3" in done.stderr and "Traceback" not in done.stderr


def test_module_entry_point(source):
    done = subprocess.run(
        [sys.executable, "-m", "aotk.tools.aotk_opt", source(SYNTAX_ERROR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1 and "in.mlir:2:26" in done.stderr


def test_values_of_another_block_are_not_taken_for_uses_before_definition() -> None:
    """Branches are not followed: a value of the entry block read by a later block is
    fine, a value read in its own block before its definition is not."""
    from xdsl.parser import Parser

    from aotk.context import make_context
    from aotk.tools.aotk_opt import _use_before_definition

    text = """
    func.func @f(%a: i64) -> i64 {
      %b = arith.addi %a, %a : i64
      cf.br ^next
    ^next:
      %c = arith.muli %b, %b : i64
      func.return %c : i64
    }
    """
    assert _use_before_definition(Parser(make_context(), text).parse_module()) is None
    bad = text.replace("%c = arith.muli %b, %b", "%c = arith.muli %b, %d").replace(
        "func.return %c : i64", "%d = arith.addi %c, %c : i64\n      func.return %d : i64"
    )
    op, index = _use_before_definition(Parser(make_context(), bad).parse_module()) or (None, 0)
    assert op is not None and op.name == "arith.muli" and index == 1
