"""aotk-opt's targets beyond xDSL's `-t mlir`: LLVM IR as aotk hands it to LLVM (`llvm`),
after LLVM's O3 pipeline (`llvm-opt`), and assembly (`asm`), for the host CPU unless
`{cpu=... features=...}` name another. They take the llvm dialect only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Any

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target


@dataclass(frozen=True)
class _HostTarget(Target):
    """Base of targets that compile the llvm dialect for a CPU (default: this host)."""

    cpu: str = ""
    features: str = ""

    def compile(self, module: ModuleOp) -> tuple[Any, Any]:
        """The target machine and the O3-optimized llvmlite module of `module`."""
        from aotk.codegen import llvm_ir

        _check_llvm_dialect(module, self.name)
        tm = self.machine()
        return tm, llvm_ir.optimize(llvm_ir.to_llvm_text(module, tm), tm)

    def machine(self) -> Any:
        from aotk.codegen import llvm_ir

        # A named cpu gets no host features either, so `-t asm{cpu=x86-64}` is plain SSE2.
        features = self.features or (None if not self.cpu else "")
        return llvm_ir.target_machine(self.cpu or None, features)


def _check_llvm_dialect(module: ModuleOp, target: str) -> None:
    stray = next((op for op in module.walk() if not _is_llvm(op)), None)
    if stray is not None:
        raise DiagnosticException(
            f"-t {target}: '{stray.name}' is not in the llvm dialect; lower it first "
            "(e.g. --aotk-stage=llvm)"
        )


def _is_llvm(op: Operation) -> bool:
    return op.name.startswith("llvm.") or isinstance(op, ModuleOp)


@dataclass(frozen=True)
class LLVMTarget(_HostTarget):
    """LLVM IR as aotk hands it to LLVM (xDSL's translation, plus function attributes)."""

    name = "llvm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from aotk.codegen import llvm_ir

        _check_llvm_dialect(module, self.name)
        print(llvm_ir.to_llvm_text(module, self.machine()), file=output, end="")


@dataclass(frozen=True)
class LLVMOptTarget(_HostTarget):
    """LLVM IR after LLVM's O3 module pipeline."""

    name = "llvm-opt"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        _, mod = self.compile(module)
        print(mod, file=output)


@dataclass(frozen=True)
class AsmTarget(_HostTarget):
    """Assembly after LLVM's O3 module pipeline and code generation."""

    name = "asm"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        from aotk.codegen import llvm_ir

        tm, mod = self.compile(module)
        print(llvm_ir.assembly(mod, tm), file=output)
