"""LLVM's optimization and code generation on several cores: one module split by function.

LLVM takes half of a large model's cold compile, on one core. Its functions are
independent once each part declares what the others define, and llvmlite releases the
GIL while LLVM works, so the parts are optimized and emitted in threads, each with its
own LLVM context and target machine (LLVM shares neither across threads). The objects
are linked together by MCJIT, or into an exported library by the C linker (a prefix then
renames each function in every part, where defined and where declared). The only cost:
LLVM cannot inline across parts, which only matters for the direct call a parallel loop
makes when it is too short to hand to the thread pool.

A large model's entry points are glue: its `main` calls each kernel in turn, once per
call. They go in a part of their own, optimized by LLVM's O1 pipeline and emitted by its
fast instruction selector and register allocator: ResNet50's training-step `main`, 560 KB
of IR in one block of 2,400 calls, took 2.15 s to emit at O3 and 0.41 s so; NASNetMobile's,
1.6 MB and 9,400 calls, 1.5-2.3 s to optimize at O3 and 0.9-1.0 s at O1, to 0.1% more
instructions (O1 cleans up and merges the index arithmetic as O3 does, makes a fill
or copy loop a memset or memcpy, and vectorizes a scalar loop: the loop vectorizer is on
at both levels).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass

import llvmlite.binding as llvm_binding

from aotk.codegen import llvm_ir, native_runtime, packed_entry

# Below this much IR text one part compiles faster than starting threads saves.
MIN_CHARS_PER_PART = 40_000
MAX_PARTS = 4
# Entry points of at least this much IR text are emitted quickly (see the module's doc).
# O3's cost grows faster than their size: a dense block's 111 KB took 0.16 s (0.04 at O0),
# less than a part of their own cost, where ResNet50's 560 KB took 2.15 s.
QUICK_GLUE_CHARS = 250_000
# a `define` line and the function it names (`match` on a line, `findall` on a module)
_DEFINE = re.compile(r'^define [^@\n]*@"?([\w.$]+)"?\(', re.MULTILINE)


@dataclass(frozen=True)
class Part:
    """Object code and optimized IR of one part."""

    obj: bytes
    ir: str


@dataclass(frozen=True)
class Piece:
    """The LLVM IR text of one part, whether it is glue to emit quickly, and whether it
    is optimized for the target already (only to emit)."""

    text: str
    quick: bool = False
    optimized: bool = False


def parts_for(text: str) -> int:
    """How many parts to split `text` into on this host (1: do not split)."""
    return _parts(len(text))


def _parts(chars: int) -> int:
    parts = min(MAX_PARTS, chars // MIN_CHARS_PER_PART)
    # a thread per CPU the quota allows: more only queue behind the quota
    return max(1, min(native_runtime.cpus(), parts)) if parts > 1 else 1


Sections = tuple[list[str], dict[str, str]]  # `_sections`: the header, the functions


def split(text: str, parts: int) -> list[str]:
    """`text` as `parts` modules of whole functions, balanced by size; [text] when it
    defines globals (each would be defined twice) or has too few functions."""
    return _split(text, _sections(text), parts)


def _split(text: str, sections: Sections, parts: int) -> list[str]:
    header, functions = sections
    if parts < 2 or len(functions) < 2 or _defines_globals(header):
        return [text]
    return [_module(header, functions, g) for g in _balanced(list(functions), functions, parts)]


def _defines_globals(header: list[str]) -> bool:
    return any(line.startswith("@") for line in header)


def pieces(text: str, entries: Collection[str]) -> list[Piece]:
    """`text` split for this host as `split` does, except that its functions named in
    `entries`, and their packed wrappers, are a quick piece of their own when they come
    to QUICK_GLUE_CHARS."""
    header, functions = sections = _sections(text)
    glue = [n for n in functions if n.removesuffix(packed_entry.SUFFIX) in entries]
    glue_chars = sum(len(functions[n]) for n in glue)
    if glue_chars < QUICK_GLUE_CHARS or len(glue) == len(functions) or _defines_globals(header):
        return [Piece(t) for t in _split(text, sections, parts_for(text))]
    kernels = [n for n in functions if n not in glue]
    groups = _balanced(kernels, functions, _parts(len(text) - glue_chars))
    return [Piece(_module(header, functions, glue), quick=True)] + [
        Piece(_module(header, functions, g)) for g in groups
    ]


def _balanced(names: list[str], functions: dict[str, str], parts: int) -> list[list[str]]:
    """`names` in at most `parts` groups balanced by the size of their text."""
    groups: list[list[str]] = [[] for _ in range(parts)]
    sizes = [0] * parts
    for name in sorted(names, key=lambda n: -len(functions[n])):
        smallest = sizes.index(min(sizes))
        groups[smallest].append(name)
        sizes[smallest] += len(functions[name])
    return [g for g in groups if g]


def _module(header: list[str], functions: dict[str, str], group: list[str]) -> str:
    """A module defining the functions of `group` and declaring the others."""
    chosen = set(group)
    return (
        "".join(header)
        + "".join(_declaration(functions[n]) for n in functions if n not in chosen)
        + "".join(functions[n] for n in group)
    )


def _sections(text: str) -> Sections:
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
    texts: list[Piece],
    cpu: str | None,
    features: str | None,
    slp: bool = False,
    prefix: str = "",
    meanwhile: Callable[[], None] | None = None,
) -> list[Part]:
    """Optimize (`llvm_ir.optimize`, with `slp`) unless optimized, and emit each piece on
    a thread of its own; a quick one by LLVM's O0 code generation. A `prefix` renames the
    functions the pieces define, where defined and where declared (`llvm_ir.parsed`).
    The calling thread runs `meanwhile` once its piece is done, while the others work."""
    results: list[Part | BaseException | None] = [None] * len(texts)
    siblings = frozenset(n for p in texts for n in _DEFINE.findall(p.text)) if prefix else ()

    def work(i: int) -> None:
        try:
            context = llvm_binding.create_context()
            piece = texts[i]
            level = 0 if piece.quick else 3
            tm = llvm_ir.target_machine(cpu, features, jit=False, codegen_level=level)
            ir_level = 1 if piece.quick else 3
            if piece.optimized:
                mod = llvm_ir.parsed(piece.text, tm, prefix, context, siblings=siblings)
            else:
                mod = llvm_ir.optimize(piece.text, tm, prefix, context, slp, siblings, ir_level)
            results[i] = Part(llvm_ir.emit_object_unlocked(tm, mod), str(mod))
            mod.close()  # before its context goes
        except BaseException as err:  # re-raised in the calling thread
            results[i] = err

    threads = [threading.Thread(target=work, args=(i,)) for i in range(1, len(texts))]
    for t in threads:
        t.start()
    work(0)
    if meanwhile is not None:
        meanwhile()
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return [r for r in results if isinstance(r, Part)]
