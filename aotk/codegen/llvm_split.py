"""LLVM's optimization and code generation on several cores: one module split by function.

LLVM takes half of a large model's cold compile, on one core. Its functions are
independent once each part declares what the others define, and llvmlite releases the
GIL while LLVM works, so the parts are optimized and emitted in threads, each with its
own LLVM context and target machine (LLVM shares neither across threads). The objects
are linked together by MCJIT. The only cost: LLVM cannot inline across parts, which
only matters for the direct call a parallel loop makes when it is too short to hand
to the thread pool.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

import llvmlite.binding as llvm_binding

from aotk.codegen import llvm_ir, native_runtime

# Below this much IR text one part compiles faster than starting threads saves.
MIN_CHARS_PER_PART = 40_000
MAX_PARTS = 4
_DEFINE = re.compile(r'define [^@]*@"?([\w.$]+)"?\(')


@dataclass(frozen=True)
class Part:
    """Object code and optimized IR of one part."""

    obj: bytes
    ir: str


def parts_for(text: str) -> int:
    """How many parts to split `text` into on this host (1: do not split)."""
    parts = min(MAX_PARTS, len(text) // MIN_CHARS_PER_PART)
    # a thread per CPU the quota allows: more only queue behind the quota
    return max(1, min(native_runtime.cpus(), parts)) if parts > 1 else 1


def split(text: str, parts: int) -> list[str]:
    """`text` as `parts` modules of whole functions, balanced by size; [text] when it
    defines globals (each would be defined twice) or has too few functions."""
    header, functions = _sections(text)
    if parts < 2 or len(functions) < 2 or any(line.startswith("@") for line in header):
        return [text]
    groups: list[list[str]] = [[] for _ in range(parts)]
    sizes = [0] * parts
    for name in sorted(functions, key=lambda n: -len(functions[n])):
        smallest = sizes.index(min(sizes))
        groups[smallest].append(name)
        sizes[smallest] += len(functions[name])
    head = "".join(header)
    return [
        head
        + "".join(_declaration(functions[n]) for n in functions if n not in group)
        + "".join(functions[n] for n in group)
        for group in groups
        if group
    ]


def _sections(text: str) -> tuple[list[str], dict[str, str]]:
    """The lines outside function bodies, and each defined function's text by name."""
    header: list[str] = []
    functions: dict[str, str] = {}
    current: list[str] | None = None
    for line in text.splitlines(keepends=True):
        if current is None and line.startswith("define "):
            current = [line]
        elif current is not None:
            current.append(line)
            if line.startswith("}"):
                match = _DEFINE.match(current[0])
                assert match, f"unparsed function header: {current[0][:80]}"
                functions[match.group(1)] = "".join(current)
                current = None
        else:
            header.append(line)
    return header, functions


def _declaration(function: str) -> str:
    """A `declare` line for a defined function: its `define` line without the body."""
    first = function.split("\n", 1)[0].rstrip().removesuffix("{").rstrip()
    return "declare" + first.removeprefix("define") + "\n"


def compile_parts(
    texts: list[str], cpu: str | None, features: str | None, slp: bool = False
) -> list[Part]:
    """Optimize (`llvm_ir.optimize`, with `slp`) and emit each text on a thread of its own."""
    results: list[Part | BaseException | None] = [None] * len(texts)

    def work(i: int) -> None:
        try:
            context = llvm_binding.create_context()
            tm = llvm_ir.target_machine(cpu, features, jit=False)
            mod = llvm_ir.optimize(texts[i], tm, context=context, slp=slp)
            results[i] = Part(llvm_ir.emit_object_unlocked(tm, mod), str(mod))
            mod.close()  # before its context goes
        except BaseException as err:  # re-raised in the calling thread
            results[i] = err

    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, len(texts))]
    for t in threads:
        t.start()
    work(0)
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return [r for r in results if isinstance(r, Part)]
