"""`aotk export FILE.py:FUNCTION -o DIR`: build a K.function from a script, export it as C.

The script is imported by path (its directory on `sys.path` meanwhile) and FUNCTION is
called with no arguments; it must return a compiled K.function. Every failure is raised
as `CommandError`, which the CLI prints as one line; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO


class CommandError(Exception):
    """A failure the user can fix, reported as one line without a traceback."""


def add_parser(commands: Any) -> None:
    """Register `aotk export` on the CLI's subcommand parsers."""
    cmd = commands.add_parser(
        "export",
        help="export the K.function or Keras model a Python function builds as a C library",
        description="Import FILE.py, call FUNCTION() (which returns a compiled K.function "
        "or a Keras model running on aotk) and write lib<name>.so, lib<name>.a and <name>.h "
        "to the output directory.",
    )
    cmd.add_argument("target", metavar="FILE.py:FUNCTION", help="where the builder is")
    cmd.add_argument("-o", "--out", required=True, type=Path, metavar="DIR", help="output dir")
    cmd.add_argument("--name", help="model name, a C identifier (default: FUNCTION)")
    cmd.add_argument(
        "--weights",
        choices=("embedded", "external"),
        default="embedded",
        help="weights inside the library (default) or in <name>.weights",
    )
    cmd.add_argument("--target-cpu", metavar="CPU", help="LLVM CPU name (default: this host)")
    cmd.add_argument("--target-features", metavar="FEATS", help="LLVM features, e.g. +avx2,+fma")
    cmd.add_argument(
        "--step",
        choices=("predict", "train"),
        default="predict",
        help="for a Keras model: its predict function (default) or its training step",
    )
    cmd.add_argument(
        "--cflag",
        action="append",
        default=[],
        metavar="FLAG",
        help="a C compiler flag for the runtime, e.g. --cflag=-g (repeatable)",
    )
    cmd.add_argument(
        "--signing-key-file",
        type=Path,
        metavar="FILE",
        help="sign the library and weights with the key in FILE (mode 600): writes .sig files "
        "that aotk.load(..., signing_key=key) checks",
    )
    cmd.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME=DIMS",
        help="fix an input's dynamic dims, e.g. dense_1_target=?,3 (? stays dynamic; "
        "repeatable): the library then takes only that size",
    )
    cmd.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """The `aotk export` subcommand; returns the exit status."""
    try:
        path, func_name = parse_target(args.target)
        if args.out.exists() and not args.out.is_dir():
            raise CommandError(f"{args.out}: exists and is not a directory")
        key = read_key(args.signing_key_file) if args.signing_key_file else None
        shapes = parse_input_shapes(args.input_shape)
        fn = build(path, func_name)
        exported = export(fn, args, args.name or func_name, key, shapes)
    except CommandError as err:
        print(f"aotk: error: {err}", file=sys.stderr)
        return 1
    for written in (exported.library, exported.static_library, exported.header):
        print(written)
    if exported.weights is not None:
        print(exported.weights)
    return 0


def parse_target(target: str) -> tuple[Path, str]:
    """Split FILE.py:FUNCTION and check that the file exists."""
    file_part, sep, func_name = target.rpartition(":")
    if not sep or not file_part or not func_name:
        raise CommandError(f"expected FILE.py:FUNCTION, got '{target}'")
    if not func_name.isidentifier():
        raise CommandError(f"'{func_name}' in '{target}' is not a Python function name")
    path = Path(file_part)
    if path.suffix != ".py":
        raise CommandError(f"{path}: not a Python file (expected FILE.py:FUNCTION)")
    if not path.is_file():
        raise CommandError(f"{path}: no such file")
    return path, func_name


def build(path: Path, func_name: str) -> Any:
    """Import `path`, call its `func_name()` and check that it gave a compiled function."""
    from aotk.aot.keras_model import is_keras_model
    from aotk.function import Function

    with _on_sys_path(path.resolve().parent):
        module = _import(path)
        builder = getattr(module, func_name, None)
        if builder is None:
            raise CommandError(f"{path} defines no '{func_name}'")
        if not callable(builder):
            raise CommandError(
                f"{path}: '{func_name}' is {_a(type(builder).__name__)}, not a function"
            )
        try:
            fn = builder()
        except (Exception, SystemExit) as err:
            raise CommandError(f"{func_name}() in {path} raised {_describe(err)}") from None
    if not isinstance(fn, Function) and not is_keras_model(fn):
        raise CommandError(
            f"{func_name}() in {path} returned {_a(type(fn).__name__)}, "
            "expected a compiled K.function (K.function(inputs, outputs)) or a Keras model"
        )
    return fn


def read_key(path: Path) -> bytes:
    """The signing key in `path` (without a final newline); like ssh, refuse a key file
    that others may read."""
    try:
        mode = path.stat().st_mode
        key = path.read_bytes().rstrip(b"\r\n")
    except OSError as err:
        raise CommandError(f"{path}: cannot read the signing key: {err.strerror}") from None
    if mode & 0o077:
        raise CommandError(f"{path}: the signing key is readable by others (chmod 600 it)")
    return key


def parse_input_shapes(specs: list[str]) -> dict[str, tuple[int | None, ...]] | None:
    """`--input-shape NAME=DIMS` options as `aotk.export`'s input_shapes (None: none)."""
    shapes: dict[str, tuple[int | None, ...]] = {}
    for spec in specs:
        name, sep, dims = spec.partition("=")
        sizes = [d.strip() for d in dims.split(",")]
        if not sep or not name or not all(d == "?" or d.isdigit() for d in sizes):
            raise CommandError(
                f"--input-shape expects NAME=DIMS, DIMS sizes or ? separated by commas "
                f"(e.g. dense_1_target=?,3), got '{spec}'"
            )
        if name in shapes:
            raise CommandError(f"--input-shape gives '{name}' twice")
        shapes[name] = tuple(None if d == "?" else int(d) for d in sizes)
    return shapes or None


def export(
    fn: Any,
    args: argparse.Namespace,
    name: str,
    key: bytes | None = None,
    input_shapes: dict[str, tuple[int | None, ...]] | None = None,
) -> Any:
    """Call aotk.export with a progress display; any failure becomes a CommandError."""
    import aotk

    progress = Progress(sys.stderr)
    try:
        exported = aotk.export(
            fn,
            args.out,
            name,
            weights=args.weights,
            target_cpu=args.target_cpu,
            target_features=args.target_features,
            progress=progress.step,
            step=args.step,
            cflags=args.cflag,
            signing_key=key,
            input_shapes=input_shapes,
        )
    except Exception as err:
        progress.close()
        message = _describe(err, expected=_EXPECTED)
        if not message.startswith("aotk.export"):
            message = f"export failed: {message}"
        raise CommandError(message) from None
    progress.close()
    return exported


# the errors aotk.export raises on purpose; their messages stand on their own
_EXPECTED = (ValueError, TypeError, RuntimeError, OSError)
_MAX_MESSAGE = 400


class Progress:
    """Export steps with elapsed seconds: one rewritten line on a terminal, else a log."""

    def __init__(self, stream: TextIO, clock: Callable[[], float] = time.perf_counter):
        self.stream, self.clock = stream, clock
        self.start = clock()
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.open_line = False

    def step(self, message: str) -> None:
        line = f"[{self.clock() - self.start:5.1f} s] {message}"
        if self.tty:
            self.stream.write(f"\r\033[K{line}")
            self.open_line = True
        else:
            self.stream.write(f"{line}\n")
        self.stream.flush()

    def close(self) -> None:
        """End a rewritten line, so that what follows starts on its own."""
        if self.open_line:
            self.stream.write("\n")
            self.stream.flush()
            self.open_line = False


def _import(path: Path) -> ModuleType:
    name = "_aotk_export_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CommandError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as err:
        sys.modules.pop(name, None)
        raise CommandError(f"importing {path} failed: {_describe(err)}") from None
    return module


@contextmanager
def _on_sys_path(directory: Path) -> Iterator[None]:
    sys.path.insert(0, str(directory))
    try:
        yield
    finally:
        sys.path.remove(str(directory))


def _describe(err: BaseException, expected: tuple[type[BaseException], ...] = ()) -> str:
    """An exception as one line: its message alone if expected, else its type too."""
    message = " ".join(str(err).split())
    if len(message) > _MAX_MESSAGE:  # a compiler's whole output, say
        message = message[: _MAX_MESSAGE - 3] + "..."
    if isinstance(err, SyntaxError) and err.lineno is not None:
        message = f"{err.msg} (line {err.lineno})"
    if isinstance(err, expected) and message:
        return message
    return f"{type(err).__name__}: {message}" if message else type(err).__name__


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1].lower() in "aeiou" else f"a {noun}"
