"""Ops with effects visible to the user: printing a tensor from compiled code.

`aotk.print_tensor` returns its operand unchanged and prints `message` and the values each
time the kernel runs, through four runtime calls (runtime/aotk_print.c). In-process, they
print `print(message, array)`'s line to Python's sys.stdout (NumPy's format, as Keras's
Theano backend); an exported library prints TensorFlow's tf.Print layout without its
summarizing, `message[[1 2][3 4]]` (floats as C's %g, bools as 1 and 0), to C's stdout. It
has an effect, so it is not Pure: CSE never merges two prints, and it runs whenever its
result is used.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IntegerAttr, StringAttr, TensorType, f64, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def

from aotk import dtypes
from aotk.dialect.base import AotkOp, elem_of, shape_of, tensor
from aotk.dialect.registry import Kind, OpDef, register
from aotk.kernels import printf
from aotk.kernels.dim_arith import STATIC, Dim, DimArith
from aotk.kernels.kernel import Buf, Kernel


@irdl_op_definition
class PrintTensorOp(AotkOp):
    """x unchanged; prints `message` and the values of x when the kernel runs."""

    name = "aotk.print_tensor"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    message = prop_def(StringAttr)


def _infer_print(x: Attribute, **_: Any) -> Attribute:
    return tensor(elem_of(x), print_shape(STATIC, [shape_of(x)]))  # raise on non-tensors


def print_shape(a: DimArith, dims: Sequence[Sequence[Dim]], **_: Any) -> list[Dim]:
    return list(dims[0])


def format_value(v: Any) -> str:
    """One element as an exported library prints it."""
    if isinstance(v, float | np.floating):
        return f"{float(v):g}"
    return str(int(v))


def format_tensor(x: np.ndarray, message: str) -> str:
    """The line an exported library writes for x."""
    if x.ndim == 0:
        return f"{message}{format_value(x.item())}\n"
    if x.size == 0:
        return f"{message}[]\n"
    blocks = [int(np.prod(x.shape[a:])) for a in range(x.ndim)]
    parts = [message]
    for i, v in enumerate(x.reshape(-1)):
        parts.append("[" * sum(i % s == 0 for s in blocks) + format_value(v))
        closes = sum((i + 1) % s == 0 for s in blocks)
        parts.append("]" * closes if closes else " ")
    return "".join(parts) + "\n"


def _numpy_print(x: np.ndarray, *, message: str, **_: Any) -> np.ndarray:
    print(message, x, file=sys.stdout, flush=True)  # as in-process kernels print
    return x.copy()


def _promote(b: Builder, v: SSAValue, elem: Attribute) -> SSAValue:
    """A loaded element as printf's variadic arguments take it: double or i64."""
    if dtypes.is_float(elem):
        return v if v.type == f64 else b.insert(arith.ExtFOp(v, f64)).result
    if dtypes.byte_size(elem) == 8:
        return v
    unsigned = dtypes.is_unsigned(elem) or dtypes.is_bool(elem)
    op = arith.ExtUIOp(v, i64) if unsigned else arith.ExtSIOp(v, i64)
    return b.insert(op).result


def _lower_print(k: Kernel, out: Buf, x: Buf, *, message: str) -> None:
    n = k.product(x.dims)
    with k.loop(n) as i:
        k.store_flat(out, i, k.load_flat(x, i))
    dtype = dtypes.name_of(x.elem)
    s = printf.CStrings(k.b, [message, dtype])
    rank = k.b.insert(arith.ConstantOp(IntegerAttr(x.rank, i64))).result
    printf.call(k.b, "aotk_print_begin", s.ptrs[message], s.ptrs[dtype], rank)
    for d in x.dims:
        printf.call(k.b, "aotk_print_dim", k.b.insert(arith.IndexCastOp(k.index(d), i64)).result)
    element = "aotk_print_f64" if dtypes.is_float(x.elem) else "aotk_print_i64"
    with k.loop(n) as i:
        printf.call(k.b, element, _promote(k.b, k.load_flat(x, i), x.elem))
    printf.call(k.b, "aotk_print_end")


register(
    OpDef(
        ir=PrintTensorOp,
        kind=Kind.OPAQUE,
        infer=_infer_print,
        numpy=_numpy_print,
        lower=_lower_print,
        grad=lambda g, y, x, **_: (g,),
        shape=print_shape,
    )
)

__all__ = ["PrintTensorOp", "format_tensor"]
