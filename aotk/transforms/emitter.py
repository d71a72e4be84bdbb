"""`Emitter`: builds aotk ops in front of one being rewritten, for graph rewrites."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

from aotk.dialect.base import AotkOp
from aotk.dialect.registry import build


class Emitter:
    """Builds aotk ops before `before`, their result types inferred."""

    def __init__(self, rewriter: PatternRewriter, before: Operation) -> None:
        self.rewriter, self.before = rewriter, before

    def __call__(self, cls: type[AotkOp], operands: Sequence[SSAValue], **attrs: Any) -> SSAValue:
        new = build(cls, operands, **attrs)
        self.rewriter.insert(new, InsertPoint.before(self.before))
        return new.results[0]
