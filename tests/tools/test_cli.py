"""The `aotk` command line: subcommands, exit status and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

from aotk.lowering import pipeline
from aotk.tools.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(argv))
    captured = capsys.readouterr()
    return done.value.code, captured.out, captured.err  # type: ignore[return-value]


def test_stages_lists_every_stage_with_its_passes(capsys):
    status, out, _ = run(capsys, "stages")
    assert status == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == list(pipeline.STAGES)
    for line, spec in zip(lines, pipeline.STAGES.values(), strict=True):
        if spec:
            assert line.split()[1] == spec


def test_version_names_aotk_and_its_compilers(capsys):
    status, out, _ = run(capsys, "version")
    assert status == 0
    assert out.startswith(f"aotk {version('aotk')} ")
    assert f"xdsl {version('xdsl')}" in out and f"llvmlite {version('llvmlite')}" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["stages", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_errors_are_one_line_and_exit_one(capsys, argv, message):
    status, out, err = run(capsys, *argv)
    assert status == 1
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("aotk: error: ") and message in err


def test_module_entry_point():
    done = subprocess.run(
        [sys.executable, "-m", "aotk.tools.cli", "stages"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("trace")


def test_kernels_lists_every_micro_kernel_with_its_signature(capsys):
    from aotk.kernels import library

    status, out, _ = run(capsys, "kernels")
    assert status == 0
    lines = out.splitlines()
    assert len(lines) == len(library.names())
    assert "aotk_uk_matmul_float32_packed(ptr, ptr, ptr, ptr, i64, i64, i64)" in lines
    assert "aotk_uk_transpose_8bit(ptr, ptr, i64, i64, i64, i64)" in lines


@pytest.mark.parametrize("stage, defined", [("loops", "func.func"), ("llvm", "llvm.func")])
def test_kernels_prints_one_micro_kernel_at_a_stage(capsys, stage, defined):
    status, out, _ = run(capsys, "kernels", "--print", "transpose_32bit", "--stage", stage)
    assert status == 0
    assert f"{defined} @aotk_uk_transpose_32bit(" in out
    assert "matmul" not in out


def test_kernels_names_an_unknown_micro_kernel(capsys):
    status, out, err = run(capsys, "kernels", "--print", "matmul_int8")
    assert (status, out) == (1, "")
    assert err == (
        "aotk: error: no aotk micro-kernel named 'matmul_int8'; see `aotk kernels` for the list\n"
    )
