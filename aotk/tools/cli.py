"""`aotk`: the command-line front door: `aotk export`, `aotk stages`, `aotk kernels`,
`aotk cache`, `aotk version`.

Each subcommand is a `_cmd_<name>(args) -> int` registered in `_parser()`. Errors print one
line, `aotk: error: ...`, and exit with status 1 (argparse's usage errors included).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from importlib.metadata import version
from typing import NoReturn

from aotk.tools import cache_cmd, export_cmd


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 1."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"aotk: error: {message}\n")


def _cmd_stages(args: argparse.Namespace) -> int:
    """Print each stage of the lowering pipeline with its pass spec."""
    from aotk.lowering import pipeline

    width = max(len(name) for name in pipeline.STAGES)
    for name, spec in pipeline.STAGES.items():
        print(f"{name:<{width}}  {spec or '(no passes: the traced module)'}")
    return 0


def _cmd_kernels(args: argparse.Namespace) -> int:
    """List the micro-kernels, build them into the cache, or print one's IR."""
    from aotk import micro_kernels
    from aotk.kernels import heuristics, library

    if args.print is not None:
        heuristics.pin_vector_shape(None if args.tile_for == "host" else args.tile_for)
        try:
            kernel = library.lookup(args.print)
        except KeyError as err:
            raise ValueError(f"{err.args[0]}; see `aotk kernels` for the list") from None
        module = library.module([kernel.name])
        if args.stage == "llvm":
            module = micro_kernels.lowered_module([kernel.name])
        print(module)
        return 0
    names = library.names()
    if args.build:
        with micro_kernels.helped(names):  # a second process builds from the last
            for name in names:
                micro_kernels.cached(name)
    for name in names:
        kernel = library.lookup(name)
        print(f"{kernel.symbol}({', '.join('ptr' if c == 'p' else 'i64' for c in kernel.params)})")
    return 0


def _cmd_version(args: argparse.Namespace) -> int:
    """Print the versions of aotk and of the compilers it drives."""
    print(f"aotk {version('aotk')} (xdsl {version('xdsl')}, llvmlite {version('llvmlite')})")
    return 0


def _parser() -> _Parser:
    parser = _Parser(
        prog="aotk", description="Ahead-of-time compiler for Keras-style tensor programs."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    export_cmd.add_parser(commands)
    stages = commands.add_parser("stages", help="list the lowering stages and their passes")
    stages.set_defaults(run=_cmd_stages)
    kernels = commands.add_parser(
        "kernels", help="list the micro-kernels, build them (--build) or print one's IR"
    )
    kernels.add_argument("--build", action="store_true", help="compile them into the cache")
    kernels.add_argument("--print", metavar="NAME", help="print the IR of micro-kernel NAME")
    kernels.add_argument(
        "--stage", choices=("loops", "llvm"), default="loops", help="with --print: which stage"
    )
    kernels.add_argument(
        "--tile-for",
        choices=("host", "sse", "avx", "avx2", "avx512"),
        default="host",
        help="with --print: tile for this instruction set's registers (default: the host's)",
    )
    kernels.set_defaults(run=_cmd_kernels)
    cache_cmd.add_parser(commands)
    ver = commands.add_parser("version", help="print the versions of aotk, xDSL and llvmlite")
    ver.set_defaults(run=_cmd_version)
    return parser


def _one_line_warning(message: Warning | str, *_: object) -> str:
    """A warning as one line, `aotk: warning: ...`, not Python's two with a source line."""
    return f"aotk: warning: {str(message).removeprefix('aotk: ')}\n"


def main(argv: Sequence[str] | None = None) -> None:
    """Run one aotk subcommand and exit with its status."""
    warnings.formatwarning = _one_line_warning
    args = _parser().parse_args(argv)
    try:
        status = args.run(args)
    except (OSError, ValueError) as err:
        print(f"aotk: error: {err}", file=sys.stderr)
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
