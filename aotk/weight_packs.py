"""Weights packed once for many calls of a K.function.

`plan` picks the ops that read a weight the function does not write, a captured
variable or constant: matmuls whose right operand it is as it is (not transposed), a
static float32/float64 matrix at least a sliver wide, and convs whose kernel it is that
take Winograd's path (`kernels.conv_winograd`). The JIT's module gets one more argument
per such weight, after the captures, its packed copy: slivers for the matmuls, which
become `aotk.matmul_packed_weight`, the kernel in Winograd's points for the convs
(`kernels.winograd_weight`), which take it as `packed` (a plain `aotk.conv` becomes an
`aotk.conv_fused` of no epilogue). The caller keeps the copies (`Packs`) and, before a call,
packs again each one whose weight's `version` moved since: `K.set_value` bumps it, and
so does every call of a function that updates the variable (`runtime.bump_version`).
Pickles keep the traced module and rebuild the copies; an exported model (`aotk.export`)
takes the JIT's code, and its C runtime packs the copies when the model is created and
again in `aotk_model_set_variable`.

Writes through anything else go unseen: a variable's `storage` array is aotk's, not the
user's (`K.get_value` returns a copy). A call that runs while another thread sets a
weight it reads may see either value, as it would read the weight itself half-written.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, FunctionType, ModuleOp, StringAttr
from xdsl.ir import Block, BlockArgument, Operation

from aotk import dtypes, runtime
from aotk.dialect import metadata
from aotk.dialect.base import elem_of, shape_of, tensor
from aotk.dialect.conv import ConvOp
from aotk.dialect.conv_fused import ConvFusedOp, EpilogueConvOp, identity_body
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.matmul_packed_weight import MatMulPackedWeightOp, packable, packed_size
from aotk.kernels import conv_winograd, library, matmul_prepacked, winograd_weight

SLIVERS = ""  # a Pack's `transform` for a matmul's weight


@dataclass(frozen=True)
class Pack:
    """One weight's packed copy: the capture it is made from, its [K, N] shape (a conv
    kernel's input and output channels), and how it is packed: in slivers, or by a
    Winograd transform (`winograd_weight.LAYOUTS`' key)."""

    capture: int
    kdim: int
    n: int
    dtype: str  # NumPy's name
    transform: str = SLIVERS

    def dims(self) -> list[int]:
        """The packed copy's dims: slivers' elements, or U's (`Layout.dims`)."""
        if self.transform != SLIVERS:
            layout = winograd_weight.LAYOUTS[self.transform]
            return list(layout.dims(dtypes.element_type(self.dtype), (self.kdim, self.n)))
        return [packed_size(dtypes.element_type(self.dtype), self.n, self.kdim)]

    def elems(self) -> int:
        """Elements of the packed copy."""
        return math.prod(self.dims())

    def packer(self) -> str:
        """The symbol of the micro-kernel that packs it, `(packed, weight, n, k)`:
        `pack_rhs_<dtype>` or `winograd_weight_<transform>_<dtype>`."""
        elem = dtypes.element_type(self.dtype)
        if self.transform != SLIVERS:
            layout = winograd_weight.LAYOUTS[self.transform]
            return library.lookup(winograd_weight.name(layout, elem)).symbol
        return library.lookup(matmul_prepacked.pack_name(elem, False)).symbol


def plan(
    module: ModuleOp, n_inputs: int, captures: Sequence[Any], updated: Sequence[Any]
) -> tuple[ModuleOp, list[Pack]]:
    """The module the JIT compiles (`module` itself when no weight qualifies, or the
    environment says AOTK_WEIGHT_PACKS=0; else a rewritten copy) and the packs its
    extra arguments take, in order."""
    if os.environ.get("AOTK_WEIGHT_PACKS", "1") in ("0", "off", "false"):
        return module, []
    readers = _readers(_body(module), n_inputs, captures, updated)
    if not readers:
        return module, []  # nothing to rewrite: no copy of the module
    jit = module.clone()
    fn = next(iter(jit.ops))
    assert isinstance(fn, func.FuncOp)
    ops = list(fn.body.block.ops)  # the copy's ops, at the original's positions
    packs = [
        _add_pack(fn, reader, [ops[at] for at in positions], n_inputs)
        for reader, positions in readers.items()
    ]
    return jit, packs


def _body(module: ModuleOp) -> Block:
    fn = next(iter(module.ops))
    assert isinstance(fn, func.FuncOp)
    return fn.body.block


Reader = tuple[int, str]  # a packed weight's argument, and its Pack's transform


def _readers(
    block: Block, n_inputs: int, captures: Sequence[Any], updated: Sequence[Any]
) -> dict[Reader, list[int]]:
    """The positions in `block` of the ops that may read a packed weight, by the
    weight's argument and packing."""
    written = {id(v) for v in updated}
    readers: dict[Reader, list[int]] = {}
    for at, op in enumerate(block.ops):
        reader = _matmul_weight(op, block, n_inputs) or _conv_weight(op, block, n_inputs)
        if reader is None:
            continue
        capture = captures[reader[0] - n_inputs]
        if id(capture) in written or getattr(capture, "kernel_updated", False):
            continue
        readers.setdefault(reader, []).append(at)
    return readers


def _captured(value: Any, block: Block, n_inputs: int) -> BlockArgument | None:
    """`value` if it is an argument of `block` after its inputs (a capture), else None."""
    if isinstance(value, BlockArgument) and value.block is block and value.index >= n_inputs:
        return value
    return None


def _matmul_weight(op: Any, block: Block, n_inputs: int) -> Reader | None:
    """The captured weight `op` multiplies by, if it qualifies."""
    if not isinstance(op, MatMulOp) or op.transpose_lhs or op.transpose_rhs:
        return None
    rhs = _captured(op.rhs, block, n_inputs)
    if rhs is None or not packable(rhs.type):
        return None
    if elem_of(op.lhs.type) != elem_of(rhs.type):
        return None
    n = shape_of(rhs.type)[1]
    assert n is not None
    return (rhs.index, SLIVERS) if n >= matmul_prepacked.sliver_width(elem_of(rhs.type)) else None


def _conv_weight(op: Any, block: Block, n_inputs: int) -> Reader | None:
    """The captured kernel of a conv on Winograd's path, and its transform."""
    if isinstance(op, EpilogueConvOp) and op.packed is None:
        attrs, pooling = op.conv_attrs(), op.pooling()
    elif isinstance(op, ConvOp):
        attrs, pooling = op.attrs(), None
    else:
        return None
    kernel = _captured(op.kernel, block, n_inputs)
    if kernel is None:
        return None
    elem, dims = elem_of(kernel.type), shape_of(kernel.type)
    image = shape_of(op.x.type)[1:-1]
    layout = conv_winograd.weight_layout(elem, dims, attrs, pooling, image)
    return None if layout is None else (kernel.index, winograd_weight.key_of(layout))


def _add_pack(fn: func.FuncOp, reader: Reader, ops: list[Operation], n_in: int) -> Pack:
    """Append the packed copy of the reader's argument to `fn` and point its ops at it."""
    block = fn.body.block
    index, transform = reader
    weight = block.args[index]
    elem, dims = elem_of(weight.type), shape_of(weight.type)
    kdim, n = dims[-2:]
    assert kdim is not None and n is not None
    pack = Pack(index - n_in, kdim, n, dtypes.name_of(elem), transform)
    packed = block.insert_arg(tensor(elem, pack.dims()), len(block.args))
    for op in ops:
        new = _reading(op, weight, packed)
        block.insert_op_before(new, op)
        op.results[0].replace_all_uses_with(new.results[0])
        block.erase_op(op)
    inputs = [a.type for a in block.args]
    fn.function_type = FunctionType.from_lists(inputs, list(fn.function_type.outputs.data))
    names = fn.attributes.get(metadata.ARG_NAMES)
    if isinstance(names, ArrayAttr):
        packed_name = StringAttr(f"{names.data[index].data}_packed")  # type: ignore[attr-defined]
        fn.attributes[metadata.ARG_NAMES] = ArrayAttr([*names.data, packed_name])
    return pack


def _reading(op: Operation, weight: BlockArgument, packed: BlockArgument) -> Operation:
    """`op` as it reads the packed copy `packed` of `weight`."""
    if isinstance(op, MatMulOp):
        return MatMulPackedWeightOp.make([op.lhs, weight, packed], op.result.type)
    if isinstance(op, ConvOp):
        body = identity_body(op.result.type)
        return ConvFusedOp.assemble((op.x, weight, packed, []), op.result.type, op.properties, body)
    assert isinstance(op, EpilogueConvOp)
    operands = (op.x, weight, packed, list(op.extras))
    return type(op).assemble(operands, op.result.type, op.window_properties(), op.body.clone())


class Packs:
    """The packed copies one compiled function reads, packed again when stale."""

    def __init__(self, packs: Sequence[Pack], captures: Sequence[Any]) -> None:
        self.packs = list(packs)
        self._holders = [captures[p.capture] for p in self.packs]
        self._arrays = [runtime.aligned_empty((p.elems(),), p.dtype) for p in self.packs]
        self.addresses = [runtime.address(a) for a in self._arrays]
        self._seen: list[tuple[int, int] | None] = [None] * len(self.packs)
        self._pack_fns = [_callable(p.packer()) for p in self.packs]
        self._lock = threading.Lock()
        self._writes = -1  # `runtime.writes()` when every copy was last found current

    def refresh(self) -> None:
        """Pack each copy whose weight changed (version or array) since it was packed;
        nothing to look at when no variable was written since the last call."""
        writes = runtime.writes()
        if writes == self._writes:
            return
        for i, holder in enumerate(self._holders):
            state = (getattr(holder, "version", 0), id(holder.storage))
            if self._seen[i] != state:
                with self._lock:
                    if self._seen[i] != state:
                        p = self.packs[i]
                        source = runtime.address(holder.storage)
                        self._pack_fns[i](self.addresses[i], source, p.n, p.kdim)
                        self._seen[i] = state
        self._writes = writes


def _callable(symbol: str) -> Any:
    """A micro-kernel as a Python callable."""
    from aotk import micro_kernels

    return micro_kernels.function(symbol)
