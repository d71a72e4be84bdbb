"""Call-time checks of a compiled function's arguments, with messages naming the input.

Also re-runs every op's `infer` rule on the concrete input shapes (once per distinct
shape signature), so a dynamic dim that makes a broadcast or reshape impossible is a
clear ValueError before any native code runs, never an out-of-bounds access.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.traits import IsTerminator

from aotk import gc_pause
from aotk.dialect.base import AotkOp, Shape, elem_of, fmt_shape, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, lookup


def coerce_input(value: object, name: str, shape: Shape, dtype: np.dtype, where: str) -> np.ndarray:
    """Convert one argument to an array of `dtype` and check it against `shape`."""
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if dtype == np.bool_ and array.dtype.kind in "iuf" and np.isin(array, (0, 1)).all():
        array = array.astype(bool)  # flags such as the learning phase are fed as 0 or 1 (1.)
    if array.dtype != dtype:
        if array.dtype == object or not _castable(array.dtype, dtype):
            raise TypeError(
                f"{where}: input '{name}' expects dtype {dtype.name}, got {array.dtype.name}"
            )
        _check_range(array, dtype, f"{where}: input '{name}'")
        array = array.astype(dtype)
    if array.ndim != len(shape):
        raise ValueError(
            f"{where}: input '{name}' expects rank {len(shape)} shape {fmt_shape(shape)}, "
            f"got rank {array.ndim} shape {fmt_shape(array.shape)}"
        )
    for axis, (want, got) in enumerate(zip(shape, array.shape, strict=True)):
        if want is not None and want != got:
            raise ValueError(
                f"{where}: input '{name}' expects shape {fmt_shape(shape)}, "
                f"got {fmt_shape(array.shape)} (axis {axis})"
            )
    return array


def _castable(source: np.dtype, target: np.dtype) -> bool:
    """Same kind (float64 to float32, say), or integers to integers of any width, whose
    values `_check_range` then checks."""
    both_int = source.kind in "iu" and target.kind in "iu"
    return both_int or np.can_cast(source, target, casting="same_kind")


def _check_range(array: np.ndarray, dtype: np.dtype, what: str) -> None:
    """Integers going to a narrower integer dtype must fit it: never wrap around."""
    if array.dtype.kind not in "iu" or dtype.kind not in "iu" or array.size == 0:
        return
    if np.can_cast(array.dtype, dtype, casting="safe"):
        return
    info = np.iinfo(dtype)
    low, high = array.min(), array.max()
    if low < info.min or high > info.max:
        bad = low if low < info.min else high
        raise ValueError(
            f"{what} expects dtype {dtype.name}, got the value {bad} (from {array.dtype.name}), "
            f"outside its range [{info.min}, {info.max}]"
        )


class ShapeChecker:
    """Concrete output shapes of a traced function, checked per input shape signature."""

    def __init__(self, module: ModuleOp, where: str):
        fn = next(op for op in module.ops if isinstance(op, func.FuncOp))
        self.fn, self.where = fn, where
        self._cache: dict[tuple[tuple[int, ...], ...], list[tuple[int, ...]]] = {}
        self._plans: dict[Operation, _Plan] = {}  # what each op's rule needs, shapes aside

    def output_shapes(self, shapes: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
        key = tuple(shapes)
        if key not in self._cache:
            with gc_pause.paused():  # a type per op of the module: see gc_pause
                self._cache[key] = self._infer(shapes)
        return self._cache[key]

    def _infer(self, shapes: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
        try:
            shapes_out = _infer_block(self.fn.body.block, list(shapes), {}, self._plans)
            return [tuple(int(d or 0) for d in s) for s in shapes_out]
        except (ValueError, TypeError) as err:
            given = ", ".join(fmt_shape(s) for s in shapes)
            raise ValueError(f"{self.where}: inputs of shapes {given} do not fit: {err}") from None


# an op's rule, its attributes and its operands' element types: the same on every probe
# of a shape signature (an export probes a ResNet50 step's 8,000 ops about six times)
_Plan = tuple[OpDef, dict[str, Any], list[Attribute]]


def _infer_block(
    block: Block, shapes: list[Shape], outer: dict[SSAValue, Shape], plans: dict[Operation, _Plan]
) -> list[Shape]:
    """Concrete shapes of what `block` returns or yields, given its arguments' shapes."""
    env: dict[SSAValue, Shape] = dict(outer)
    env.update(zip(block.args, shapes, strict=True))
    last = block.last_op
    for op in block.ops:
        if op is last and op.has_trait(IsTerminator):
            return [tuple(env[v]) for v in op.operands]
        try:
            results = _infer_op(op, [env[v] for v in op.operands], env, plans)
        except (ValueError, TypeError) as err:
            raise type(err)(f"{op.name}: {err}") from None
        env.update(zip(op.results, results, strict=True))
    raise AssertionError("block without terminator")


def _infer_op(
    op: Operation, shapes: list[Shape], env: dict[SSAValue, Shape], plans: dict[Operation, _Plan]
) -> list[Shape]:
    plan = plans.get(op)
    if plan is None:
        opdef = lookup(op)  # type: ignore[arg-type]
        attrs = op.attrs() if isinstance(op, AotkOp) and opdef.kind is not Kind.REGION else {}
        plan = plans[op] = (opdef, attrs, [elem_of(v.type) for v in op.operands])
    opdef, attrs, elems = plan
    if opdef.kind is Kind.REGION:
        body = op.regions[0].block
        return opdef.infer(op, shapes, lambda args: _infer_block(body, args, env, plans))
    types = [tensor(elem, s) for elem, s in zip(elems, shapes, strict=True)]
    return [shape_of(opdef.infer(*types, **attrs))]


def _resolve(inferred: Shape, declared: Shape) -> Shape:
    if None in inferred:
        raise AssertionError(
            f"concrete shape inference left a dynamic dim: {inferred} vs {declared}"
        )
    return inferred
