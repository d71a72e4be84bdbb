"""Seeded mutations of the lit tests' `.mlir` inputs, run through `aotk-opt` in-process.

Each outcome is one of: "accepted" (exit 0: the mutation is still a valid program),
"located" (exit 1 with a file:line:col diagnostic), "unlocated" (exit 1 without one) or
"internal" (an internal error, or anything but a clean exit).
"""

from __future__ import annotations

import contextlib
import io
import random
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aotk.tools.aotk_opt import main

LIT = Path(__file__).resolve().parents[2] / "lit_tests"
LOCATED = re.compile(r"\S+\.mlir:\d+:\d+")
SSA = re.compile(r"%[\w.$-]+")
DIGIT = re.compile(r"\d")
INTEGER = re.compile(r"(?<![\w.%#-])-?\d+(?![\w.])")  # a whole literal: a dim, an index
EDGES = ["-1", "0", "1", "7", "100", "-100"]
TYPE = re.compile(r"\b(f16|f32|f64|i1|i8|i32|i64|index)\b")


@dataclass(frozen=True)
class Case:
    source: Path
    args: list[str]  # aotk-opt's options from the RUN line, without the input
    text: str


def cases() -> list[Case]:
    """Every lit input whose first RUN line is a plain `aotk-opt %s ...` run."""
    found = []
    for path in sorted(LIT.rglob("*.mlir")):
        if "Output" in path.parts:
            continue
        text = path.read_text()
        run = next((ln for ln in text.splitlines() if ln.startswith("// RUN:")), None)
        if run is None or not run.startswith("// RUN: aotk-opt %s"):
            continue
        command = run.removeprefix("// RUN:").split("|")[0].split("2>&1")[0]
        if "not " in command or "%t" in command:  # expected failures; lit's temp files
            continue
        args = [a for a in shlex.split(command)[2:] if a != "--verify-diagnostics"]
        found.append(Case(path, args, text))
    return found


def _code_line(lines: list[str], rng: random.Random) -> int:
    """A random line that is neither blank nor a comment (lit's RUN and CHECK lines)."""
    code = [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("//")]
    return rng.choice(code) if code else 0


def _at_code(text: str, rng: random.Random) -> int:
    """A random offset inside a code line of `text`."""
    lines = text.splitlines(keepends=True)
    i = _code_line(lines, rng)
    return sum(map(len, lines[:i])) + rng.randrange(max(len(lines[i]), 1))


def _delete_char(text: str, rng: random.Random) -> str:
    i = _at_code(text, rng)
    return text[:i] + text[i + 1 :]


def _truncate(text: str, rng: random.Random) -> str:
    return text[: _at_code(text, rng)]


def _lines(text: str, rng: random.Random, change: Callable[[list[str], int], None]) -> str:
    lines = text.splitlines(keepends=True)
    change(lines, _code_line(lines, rng))
    return "".join(lines)


def _drop_line(text: str, rng: random.Random) -> str:
    return _lines(text, rng, lambda ls, i: ls.pop(i))


def _repeat_line(text: str, rng: random.Random) -> str:
    return _lines(text, rng, lambda ls, i: ls.insert(i, ls[i]))


def _swap_lines(text: str, rng: random.Random) -> str:
    def swap(ls: list[str], i: int) -> None:
        j = min(i + 1, len(ls) - 1)
        ls[i], ls[j] = ls[j], ls[i]

    return _lines(text, rng, swap)


def _replace_match(pattern: re.Pattern[str], pick: Callable[[list[str]], str]):
    def mutate(text: str, rng: random.Random) -> str:
        matches = list(pattern.finditer(text))
        if not matches:
            return text
        m = rng.choice(matches)
        return text[: m.start()] + pick([x.group() for x in matches]) + text[m.end() :]

    return mutate


MUTATIONS: dict[str, Callable[[str, random.Random], str]] = {
    "delete a character": _delete_char,
    "drop a line": _drop_line,
    "repeat a line": _repeat_line,
    "swap two lines": _swap_lines,
    "truncate": _truncate,
}


def mutate(text: str, seed: int) -> tuple[str, str]:
    """One mutation of `text`: (what was done, the result)."""
    rng = random.Random(seed)
    table = {
        **MUTATIONS,
        "rename a value": _replace_match(SSA, rng.choice),
        "change a digit": _replace_match(DIGIT, lambda _: str(rng.randrange(10))),
        "change an integer to an edge value": _replace_match(INTEGER, lambda _: rng.choice(EDGES)),
        "change a type": _replace_match(TYPE, lambda _: rng.choice(["f32", "i32", "i1", "f64"])),
    }
    name = rng.choice(sorted(table))
    return name, table[name](text, rng)


def run(case: Case, text: str, tmp: Path) -> tuple[str, str]:
    """Run aotk-opt on `text` with `case`'s options: (outcome, its stderr)."""
    path = tmp / case.source.name
    path.write_text(text)
    err, out = io.StringIO(), io.StringIO()
    code: object = 0
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            main([str(path), *case.args])
        except SystemExit as exit_:
            code = exit_.code
        except BaseException as exc:  # any escape is what this looks for
            return "internal", f"{type(exc).__name__}: {exc}"
    message = err.getvalue()
    if code == 0:
        return "accepted", message
    if code != 1 or "internal error" in message or "Traceback" in message:
        return "internal", message
    return ("located" if LOCATED.search(message) else "unlocated"), message
