"""The op registry: one `OpDef` per aotk primitive.

The tracer, the interpreter, autodiff and the lowering all look an op up here by its IR
class; none of them switches on op types.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
from xdsl.irdl import IRDLOperation


class Kind(Enum):
    """How an op iterates, which decides fusion and the loop-nest builder."""

    ELEMENTWISE = "elementwise"  # lower is a scalar body; the loop nest is shared
    REDUCTION = "reduction"
    CONTRACTION = "contraction"
    VIEW = "view"  # no data moves: the result aliases its operand's buffer
    OPAQUE = "opaque"  # lower builds its own loop nest


InferRule = Callable[..., Any]
NumpyRule = Callable[..., np.ndarray]
GradRule = Callable[..., tuple[Any, ...]]
LowerRule = Callable[..., Any]
ShapeRule = Callable[..., list[Any]]


@dataclass(frozen=True)
class OpDef:
    """Everything aotk knows about one primitive."""

    ir: type[IRDLOperation]
    kind: Kind
    infer: InferRule  # (operand types..., **attrs) -> result TensorType; raises on bad input
    numpy: NumpyRule  # (arrays..., **attrs) -> array: the oracle
    lower: (
        LowerRule | None
    )  # None only for VIEW ops; ELEMENTWISE: scalar body; else (kernel, out, *ins, **attrs) -> None
    grad: GradRule | None = None  # (g, y, *xs, **attrs) -> one cotangent or None per input
    # (kernel, ins, result_type, **attrs) -> result dims; being replaced by `shape`
    dims: Callable[..., Any] | None = None
    # (arith, operand dims, **attrs) -> result dims, on `kernels.dim_arith.DimArith`: the
    # op's one shape rule. `infer` runs it on STATIC dims; the lowering on a Kernel's.
    shape: ShapeRule | None = None
    # (kernel, ins, result_type, **attrs) -> elements of scratch memory the lowering may use
    # while it runs (passed as `scratch=`); 0 for none. Counted in the workspace size.
    scratch: Callable[..., Any] | None = None


REGISTRY: dict[type[IRDLOperation], OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    """Add `opdef` to the registry; each IR class is registered once."""
    if opdef.ir in REGISTRY:
        raise ValueError(f"{opdef.ir.name} is registered twice")
    REGISTRY[opdef.ir] = opdef
    return opdef


def lookup(op: IRDLOperation | type[IRDLOperation]) -> OpDef:
    """Return the OpDef of an op or op class."""
    cls = op if isinstance(op, type) else type(op)
    try:
        return REGISTRY[cls]
    except KeyError:
        raise KeyError(f"{cls.name} is not an aotk primitive") from None
