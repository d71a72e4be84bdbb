"""Scalar rules for transcendental functions.

float32 (and float16, computed in float32) uses aotk's own polynomial kernels in
`vecmath`, which LLVM vectorizes; LLVM would leave `llvm.exp.f32` as one libm call per
element. float64 uses them too where they reach float64 accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import math
from xdsl.ir import Attribute, SSAValue

from aotk.kernels.scalar import ScalarRule, insert

_MATH_OPS = {
    "exp": math.ExpOp,
    "log": math.LogOp,
    "tanh": math.TanhOp,
    "pow": math.PowFOp,
    "sin": math.SinOp,
    "cos": math.CosOp,
    "erf": math.ErfOp,
}


def emit(name: str, b: Builder, *args: SSAValue) -> SSAValue:
    """Emit `name(args)`, preferring the vectorizable polynomial kernel."""
    try:
        from aotk.kernels import vecmath
    except ImportError:
        vecmath = None
    kernel = getattr(vecmath, name, None) if vecmath is not None else None
    if kernel is not None:
        return kernel(b, *args)
    return insert(b, _MATH_OPS[name](*args))


def rule(name: str) -> ScalarRule:
    """An elementwise lowering rule that applies transcendental `name`."""

    def lower(
        b: Builder, args: Sequence[SSAValue], elems: Sequence[Attribute], out: Attribute, **_: Any
    ) -> SSAValue:
        return emit(name, b, *args)

    return lower
