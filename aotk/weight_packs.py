"""Weights packed once for many calls of a K.function.

`plan` picks the matmuls that read a weight the function does not write: a captured
variable or constant, a static float32/float64 matrix at least a sliver wide, the
matmul's right operand as it is (not transposed). The JIT's module gets one more
argument per such weight, after the captures, its packed copy, and those matmuls become
`aotk.matmul_packed_weight`. The caller keeps the copies (`Packs`) and, before a call,
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
from aotk.dialect.linalg import MatMulOp
from aotk.dialect.matmul_packed_weight import MatMulPackedWeightOp, packable, packed_size
from aotk.kernels import library, matmul_prepacked


@dataclass(frozen=True)
class Pack:
    """One weight's packed copy: the capture it is made from, and its [K, N] shape."""

    capture: int
    kdim: int
    n: int
    dtype: str  # NumPy's name

    def elems(self) -> int:
        """Elements of the packed copy."""
        return packed_size(dtypes.element_type(self.dtype), self.n, self.kdim)

    def packer(self) -> str:
        """The symbol of the micro-kernel that packs it, `pack_rhs_<dtype>(packed, b, n, k)`."""
        name = matmul_prepacked.pack_name(dtypes.element_type(self.dtype), False)
        return library.lookup(name).symbol


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
        _add_pack(fn, index, [ops[at] for at in positions], n_inputs)
        for index, positions in readers.items()
    ]
    return jit, packs


def _body(module: ModuleOp) -> Block:
    fn = next(iter(module.ops))
    assert isinstance(fn, func.FuncOp)
    return fn.body.block


def _readers(
    block: Block, n_inputs: int, captures: Sequence[Any], updated: Sequence[Any]
) -> dict[int, list[int]]:
    """The positions in `block` of the matmuls that may read a packed weight, by the
    weight's argument."""
    written = {id(v) for v in updated}
    readers: dict[int, list[int]] = {}
    for at, op in enumerate(block.ops):
        index = _weight_index(op, block, n_inputs)
        if index is None:
            continue
        capture = captures[index - n_inputs]
        if id(capture) in written or getattr(capture, "kernel_updated", False):
            continue
        readers.setdefault(index, []).append(at)
    return readers


def _weight_index(op: Any, block: Block, n_inputs: int) -> int | None:
    """The argument index of the captured weight `op` multiplies by, if it qualifies."""
    if not isinstance(op, MatMulOp) or op.transpose_lhs or op.transpose_rhs:
        return None
    rhs = op.rhs
    if not isinstance(rhs, BlockArgument) or rhs.block is not block or rhs.index < n_inputs:
        return None
    if not packable(rhs.type) or elem_of(op.lhs.type) != elem_of(rhs.type):
        return None
    n = shape_of(rhs.type)[1]
    assert n is not None
    return rhs.index if n >= matmul_prepacked.sliver_width(elem_of(rhs.type)) else None


def _add_pack(fn: func.FuncOp, index: int, ops: list[Operation], n_in: int) -> Pack:
    """Append the packed copy of argument `index` to `fn` and point its matmuls at it."""
    block = fn.body.block
    weight = block.args[index]
    elem = elem_of(weight.type)
    kdim, n = shape_of(weight.type)
    assert kdim is not None and n is not None
    packed = block.insert_arg(tensor(elem, [packed_size(elem, n, kdim)]), len(block.args))
    for op in ops:
        assert isinstance(op, MatMulOp)
        new = MatMulPackedWeightOp.make([op.lhs, weight, packed], op.result.type)
        block.insert_op_before(new, op)
        op.result.replace_all_uses_with(new.result)
        block.erase_op(op)
    inputs = [a.type for a in block.args]
    fn.function_type = FunctionType.from_lists(inputs, list(fn.function_type.outputs.data))
    names = fn.attributes.get(metadata.ARG_NAMES)
    if isinstance(names, ArrayAttr):
        packed_name = StringAttr(f"{names.data[index].data}_packed")  # type: ignore[attr-defined]
        fn.attributes[metadata.ARG_NAMES] = ArrayAttr([*names.data, packed_name])
    return Pack(index - n_in, kdim, n, dtypes.name_of(elem))


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
