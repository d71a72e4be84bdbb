"""The C side of an exported model: its public header and the glue the runtime calls.

The glue holds one static `aotk_model_info` (shapes, dtypes, variables, dim rules, the
kernel entry points) and trampolines from the runtime's generic calls to the kernel's
fixed signature. Everything here is text; `build` compiles it.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

import numpy as np

from aotk.aot.dims import DynDim
from aotk.aot.layout import ArraySlot

DTYPE_ENUM = {
    "bool": "AOTK_BOOL", "int8": "AOTK_INT8", "int16": "AOTK_INT16", "int32": "AOTK_INT32",
    "int64": "AOTK_INT64", "uint8": "AOTK_UINT8", "float16": "AOTK_FLOAT16",
    "float32": "AOTK_FLOAT32", "float64": "AOTK_FLOAT64",
}  # fmt: skip
C_TYPE = {
    "bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t",
    "int64": "int64_t", "uint8": "uint8_t", "float16": "uint16_t", "float32": "float",
    "float64": "double",
}  # fmt: skip
# x86 features both GCC and Clang can test with __builtin_cpu_supports.
CHECKABLE_FEATURES = (
    "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "avx", "avx2", "fma", "bmi", "bmi2",
    "avx512f", "avx512vl", "avx512bw", "avx512dq", "avx512cd", "avx512vbmi", "avx512ifma",
    "avx512vnni", "avx512vbmi2", "avx512bitalg", "avx512vpopcntdq",
)  # fmt: skip
# x86 features of the x86-64-v2/v3 levels that __builtin_cpu_supports cannot name: the
# library reads their CPUID bits itself, (leaf, register index in eax/ebx/ecx/edx, bit).
CPUID_FEATURES: dict[str, tuple[int, int, int]] = {
    "cx16": (1, 2, 13),
    "movbe": (1, 2, 22),
    "xsave": (1, 2, 26),
    "f16c": (1, 2, 29),
    "sahf": (0x80000001, 2, 0),
    "lzcnt": (0x80000001, 2, 5),
}
# What every x86-64 CPU has: never checked, never refused.
X86_64_BASELINE = ("64bit", "cmov", "cx8", "fxsr", "mmx", "sse", "sse2", "x87")
_C_KEYWORDS = {"auto", "char", "const", "double", "float", "int", "long", "model", "short"}


@dataclass(frozen=True)
class Arg:
    """An input or output as C sees it."""

    name: str  # a C identifier
    dtype: np.dtype
    shape: tuple[int | None, ...]


@dataclass(frozen=True)
class PackSlot:
    """A packed copy of a weight the kernels read (`aotk.weight_packs`), in the model's
    packed area: made by the micro-kernel `packer` from capture `capture`, [K, N]."""

    capture: int
    n: int
    kdim: int
    offset: int
    packer: str  # its C symbol


@dataclass(frozen=True)
class ModelSpec:
    name: str
    inputs: list[Arg]
    outputs: list[Arg]
    slots: list[ArraySlot]
    updates: list[int]  # the capture each extra kernel output writes
    dims: list[DynDim]
    serialize: bool
    fingerprint: int
    weights_size: int  # of the embedded blob, 0 when external
    cpu: str
    features: list[str]  # what the code needs (checked ones first)
    loader_info: dict  # what `aotk.load` needs to rebuild the Python signature
    packs: list[PackSlot] = field(default_factory=list)
    packed_size: int = 0  # bytes of the packed area


def c_identifiers(names: list[str], taken: set[str]) -> list[str]:
    """Distinct C identifiers for `names`, avoiding `taken` and C keywords."""
    out: list[str] = []
    for name in names:
        ident = re.sub(r"\W", "_", name, flags=re.ASCII) or "input"
        if ident[0].isdigit() or ident in _C_KEYWORDS:
            ident = f"in_{ident}"
        base, n = ident, 1
        while ident in taken or ident in out:
            ident, n = f"{base}_{n}", n + 1
        out.append(ident)
    return out


def _shape_text(arg: Arg) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in arg.shape) + "]"


def _dims_array(label: str, shape: tuple[int | None, ...]) -> str:
    values = ", ".join("-1" if d is None else str(d) for d in shape) or "0"
    return f"static const int64_t {label}[] = {{{values}}};"


def header(spec: ModelSpec, version: str) -> str:
    n = spec.name
    lines = [
        f"/* {n}.h: model '{n}', exported by aotk {version} for CPU {spec.cpu}, with",
        *textwrap.wrap(
            ", ".join(spec.features) or "no extra CPU features",
            width=88,
            initial_indent=" * features ",
            subsequent_indent=" *   ",
        ),
        " *",
        " * Inputs (? marks a dynamic dim):",
        *(
            f" *   {i}  {a.name:<16} {a.dtype.name:<8} {_shape_text(a)}"
            for i, a in enumerate(spec.inputs)
        ),
        *_dim_notes(spec),
        " * Outputs:",
        *(
            f" *   {i}  {a.name:<16} {a.dtype.name:<8} {_shape_text(a)}"
            for i, a in enumerate(spec.outputs)
        ),
        " * Variables (aotk_model_get_variable / aotk_model_set_variable by name):",
        *(f" *   {s.name:<24} {s.dtype.name:<8} {list(s.shape)}" for s in spec.slots),
        " *",
        " * Threads: "
        + (
            "every call writes model state (variables or random-number state), so calls on "
            "one model run one at a time; concurrent callers wait."
            if spec.serialize
            else "calls on one model may run from several threads at once, each with its own "
            "workspace."
        ),
        " */",
        f"#ifndef AOTK_MODEL_{n.upper()}_H",
        f"#define AOTK_MODEL_{n.upper()}_H",
        "",
        '#include "aotk_rt.h"',
        "",
        '#ifdef __cplusplus\nextern "C" {\n#endif',
        "",
        "/* Load the model: weights built in, or from options->weights_path. */",
        f"AOTK_API aotk_status {n}_create(aotk_model **model, const aotk_options *options);",
        "",
        "/* Run it on typed buffers; each output capacity counts elements. */",
        f"AOTK_API aotk_status {n}_run({_typed_params(spec)});",
        "",
        "/* Static facts about the model as JSON (used by aotk.load). */",
        f"AOTK_API const char *{n}_info_json(void);",
        "",
        "#ifdef __cplusplus\n}\n#endif",
        "",
        f"#endif /* AOTK_MODEL_{n.upper()}_H */",
        "",
    ]
    return "\n".join(lines)


def _dim_notes(spec: ModelSpec) -> list[str]:
    notes = []
    for d in spec.dims:
        if spec.inputs[d.input].shape[d.axis] is not None:
            continue  # the kernel's dim, pinned: the input's shape says its one value
        rule = f"{d.min}..{d.max}"
        if d.tie >= 0:
            t = spec.dims[d.tie]
            rule += f", equal to {spec.inputs[t.input].name} dim {t.axis}"
        notes.append(f" *      {spec.inputs[d.input].name} dim {d.axis}: {rule}")
    return notes


def _typed_params(spec: ModelSpec) -> str:
    params = ["aotk_model *model"]
    for arg in spec.inputs:
        params.append(f"const {C_TYPE[arg.dtype.name]} *{arg.name}")
        params += [f"int64_t {arg.name}_dim{a}" for a, d in enumerate(arg.shape) if d is None]
    for i, arg in enumerate(spec.outputs):
        params += [f"{C_TYPE[arg.dtype.name]} *out{i}", f"size_t out{i}_capacity"]
    return ", ".join(params)
