"""`aotk.export` and `aotk.load`: a compiled K.function as a C library, no Python needed.

Writes lib<name>.so, lib<name>.a, <name>.h (with aotk_rt.h next to it), and with
`weights="external"` a <name>.weights file; `aotk.load` opens the result again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

import aotk
from aotk import micro_kernels, signing
from aotk.aot import build, cgen, dims, fixed_dims, glue, keras_model, layout
from aotk.aot.loader import load

if TYPE_CHECKING:
    from aotk.weight_packs import Pack
from aotk.dialect.base import shape_of
from aotk.kernels import heuristics

MAX_RANK = 8
MAX_DYNAMIC_DIMS = 64
DEFAULT_MAX_DIM = 2**31 - 1


@dataclass(frozen=True)
class Exported:
    """The files one export wrote."""

    library: Path
    static_library: Path
    header: Path
    weights: Path | None


def export(
    fn: Any,
    out_dir: str | Path,
    name: str = "model",
    *,
    weights: str = "embedded",
    target_cpu: str | None = None,
    target_features: str | None = None,
    max_dim: int = DEFAULT_MAX_DIM,
    progress: Callable[[str], None] | None = None,
    step: str = "predict",
    cflags: Sequence[str] = (),
    signing_key: bytes | str | None = None,
    input_shapes: Mapping[str, Sequence[int | None]] | None = None,
) -> Exported:
    """Export the compiled function `fn` as model `name` into `out_dir`.

    `fn` may also be a Keras model running on aotk: `step` picks its predict function or
    its training step (the function behind `train_on_batch`). `cflags` are added to the C
    compiler's flags for the runtime and to the shared library's link: `-g`, or
    `-fsanitize=address,undefined` to check a program's use of the library. With
    `signing_key`, the library and weights get `.sig` files for `aotk.load` to check
    (see `aotk.signing`). `input_shapes` fixes dynamic input dims by input name, e.g.
    `{"dense_1_target": (None, 3)}` (None: left dynamic): the library accepts only
    that size (see `aot.fixed_dims`)."""
    where = "aotk.export"
    shapes = None
    if keras_model.is_keras_model(fn):
        model, fn = fn, keras_model.step_function(fn, step, where)
        shapes = keras_model.checked_shapes(model, fn)
    _check_arguments(fn, name, weights, max_dim, where)
    if input_shapes is not None:
        shapes = fixed_dims.fixed(fn, shapes or fn._inputs.shapes, input_shapes, where)
    cflags = _checked_cflags(cflags, where)
    key = None if signing_key is None else signing.check_key(signing_key, where)
    say = progress or (lambda _: None)
    cpu, features, needed = build.resolve_target(target_cpu, target_features, where)
    target = micro_kernels.Target(cpu, features, heuristics.isa_of(needed))
    prefix = f"aotk_{name}_"
    # tiled for the target's vector registers, which may be half as many and as wide as
    # the host's (an AVX2 target's code tiled for AVX-512 spilled: 3-4x slower)
    with heuristics.tiled_for(target.isa):
        say("analysing the signature")
        spec, arrays = _spec(fn, shapes, name, weights, cpu, needed, max_dim, where)
        say(f"lowering and generating code for {cpu}")
        code, packs = _native_code(fn, target, prefix)
        spec = _with_packs(spec, packs, prefix)
        packers = {p.packer.removeprefix(prefix) for p in spec.packs}
        kernels = micro_kernels.export_objects(code.llvm_ir, target, prefix, packers)
    blob = layout.blob(spec.slots, arrays, spec.fingerprint)
    out = Path(out_dir)
    outputs = [f"lib{name}.so", f"lib{name}.a", f"{name}.h", "aotk_rt.h"]
    with build.staging(out) as stage:
        objects = [f"kernels{i}.o" for i in range(len(code.objects))]
        for file, obj in zip(objects, code.objects, strict=True):
            (stage / file).write_bytes(obj)
        for file, obj in kernels.items():
            (stage / file).write_bytes(obj)
            objects.append(file)
        more_sources = []
        if weights == "embedded":
            more_sources.append(build.weights_source(stage, f"aotk_{name}_weights", blob))
            spec = _with_weights_size(spec, len(blob))
        else:
            (stage / f"{name}.weights").write_bytes(blob)
            outputs.append(f"{name}.weights")
        (stage / f"{name}.h").write_text(cgen.header(spec, aotk.__version__))
        (stage / f"{name}_model.c").write_text(glue.glue(spec))
        say("compiling the runtime and linking")
        build.compile_and_link(stage, name, objects, f"{name}_model.c", cflags, more_sources)
        if key is not None:
            signed = [f"lib{name}.so"] + ([f"{name}.weights"] if weights == "external" else [])
            outputs += [signing.sign_file(stage / f, key).name for f in signed]
        build.install(stage, out, outputs)
    say(f"wrote {', '.join(outputs)} to {out}")
    return Exported(
        out / f"lib{name}.so",
        out / f"lib{name}.a",
        out / f"{name}.h",
        out / f"{name}.weights" if weights == "external" else None,
    )


def _native_code(fn: Any, target: micro_kernels.Target, prefix: str) -> tuple[Any, list[Pack]]:
    """The kernels for the target, and the packed weights they read: re-optimized from
    the host's LLVM IR text (the JIT's) when the target's registers are the host's, else
    lowered again from the traced module, its weights packed for the target's tiles (a
    weight too narrow to pack for the host's may be wide enough for the target's)."""
    from aotk import weight_packs
    from aotk.codegen import jit
    from aotk.host_code import lower_to_native

    # (a Keras model's step, traced again for the export, is lowered here but not
    # compiled: its LLVM IR text, cached, spares the next export the lowering)
    if target.isa == heuristics.host_isa():
        source = fn.host_source()
        if source.source_ir:
            code = jit.generate_from_text(
                source.source_ir, source.signatures, target.cpu, target.features, prefix
            )
            return code, fn._packs
    n_inputs = len(fn._inputs.names)
    module, packs = weight_packs.plan(fn.module, n_inputs, fn.captures, fn._updated)
    return lower_to_native(module, target.cpu, target.features, prefix), packs


def _check_arguments(fn: Any, name: str, weights: str, max_dim: int, where: str) -> None:
    from aotk.function import Function

    if not isinstance(fn, Function):
        raise TypeError(
            f"{where}: fn must be a compiled K.function or a Keras model, got {type(fn).__name__}"
        )
    if any(fn._feeds):
        raise TypeError(f"{where}: functions with sparse inputs cannot be exported")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
        raise ValueError(f"{where}: name must be a C identifier, got {name!r}")
    if weights not in ("embedded", "external"):
        raise ValueError(f"{where}: weights must be 'embedded' or 'external', got {weights!r}")
    if isinstance(max_dim, bool) or not isinstance(max_dim, int) or max_dim < 1:
        raise ValueError(f"{where}: max_dim must be a positive int, got {max_dim!r}")


def _checked_cflags(cflags: Sequence[str], where: str) -> list[str]:
    if isinstance(cflags, str) or not all(isinstance(f, str) for f in cflags):
        raise TypeError(f"{where}: cflags must be a list of strings, got {cflags!r}")
    bad = [f for f in cflags if not f.startswith("-")]
    if bad:
        raise ValueError(f"{where}: cflags must be compiler options (starting with '-'), got {bad}")
    return list(cflags)


def _spec(
    fn: Any,
    shapes: list[keras_model.Shape] | None,
    name: str,
    weights: str,
    cpu: str,
    needed: list[str],
    max_dim: int,
    where: str,
) -> tuple[cgen.ModelSpec, list[Any]]:
    """The model's C interface; `shapes`: the inputs' shapes it accepts, when narrower
    than the function's (`keras_model.checked_shapes`)."""
    fn_type = next(iter(fn.module.ops)).function_type
    kernel_shapes = [tuple(s) for s in fn._inputs.shapes]
    in_shapes = kernel_shapes if shapes is None else shapes
    out_types = fn_type.outputs.data[: fn._n_outputs]
    idents = cgen.c_identifiers(fn._inputs.names, {f"out{i}" for i in range(len(out_types))})
    inputs = [
        cgen.Arg(i, d, tuple(s))
        for i, d, s in zip(idents, fn._inputs.dtypes, in_shapes, strict=True)
    ]
    outputs = [
        cgen.Arg(f"out{i}", d, tuple(shape_of(t)))
        for i, (d, t) in enumerate(zip(fn._out_dtypes[: fn._n_outputs], out_types, strict=True))
    ]
    for arg in inputs + outputs:
        if len(arg.shape) > MAX_RANK:
            raise ValueError(f"{where}: '{arg.name}' has rank {len(arg.shape)}, over {MAX_RANK}")
    arrays = [c.storage for c in fn.captures]
    slots = layout.plan(_unique([_capture_name(c, i) for i, c in enumerate(fn.captures)]), arrays)
    capture_shapes = [a.shape for a in arrays]
    dyn = dims.analyze(
        fn._checker,
        kernel_shapes + capture_shapes,
        max_dim,
        where,
        in_shapes + capture_shapes,
        fn._inputs.names,
    )
    if len(dyn) > MAX_DYNAMIC_DIMS:
        raise ValueError(f"{where}: {len(dyn)} dynamic dims, at most {MAX_DYNAMIC_DIMS}")
    updates = [next(i for i, c in enumerate(fn.captures) if c is v) for v in fn._updated]
    spec = cgen.ModelSpec(
        name=name,
        inputs=inputs,
        outputs=outputs,
        slots=slots,
        updates=updates,
        dims=dyn,
        serialize=bool(fn._updated) or fn.stateful_captures,
        fingerprint=layout.fingerprint(slots, _graph_text(fn)),
        weights_size=0,
        cpu=cpu,
        features=sorted(needed, key=lambda f: (f not in cgen.CHECKABLE_FEATURES, f)),
        loader_info=_loader_info(fn, in_shapes, name, slots),
    )
    return spec, arrays


def _with_packs(spec: cgen.ModelSpec, packs: list[Pack], prefix: str) -> cgen.ModelSpec:
    """The packed copies the kernels read (`weight_packs`), laid out one after another
    at aligned offsets in the model's packed area."""
    slots, offset = [], 0
    for p in packs:
        slots.append(cgen.PackSlot(p.capture, p.n, p.kdim, offset, prefix + p.packer()))
        nbytes = p.elems() * np.dtype(p.dtype).itemsize
        offset += -(-nbytes // layout.ALIGN) * layout.ALIGN
    return replace(spec, packs=slots, packed_size=offset)


def _graph_text(fn: Any) -> str:
    """The model's graph without value names: what its weights file is bound to."""
    from aotk.host_code import structure

    return structure(fn.module)


def _loader_info(
    fn: Any, in_shapes: list[keras_model.Shape], name: str, slots: list[layout.ArraySlot]
) -> dict[str, Any]:
    return {
        "captures": [
            {"name": s.name, "dtype": s.dtype.name, "shape": list(s.shape)} for s in slots
        ],
        "name": name,
        "aotk_version": aotk.__version__,
        "where": fn.where,
        "inputs": [
            {"name": n, "dtype": d.name, "shape": list(s)}
            for n, s, d in zip(fn._inputs.names, in_shapes, fn._inputs.dtypes, strict=True)
        ],
        "output_dtypes": [d.name for d in fn._out_dtypes[: fn._n_outputs]],
        "single": fn._single,
        "implicit_phase": fn._implicit_phase,
    }


def _with_weights_size(spec: cgen.ModelSpec, size: int) -> cgen.ModelSpec:
    return replace(spec, weights_size=size)


def _capture_name(capture: Any, index: int) -> str:
    return str(getattr(capture, "name", None) or f"capture_{index}")


def _unique(names: list[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        candidate, k = n, 1
        while candidate in out:
            candidate, k = f"{n}_{k}", k + 1
        out.append(candidate)
    return out


__all__ = ["Exported", "export", "load"]
