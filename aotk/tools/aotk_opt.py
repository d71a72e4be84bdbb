"""`aotk-opt`: xDSL's `xdsl-opt` driver plus the aotk dialect, passes, stages and targets.

    aotk-opt in.mlir -p aotk-fuse                        # any xDSL or aotk pass pipeline
    aotk-opt in.mlir --aotk-stage=loops                  # run the named stages up to `loops`
    aotk-opt in.mlir --aotk-input-stage=graph --aotk-stage=llvm -t llvm-opt
    aotk-opt in.mlir --aotk-stage=llvm --print-between-passes   # IR after every pass

`--aotk-stage=S` prepends the passes of `aotk.lowering.pipeline.STAGES` through stage S
(from after `--aotk-input-stage`, default trace) to `-p`. Targets besides xDSL's `-t mlir`:
`-t llvm` prints LLVM IR as aotk hands it to LLVM, `-t llvm-opt` after LLVM's O3 pipeline
and `-t asm` assembly, all for the host CPU unless `{cpu=... features=...}` say otherwise;
they expect the llvm dialect. `--aotk-tile-for=sse|avx|avx2|avx512` tiles the kernels for that
instruction set's registers instead of the host's, so the IR printed is the same on any
machine. Bad input (syntax, verifier, pass failure, missing file) prints a
diagnostic, with file:line:column where the op came from the input, and exits with 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import sys
from collections.abc import Sequence
from importlib.metadata import version
from typing import IO, NoReturn

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr, UnknownLoc
from xdsl.ir import Operation, Region, SSAValue
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.traits import IsolatedFromAbove
from xdsl.utils.exceptions import (
    ArgSpecParseError,
    DiagnosticException,
    ParseError,
    VerifyException,
)
from xdsl.utils.lexer import Input, Span
from xdsl.xdsl_opt_main import xDSLOptMain

from aotk import gc_pause, timing
from aotk.dialect import metadata
from aotk.dialect.base import source_location
from aotk.kernels import heuristics
from aotk.lowering import pipeline
from aotk.tools import llvm_targets
from aotk.tools.string_literals import first_malformed


class _LocatingParser(Parser):
    """Parser that remembers where each op starts, for verifier diagnostics."""

    def __init__(
        self, ctx: Context, text: bytes, name: str, line_offset: int, spans: dict[Operation, Span]
    ):
        super().__init__(ctx, text, name)
        self.line_offset = line_offset
        self.spans = spans

    def parse_operation(self) -> Operation:
        span = dataclasses.replace(self._current_token.span, line_offset=self.line_offset)
        try:
            op = super().parse_operation()
        except (VerifyException, ValueError, NotImplementedError) as err:
            # an attribute or op constructor refusing what was parsed (`arith.constant 4 :
            # i1`, `array<i67: ...>`) raises without a location: point at the op, as a
            # syntax error would
            raise ParseError(span, str(err)) from err
        except (ParseError, DiagnosticException):
            raise
        except Exception as err:
            # xDSL's parser itself failing on odd input (a block label defined twice
            # raises KeyError): still a diagnostic where it stopped, not an internal error
            here = dataclasses.replace(self._current_token.span, line_offset=self.line_offset)
            raise ParseError(here, f"cannot parse this: {type(err).__name__}: {err}") from err
        self.spans[op] = span
        if isinstance(op.location, UnknownLoc):
            # As in MLIR: ops carry their file location, and clones made by passes keep it.
            where = span.get_location()
            op.location = FileLineColLoc(
                StringAttr(where.file), IntAttr(where.line), IntAttr(where.col)
            )
        return op


class AotkOptMain(xDSLOptMain):
    """xDSLOptMain with aotk's dialect, passes, stages, targets and diagnostics."""

    version_format = f"aotk-opt from aotk {version('aotk')}, xDSL {{xdsl_version}}"

    def __init__(self, args: Sequence[str] | None = None):
        self.spans: dict[Operation, Span] = {}
        self.running: ModulePass | None = None  # the pass being applied, None while verifying
        self.last: ModulePass | None = None
        super().__init__(description="aotk's modular optimizer driver", args=args)

    def register_all_dialects(self) -> None:
        from aotk.dialect import AOTK

        super().register_all_dialects()
        self.ctx.load_dialect(AOTK)

    def register_all_passes(self) -> None:
        from aotk.lowering.pipeline import ALL_PASSES

        super().register_all_passes()
        for name, factory in ALL_PASSES.items():
            self.register_pass(name, factory)

    def register_all_targets(self) -> None:
        super().register_all_targets()
        self.available_targets["llvm"] = lambda: llvm_targets.LLVMTarget
        self.available_targets["llvm-opt"] = lambda: llvm_targets.LLVMOptTarget
        self.available_targets["asm"] = lambda: llvm_targets.AsmTarget

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        stages = pipeline.stage_names()
        arg_parser.add_argument(
            "--aotk-stage",
            choices=stages,
            help="run aotk's pipeline through this stage before the -p passes",
        )
        arg_parser.add_argument(
            "--aotk-input-stage",
            choices=stages,
            default=stages[0],
            help="the stage the input is at (default: %(default)s)",
        )
        arg_parser.add_argument(
            "--aotk-tile-for",
            choices=["host", *heuristics.VECTOR_SHAPES],
            default="host",
            help="tile kernels for this instruction set's vector registers (default: the "
            "host's), so the printed IR is the same on every machine",
        )
        arg_parser.add_argument(
            "--traceback", action="store_true", help="show tracebacks of internal errors"
        )
        arg_parser.add_argument(
            "--timing",
            action="store_true",
            help="print each pass's time and the op count it leaves to stderr (as AOTK_TIMING=1)",
        )

    def setup_pipeline(self) -> None:
        tile_for = self.args.aotk_tile_for
        heuristics.pin_vector_shape(None if tile_for == "host" else tile_for)
        stop, start = self.args.aotk_stage, self.args.aotk_input_stage
        if stop is not None:
            names = pipeline.stage_names()
            if names.index(start) > names.index(stop):
                _fail(
                    f"aotk-opt: error: --aotk-stage={stop} comes before --aotk-input-stage={start}"
                )
            specs = [pipeline.passes_for(stop, start), self.args.passes]
            self.args.passes = ",".join(s for s in specs if s)
        super().setup_pipeline()
        verify_and_print = self.pipeline.callback

        def callback(
            previous: ModulePass | None, module: ModuleOp, following: ModulePass | None
        ) -> None:
            self.running, self.last = None, previous
            if verify_and_print is not None:
                verify_and_print(previous, module, following)
            self.running = following

        timed = self.args.timing or timing.enabled()
        self.pipeline = PassPipeline(
            self.pipeline.passes, timing.pass_callback(callback) if timed else callback
        )

    def parse_chunk(
        self, chunk: IO[bytes], file_extension: str, start_offset: int = 0
    ) -> ModuleOp | None:
        if file_extension != "mlir":
            return super().parse_chunk(chunk, file_extension, start_offset)
        text = chunk.read()
        _check_string_literals(text, self.get_input_name(), start_offset)
        parser = _LocatingParser(self.ctx, text, self.get_input_name(), start_offset, self.spans)
        module = parser.parse_module(not self.args.no_implicit_module)
        misuse = _use_before_definition(module)
        if misuse is not None:
            op, index = misuse
            message = f"error: operand {index} of '{op.name}' is used before it is defined"
            span = self.spans.get(op)
            raise DiagnosticException(
                span.print_with_context(message) if span is not None else message
            )
        self._check_metadata(module)
        return module

    def _check_metadata(self, module: ModuleOp) -> None:
        """aotk's function attributes must fit their function: passes index by them."""
        for fn in module.walk():
            if not isinstance(fn, func.FuncOp):
                continue
            try:
                metadata.check(fn)
            except ValueError as err:
                span = self.spans.get(fn)
                message = f"error: {err}"
                raise DiagnosticException(
                    span.print_with_context(message) if span is not None else message
                ) from err

    def apply_passes(self, prog: ModuleOp) -> None:
        try:
            super().apply_passes(prog)
        except DiagnosticException as err:
            if self.running is not None:
                name = self.running.name
                detail = str(err).removeprefix(f"{name}: ")
                at = _LOCATION.match(detail)  # a pass naming the op it failed on
                where = at.group(1) if at else self.get_input_name()
                detail = detail[at.end() :] if at else detail
                raise DiagnosticException(f"{where}: error: in pass '{name}': {detail}") from err
            raise DiagnosticException(self._verify_message(prog, err)) from err

    def output_resulting_program(self, prog: ModuleOp) -> str:
        try:
            return super().output_resulting_program(prog)
        except DiagnosticException as err:
            raise DiagnosticException(f"{self.get_input_name()}: error: {err}") from err

    def _verify_message(self, prog: ModuleOp, err: DiagnosticException) -> str:
        """Point at the first op that fails to verify, as a parse error would."""
        after = f" (after pass '{self.last.name}')" if self.last is not None else ""
        op = _first_invalid(prog)
        if op is None:
            return f"{self.get_input_name()}: error{after}: {err}"
        detail = str(err).removeprefix(f"{op.name}: ")
        message = f"error: '{op.name}' op does not verify{after}: {detail}"
        op = _symbol_named_in(op, detail) or op  # a module's error about one of its symbols
        span = self.spans.get(op)
        if span is not None:
            return span.print_with_context(message)
        if (where := source_location(op)) is not None:
            return f"{where}: {message}"
        notes = "\n".join(getattr(err, "__notes__", []))
        return f"{self.get_input_name()}: {message}\n{notes}"


_LOCATION = re.compile(r"^(\S+:\d+:\d+): ")
_SYMBOL = re.compile(r'symbol "([^"]+)"')


def _symbol_named_in(op: Operation, detail: str) -> Operation | None:
    """The last op directly in `op` defining the symbol `detail` names (for "Redefinition
    of symbol", the second definition)."""
    named = _SYMBOL.search(detail)
    if named is None or not op.regions:
        return None
    found = [
        o
        for region in op.regions
        for block in region.blocks
        for o in block.ops
        if (sym := o.attributes.get("sym_name") or o.properties.get("sym_name")) is not None
        and isinstance(sym, StringAttr)
        and sym.data == named.group(1)
    ]
    return found[-1] if found else None


def _check_string_literals(text: bytes, name: str, line_offset: int) -> None:
    """Refuse a malformed string literal before xDSL's lexer spends minutes on it."""
    content = text.decode(errors="replace")
    at = first_malformed(content)
    if at is not None:
        span = Span(at, at + 1, Input(content, name), line_offset)
        raise DiagnosticException(
            span.print_with_context(
                'error: unterminated string literal, or an escape other than \\" \\n \\t '
                "\\\\ or two hex digits"
            )
        )


def _use_before_definition(module: ModuleOp) -> tuple[Operation, int] | None:
    """The first op (and operand index) reading a value that its block defines only at or
    after it, as `%c = "aotk.sub"(%c, %z)` does; xDSL's verifier does not check this and
    passes then fail on the cycle. Values of another block of the same region count as
    defined (branches are not followed)."""
    return _check_region_values(module.body, set())


def _check_region_values(region: Region, visible: set[SSAValue]) -> tuple[Operation, int] | None:
    everywhere = {
        v for b in region.blocks for v in [*b.args, *(r for o in b.ops for r in o.results)]
    }
    for block in region.blocks:
        mine = {r for o in block.ops for r in o.results}
        defined = visible | (everywhere - mine) | set(block.args)
        for op in block.ops:
            for index, value in enumerate(op.operands):
                if value not in defined:
                    return op, index
            inner = set() if op.has_trait(IsolatedFromAbove) else defined
            for nested in op.regions:
                found = _check_region_values(nested, inner)
                if found is not None:
                    return found
            defined = defined | set(op.results)
    return None


def _first_invalid(prog: ModuleOp) -> Operation | None:
    """The op that `prog.verify()` complains about first (nested ops verify first)."""
    for op in prog.walk(region_first=True):
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException:
            return op
    return None


def _fail(message: str) -> NoReturn:
    print(message.rstrip("\n"), file=sys.stderr)
    sys.exit(1)


def main(argv: Sequence[str] | None = None) -> None:
    """Run aotk-opt; diagnostics go to stderr with exit status 1."""
    args = sys.argv[1:] if argv is None else list(argv)
    tool: AotkOptMain | None = None
    try:
        tool = AotkOptMain(args)
        with gc_pause.paused():  # the passes' IR is cycles: see aotk.gc_pause
            tool.run()
    except (ParseError, DiagnosticException) as err:
        _fail(str(err))
    except ArgSpecParseError as err:
        _fail(f"aotk-opt: error: {err}")
    except BrokenPipeError:
        # The reader (e.g. `| head`) left; as Python's docs advise, silence the final flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)
    except OSError as err:
        if err.filename is None:
            _fail(f"aotk-opt: error: {err}")
        _fail(f"aotk-opt: error: cannot open '{err.filename}': {err.strerror}")
    except ValueError as err:  # how xDSL rejects options and file extensions, and some passes
        _fail(f"aotk-opt: error{_in_pass(tool)}: {err}")
    except Exception as err:
        if "--traceback" in args:
            raise
        kind = type(err).__name__
        _fail(f"aotk-opt: internal error{_in_pass(tool)}: {kind}: {err} (rerun with --traceback)")


def _in_pass(tool: AotkOptMain | None) -> str:
    running = tool.running if tool is not None else None
    return f" in pass '{running.name}'" if running is not None else ""


if __name__ == "__main__":
    main()
