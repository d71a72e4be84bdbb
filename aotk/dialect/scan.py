"""`aotk.scan`: a loop over the leading axis of sequences, with carried state.

Operands are `n_seq` sequences [T, ...] followed by the initial carries. The body block
takes one step of each sequence and the current carries, and ends in `aotk.yield` of the
new carries followed by the step's outputs. Results are the final carries followed by the
outputs stacked along a new leading axis [T, ...]. Backward iteration (`go_backwards`,
`foldr`, gradients) is a scan over reversed sequences. The body may use values defined
outside it (loop invariants such as weights). It lowers to one `scf.for`; the IR does not
grow with T.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Self

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from aotk import dtypes
from aotk.dialect.base import Shape, elem_of, fmt_shape, shape_of, tensor, types_compatible
from aotk.dialect.fused import YieldOp
from aotk.dialect.region_syntax import parse_region_op, print_region_op
from aotk.dialect.registry import BodyLowering, Kind, OpDef, register
from aotk.kernels.kernel import Buf


@irdl_op_definition
class ScanOp(IRDLOperation):
    """Run the body once per step of the sequences, threading the carries through."""

    name = "aotk.scan"
    operands_ = var_operand_def(TensorType)
    results_ = var_result_def(TensorType)
    n_seq = prop_def(IntegerAttr)
    body = region_def("single_block")
    traits = traits_def(Pure())

    def print(self, printer: Printer) -> None:
        print_region_op(printer, self, [("seqs", self.num_seq), ("carries", self.num_carries)])

    @classmethod
    def parse(cls, parser: Parser) -> Self:
        operands, ftype, body, attrs, sizes = parse_region_op(
            parser, ["seqs", "carries"], _block_arg_types
        )
        return cls.create(
            operands=operands,
            result_types=list(ftype.outputs.data),
            properties={"n_seq": IntegerAttr(sizes[0], i64)},
            regions=[body],
            attributes=attrs,
        )

    @property
    def num_seq(self) -> int:
        return self.n_seq.value.data

    @property
    def sequences(self):
        return self.operands[: self.num_seq]

    @property
    def inits(self):
        return self.operands[self.num_seq :]

    @property
    def num_carries(self) -> int:
        return len(self.operands) - self.num_seq

    def verify_(self) -> None:
        block = self.body.block
        seqs, inits = self.sequences, self.inits
        if not seqs:
            raise VerifyException("aotk.scan: needs at least one sequence")
        steps = {shape_of(s.type)[0] for s in seqs}
        if len(steps - {None}) > 1:
            raise VerifyException(
                f"aotk.scan: sequences have different lengths {sorted(steps - {None}, key=str)}"
            )
        expected = [tensor(elem_of(s.type), shape_of(s.type)[1:]) for s in seqs] + [
            i.type for i in inits
        ]
        if [a.type for a in block.args] != expected:
            raise VerifyException(
                "aotk.scan: block arguments must be one step of each sequence, then the carries"
            )
        yielded = block.last_op
        if not isinstance(yielded, YieldOp) or len(yielded.values) < len(inits):
            raise VerifyException(
                "aotk.scan: body must end with aotk.yield of the new carries, then the outputs"
            )
        for init, new in zip(inits, yielded.values, strict=False):
            if not types_compatible(init.type, new.type) and not types_compatible(
                new.type, init.type
            ):
                raise VerifyException(f"aotk.scan: carry {init.type} becomes {new.type}")
        outs = list(yielded.values)[len(inits) :]
        if len(self.results) != len(inits) + len(outs):
            raise VerifyException("aotk.scan: one result per carry and per output")
        for r, v in zip(list(self.results)[len(inits) :], outs, strict=True):
            want = tensor(elem_of(v.type), (shape_of(seqs[0].type)[0], *shape_of(v.type)))
            if not types_compatible(want, r.type):
                raise VerifyException(f"aotk.scan: stacked output {r.type} should be {want}")


def _block_arg_types(sizes: list[int], types: Sequence[Attribute]) -> list[Attribute]:
    """One step of each sequence, then the carries."""
    steps = [tensor(elem_of(t), shape_of(t)[1:]) for t in types[: sizes[0]]]
    return [*steps, *types[sizes[0] :]]


def result_types(
    sequences: list[TensorType], carries: list[TensorType], outputs: list[TensorType]
) -> list[TensorType]:
    """The result types of a scan: the carries, then the outputs with a leading T axis."""
    steps = shape_of(sequences[0])[0]
    stacked = [tensor(elem_of(o), (steps, *shape_of(o))) for o in outputs]
    return [*carries, *stacked]


def _infer(op: ScanOp, shapes: list[Shape], body_shapes: Callable) -> list[Shape]:
    seqs, carries = shapes[: op.num_seq], shapes[op.num_seq :]
    steps = {s[0] for s in seqs}
    if len(steps) > 1:
        raise ValueError(f"aotk.scan: sequences of different lengths {sorted(steps, key=str)}")
    produced = body_shapes([s[1:] for s in seqs] + carries)
    for old, new in zip(carries, produced, strict=False):
        if tuple(old) != tuple(new):
            raise ValueError(
                f"aotk.scan: a state of shape {fmt_shape(old)} became {fmt_shape(new)}"
            )
    step_count = seqs[0][0]
    return [*carries, *((step_count, *s) for s in produced[len(carries) :])]


def _numpy(op: ScanOp, values: list[np.ndarray], run_body: Callable) -> list[np.ndarray]:
    seqs, carries = values[: op.num_seq], values[op.num_seq :]
    steps = seqs[0].shape[0]
    if any(s.shape[0] != steps for s in seqs):
        raise ValueError(f"aotk.scan: sequences differ in length: {[s.shape[0] for s in seqs]}")
    outputs: list[list[np.ndarray]] = []
    for t in range(steps):
        produced = run_body([s[t] for s in seqs] + carries)
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


def _grad(op: ScanOp, cotangents: list, backprop: Callable, wanted: set) -> dict:
    from aotk.dialect.scan_bptt import scan_vjp

    return scan_vjp(op, cotangents, backprop, wanted)


def _lower(low: BodyLowering, op: ScanOp, targets: dict[SSAValue, Buf]) -> None:
    from aotk.dialect.scan_loop import lower_scan

    lower_scan(low, op, targets)


register(OpDef(ir=ScanOp, kind=Kind.REGION, infer=_infer, numpy=_numpy, lower=_lower, grad=_grad))
