"""`aotk.export(..., input_shapes=...)`: dynamic input dims the caller fixes.

A fixed dim is no longer probed (`dims`): the library accepts exactly its size, and its
typed `_run` entry point takes no argument for it. This is how a Keras training step with
a loss of the user's own exports: Keras leaves that loss's targets `(None, None)`, a
shape it never checks, so only the user can say what the library should take.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

Shape = tuple[int | None, ...]


def fixed(fn: Any, shapes: Sequence[Shape], input_shapes: Any, where: str) -> list[Shape]:
    """`shapes` (the function's inputs', perhaps narrowed already) with the dims that
    `input_shapes` (input name -> shape, None for a dim left dynamic) fixes."""
    if not isinstance(input_shapes, Mapping):
        raise TypeError(
            f"{where}: input_shapes must be a dict of input name -> shape, "
            f"got {type(input_shapes).__name__}"
        )
    names = list(fn._inputs.names)
    out = [tuple(s) for s in shapes]
    for name, shape in input_shapes.items():
        if name not in names:
            raise ValueError(
                f"{where}: input_shapes names {name!r}, which is not an input; "
                f"the inputs are {', '.join(map(repr, names))}"
            )
        k = names.index(name)
        out[k] = _one(out[k], shape, f"{where}: input_shapes[{name!r}]")
    return out


def _one(shape: Shape, given_shape: Any, what: str) -> Shape:
    """`shape` with the dims `given_shape` gives; each must agree with a known size."""
    if not isinstance(given_shape, Sequence) or isinstance(given_shape, str | bytes):
        raise TypeError(f"{what} must be a tuple of sizes and None, got {given_shape!r}")
    for d in given_shape:
        if d is not None and (not isinstance(d, int) or isinstance(d, bool) or d < 1):
            raise TypeError(
                f"{what} must be a tuple of positive ints and None, got {given_shape!r}"
            )
    if len(given_shape) != len(shape):
        raise ValueError(
            f"{what} has rank {len(given_shape)}, expected {len(shape)} (the input is {shape})"
        )
    for a, (known, size) in enumerate(zip(shape, given_shape, strict=True)):
        if known is not None and size is not None and size != known:
            raise ValueError(f"{what} gives dim {a} size {size}, but the input is {shape}")
    return tuple(
        known if size is None else size for known, size in zip(shape, given_shape, strict=True)
    )
