"""The NumPy oracle: run aotk IR (stages trace and graph) op by op with each OpDef.numpy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from aotk import dtypes
from aotk.dialect.base import AotkOp, elem_of
from aotk.dialect.registry import Kind, is_registered, lookup


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
        if op.has_trait(IsTerminator):
            return [env[v] for v in op.operands]
        if not is_registered(op):
            raise ValueError(
                f"interp: cannot run {op.name}; interpret before convert-aotk-to-loops"
            )
        results = _run_op(op, [env[v] for v in op.operands], env)
        for r, value in zip(op.results, results, strict=True):
            env[r] = _as_type(np.asarray(value), r.type)
    raise ValueError("interp: block has no terminator")


def _run_op(
    op: Operation, inputs: list[np.ndarray], env: dict[SSAValue, np.ndarray]
) -> list[np.ndarray]:
    opdef = lookup(op)  # type: ignore[arg-type]
    if opdef.kind is Kind.REGION:
        body = op.regions[0].block
        return opdef.numpy(op, inputs, lambda args: run_block(body, args, env))
    assert isinstance(op, AotkOp)
    return [opdef.numpy(*inputs, **op.attrs())]


def _as_type(value: np.ndarray, typ) -> np.ndarray:
    dtype = dtypes.numpy_dtype(elem_of(typ))
    if value.dtype != dtype:
        with np.errstate(all="ignore"):
            value = value.astype(dtype)
    return value
