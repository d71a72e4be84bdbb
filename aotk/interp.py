"""The NumPy oracle: run aotk IR (stages trace and graph) op by op with each OpDef.numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, SSAValue

from aotk import dtypes
from aotk.dialect.base import AotkOp, elem_of, shape_of
from aotk.dialect.fused import FusedOp, YieldOp
from aotk.dialect.registry import lookup
from aotk.dialect.scan import ScanOp


def run_module(
    module: ModuleOp, args: Sequence[np.ndarray], name: str = "main"
) -> list[np.ndarray]:
    """Run function `name` of `module` on `args`; return its results."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return run_block(op.body.block, args)
    raise ValueError(f"interp: no function @{name} in the module")


def run_block(
    block: Block, args: Sequence[np.ndarray], outer: dict[SSAValue, np.ndarray] | None = None
) -> list[np.ndarray]:
    """Run a block of aotk ops ending in a return or yield; `outer` holds values it captures."""
    if len(args) != len(block.args):
        raise ValueError(f"interp: expected {len(block.args)} arguments, got {len(args)}")
    env: dict[SSAValue, np.ndarray] = dict(outer) if outer else {}
    for arg, value in zip(block.args, args, strict=True):
        env[arg] = _as_type(np.asarray(value), arg.type)
    for op in block.ops:
        if isinstance(op, func.ReturnOp | YieldOp):
            return [env[v] for v in op.operands]
        if isinstance(op, FusedOp):
            results = _run_fused(op, [env[v] for v in op.operands])
        elif isinstance(op, ScanOp):
            results = _run_scan(op, [env[v] for v in op.operands], env)
        elif isinstance(op, AotkOp):
            out = lookup(op).numpy(*(env[v] for v in op.operands), **op.attrs())
            results = [_as_type(np.asarray(out), op.results[0].type)]
        else:
            raise ValueError(
                f"interp: cannot run {op.name}; interpret before convert-aotk-to-loops"
            )
        for r, value in zip(op.results, results, strict=True):
            env[r] = value
    raise ValueError("interp: block has no terminator")


def _run_fused(op: FusedOp, inputs: list[np.ndarray]) -> list[np.ndarray]:
    shape = np.broadcast_shapes(*(x.shape for x in inputs)) if inputs else ()
    results = run_block(op.body.block, [np.broadcast_to(x, shape) for x in inputs])
    out = []
    for r, value in zip(op.results, results, strict=True):
        full = np.broadcast_to(value, shape) if value.shape != shape else value
        out.append(
            _as_type(np.ascontiguousarray(full).reshape(_concrete(r.type, full.shape)), r.type)
        )
    return out


def _run_scan(
    op: ScanOp, values: list[np.ndarray], env: dict[SSAValue, np.ndarray]
) -> list[np.ndarray]:
    seqs, carries = values[: op.num_seq], values[op.num_seq :]
    steps = seqs[0].shape[0]
    if any(s.shape[0] != steps for s in seqs):
        raise ValueError(
            f"interp: aotk.scan sequences differ in length: {[s.shape[0] for s in seqs]}"
        )
    outputs: list[list[np.ndarray]] = []
    for t in range(steps):
        produced = run_block(op.body.block, [s[t] for s in seqs] + carries, env)
        carries = produced[: len(carries)]
        outputs.append(produced[len(carries) :])
    stacked = []
    for j, r in enumerate(list(op.results)[len(carries) :]):
        if steps:
            stacked.append(np.stack([step[j] for step in outputs]))
        else:
            step_shape = tuple(d or 0 for d in shape_of(r.type)[1:])
            stacked.append(np.zeros((0, *step_shape), dtypes.numpy_dtype(elem_of(r.type))))
    return [*carries, *stacked]


def _concrete(typ, actual: tuple[int, ...]) -> tuple[int, ...]:
    shape = shape_of(typ)
    pad = len(shape) - len(actual)
    padded = (1,) * pad + tuple(actual)
    return tuple(a if d is None else d for d, a in zip(shape, padded, strict=True))


def _as_type(value: np.ndarray, typ) -> np.ndarray:
    dtype = dtypes.numpy_dtype(elem_of(typ))
    if value.dtype != dtype:
        with np.errstate(all="ignore"):
            value = value.astype(dtype)
    return value
