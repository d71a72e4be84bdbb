"""What `aotk.load` checks of a library file before the dynamic loader maps it.

The loader trusts the file: one cut short maps pages past its end, and the first touch of
them kills the process with SIGBUS. So the file must be a 64-bit little-endian ELF shared
object for this machine whose program and section headers, and every segment they map,
lie within the file, and it must carry the model's aotk entry point. The library is still
native code: only load libraries from a trusted source.
"""

from __future__ import annotations

import platform
import struct
from pathlib import Path

_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183}
_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")  # Elf64_Ehdr
_PROGRAM = struct.Struct("<IIQQQQQQ")  # Elf64_Phdr
ET_DYN = 3


def check_library(path: Path, model: str, where: str) -> None:
    """Raise a ValueError saying what is wrong if `path` is not a whole, loadable aotk
    model library named `model` for this machine."""
    data = path.read_bytes()
    problem = _elf_problem(data) or _marker_problem(data, model)
    if problem is not None:
        raise ValueError(f"{where}: not a loadable aotk model library: {problem}")


def _elf_problem(data: bytes) -> str | None:
    if len(data) < _HEADER.size or data[:4] != b"\x7fELF":
        return "not an ELF file"
    ident, e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, _ = (
        _HEADER.unpack_from(data)
    )
    if ident[4] != 2 or ident[5] != 1:
        return "not a 64-bit little-endian ELF file"
    if e_type != ET_DYN:
        return f"ELF type {e_type}, not a shared library"
    expected = _MACHINES.get(platform.machine().lower())
    if expected is not None and machine != expected:
        return f"built for ELF machine {machine}, this is {platform.machine()}"
    if phentsize != _PROGRAM.size or phoff + phnum * phentsize > len(data):
        return f"program headers past the end of the file ({len(data)} bytes): truncated?"
    if shoff and shoff + shnum * shentsize > len(data):
        return f"section headers past the end of the file ({len(data)} bytes): truncated?"
    for i in range(phnum):
        _, _, offset, _, _, filesz, _, _ = _PROGRAM.unpack_from(data, phoff + i * phentsize)
        if offset + filesz > len(data):
            return f"segment {i} ends past the end of the file ({len(data)} bytes): truncated?"
    return None


def _marker_problem(data: bytes, model: str) -> str | None:
    if f"{model}_info_json".encode() not in data:
        return f"it has no {model}_info_json entry point"
    return None
